"""Example dg project: dagster_privacy's PrivacyChecksComponent declared in defs.yaml."""
