"""A monthly-partitioned release (issue 34 part 3): the synthetic asset is partitioned by month and
stored by its IO manager, the real and holdout tables are not; each month's run evaluates that month
(the partition in every result's metadata), a leaky month is blocked — its downstream publication does
not run — and the other months publish."""

from __future__ import annotations

import dagster as dg
import polars as pl

from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import build_privacy_checks
from dagster_privacy.pipeline.checks import PARTITION

POLICY = {"metrics": {"crp": {"threshold": 0.05}, "dcr": {"threshold": 0.95, "severity": "WARN"}}}
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
MONTHS = dg.MonthlyPartitionsDefinition(start_date="2026-08-01", end_date="2026-11-01")


def test_a_leaky_month_is_blocked_and_the_others_publish(tmp_path) -> None:
    df = load_demo().head(2100)
    real, holdout = df[:600], df[600:900]
    clean = {"2026-08-01": df[900:1200], "2026-10-01": df[1500:1800]}
    leaky = pl.concat([df[1200:1350], real[:150]])  # September copies 150 training rows

    @dg.asset
    def real_table() -> pl.DataFrame:
        return real

    @dg.asset
    def holdout_table() -> pl.DataFrame:
        return holdout

    @dg.asset(partitions_def=MONTHS)
    def synthetic_table(context) -> pl.DataFrame:  # noqa: ANN001
        return clean.get(context.partition_key, leaky)

    @dg.asset(partitions_def=MONTHS, deps=[synthetic_table])
    def published_month() -> None:  # runs only when the month's blocking checks passed
        ...

    storage = {"io_manager": dg.FilesystemIOManager(base_dir=str(tmp_path / "storage"))}
    checks = build_privacy_checks(
        asset=synthetic_table,
        policy=POLICY,
        real_asset=real_table,
        holdout_asset=holdout_table,
        release_resource_key=None,
    )
    monthly = dg.define_asset_job(
        "monthly", selection=dg.AssetSelection.assets(synthetic_table, published_month)
    )
    defs = dg.Definitions(
        assets=[real_table, holdout_table, synthetic_table, published_month],
        asset_checks=checks,
        jobs=[monthly],
        resources=storage,
    )
    outcome = {}
    with dg.instance_for_test() as instance:
        dg.materialize([real_table, holdout_table], instance=instance, resources=storage)
        job = defs.resolve_job_def("monthly")
        for month in MONTHS.get_partition_keys():
            res = job.execute_in_process(
                instance=instance, partition_key=month, raise_on_error=False, run_config=QUIET
            )
            failures = [
                e.event_specific_data.error.message[:300] for e in res.all_events if e.is_step_failure
            ]
            evals = {e.check_name: e for e in res.get_asset_check_evaluations()}
            assert evals, failures
            assert {e.metadata[PARTITION].value for e in evals.values()} == {month}
            mats = {e.asset_key.to_user_string() for e in res.get_asset_materialization_events()}
            outcome[month] = (evals["privacy_risk_membership"].passed, "published_month" in mats)
        published = instance.get_materialized_partitions(dg.AssetKey("published_month"))
    assert outcome == {"2026-08-01": (True, True), "2026-09-01": (False, False), "2026-10-01": (True, True)}
    assert published == {"2026-08-01", "2026-10-01"}
