"""The reference code location's checks, built from the default release policy (policy.yaml).

``DAGSTER_PRIVACY_POLICY`` overrides the policy; ``DAGSTER_PRIVACY_DATABASE`` and
``DAGSTER_PRIVACY_PUBLISH_TARGET`` say where the tables are and where releases go.
"""

from pathlib import Path

import dagster as dg

from dagster_privacy.pipeline import ReleaseSettings, build_release_checks

DEFAULT_POLICY = Path(__file__).with_name("policy.yaml")


def build(settings: ReleaseSettings) -> list[dg.AssetChecksDefinition]:
    return build_release_checks(settings=settings)
