"""A monthly-partitioned release (issue 34 part 3): the synthetic asset is partitioned by month and
stored by its IO manager, the real and holdout tables are not; each month's run evaluates that month
(the partition in every result's metadata), a leaky month is blocked — its publication does not run,
and a run of the publication alone is refused on that month's checks — and the other months publish,
one file each, named by a release id that names the month."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pyarrow.parquet as pq

from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import PublishTarget, build_privacy_checks, build_published_release
from dagster_privacy.pipeline.checks import PARTITION
from dagster_privacy.tables import fingerprint

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

    published_month = build_published_release(  # re-verifies the month's checks on the month's content
        synthetic_asset=synthetic_table,
        required_checks=["privacy_risk_membership"],
        real_asset=real_table,
        holdout_asset=holdout_table,
        key="published_month",
    )
    assert published_month.partitions_def == MONTHS
    target = tmp_path / "published"
    storage = {
        "io_manager": dg.FilesystemIOManager(base_dir=str(tmp_path / "storage")),
        "publish_target": PublishTarget(path=str(target)),
    }
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
        alone = defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=instance,
            partition_key="2026-09-01",
            asset_selection=[dg.AssetKey("published_month")],
            raise_on_error=False,
            run_config=QUIET,
        )
        refused = [e.event_specific_data.error.message for e in alone.all_events if e.is_step_failure]
    assert outcome == {"2026-08-01": (True, True), "2026-09-01": (False, False), "2026-10-01": (True, True)}
    assert published == {"2026-08-01", "2026-10-01"}
    assert any("privacy_risk_membership: its latest evaluation failed" in m for m in refused), refused
    files = sorted(target.glob("*.parquet"))
    assert len(files) == 2
    written = {fingerprint(pl.from_arrow(pq.read_table(f))) for f in files}
    assert written == {fingerprint(clean["2026-08-01"]), fingerprint(clean["2026-10-01"])}
    names = " ".join(f.name for f in files)
    assert "2026-08-01" in names and "2026-10-01" in names and "2026-09-01" not in names
