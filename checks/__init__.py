"""The reference code location's checks, built from the default release policy (policy.yaml)."""
