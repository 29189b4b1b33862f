"""The reference code location's assets: real_table, holdout_table, synthetic_table, published_release."""

from checks import settings
from dagster_privacy.pipeline import build_release_assets

assets = build_release_assets(settings=settings)
