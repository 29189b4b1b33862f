"""The reference code location's assets: real_table, holdout_table, synthetic_table, published_release."""

import dagster as dg

from dagster_privacy.pipeline import ReleaseSettings, build_release_assets


def build(settings: ReleaseSettings) -> list[dg.AssetsDefinition]:
    return build_release_assets(settings=settings)
