"""A monthly-partitioned release for tests (issue 34 part 3): real and holdout tables unpartitioned, the
synthetic table partitioned by month and stored by Dagster's filesystem IO manager, its partitioned
privacy checks, and its publication into a directory target. August and October are clean; September
copies 150 training rows. ``build_defs(work)`` keeps storage and publications under ``work``; the
webserver test loads it as a code location file (``defs.py`` beside them)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
from gates import covering

from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import PublishTarget, build_privacy_checks, build_published_release

POLICY = covering(
    {
        "metrics": {
            "crp": {"threshold": 0.05, "severity": "WARN"},
            "dcr": {"threshold": 0.95, "severity": "WARN"},
        }
    }
)
MONTHS = dg.MonthlyPartitionsDefinition(start_date="2026-08-01", end_date="2026-11-01")
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def frames() -> dict[str, pl.DataFrame]:
    df = load_demo().head(2100)
    real = df[:600]
    return {
        "real": real,
        "holdout": df[600:900],
        "2026-08-01": df[900:1200],
        "2026-09-01": pl.concat([df[1200:1350], real[:150]]),  # leaky
        "2026-10-01": df[1500:1800],
    }


def build_defs(work: Path) -> dg.Definitions:
    data = frames()

    @dg.asset
    def real_table() -> pl.DataFrame:
        return data["real"]

    @dg.asset
    def holdout_table() -> pl.DataFrame:
        return data["holdout"]

    @dg.asset(partitions_def=MONTHS)
    def synthetic_table(context) -> pl.DataFrame:  # noqa: ANN001
        return data[context.partition_key]

    published_month = build_published_release(  # re-verifies the month's checks on the month's content
        synthetic_asset=synthetic_table,
        required_checks=["privacy_risk_membership"],
        real_asset=real_table,
        holdout_asset=holdout_table,
        key="published_month",
    )
    checks = build_privacy_checks(asset=synthetic_table, policy=POLICY, real_asset=real_table,
                                  holdout_asset=holdout_table, release_resource_key=None)  # fmt: skip
    monthly = dg.define_asset_job(
        "monthly", selection=dg.AssetSelection.assets(synthetic_table, published_month)
    )
    return dg.Definitions(
        assets=[real_table, holdout_table, synthetic_table, published_month],
        asset_checks=checks,
        jobs=[monthly],
        resources={
            "io_manager": dg.FilesystemIOManager(base_dir=str(work / "storage")),
            "publish_target": PublishTarget(path=str(work / "published")),
        },
    )


def run_months(defs: dg.Definitions, instance: dg.DagsterInstance) -> dict[str, dg.ExecuteInProcessResult]:
    """Materialize real and holdout, then the monthly job for every month."""
    base = [dg.AssetKey("real_table"), dg.AssetKey("holdout_table")]
    defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=base, run_config=QUIET
    )
    job = defs.resolve_job_def("monthly")
    return {
        month: job.execute_in_process(
            instance=instance, partition_key=month, raise_on_error=False, run_config=QUIET
        )
        for month in MONTHS.get_partition_keys()
    }
