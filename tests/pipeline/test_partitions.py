"""A monthly-partitioned release (issue 34 part 3): the synthetic asset is partitioned by month and
stored by its IO manager, the real and holdout tables are not; each month's run evaluates that month
(the partition in every result's metadata), a leaky month is blocked — its publication does not run,
and a run of the publication alone is refused on that month's checks — and the other months publish,
one file each, named by a release id that names the month."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pyarrow.parquet as pq
import pytest
from monthly_release import MONTHS, POLICY, QUIET, build_defs, frames, run_months

from dagster_privacy.data.tables import fingerprint
from dagster_privacy.pipeline import PublishTarget, build_privacy_checks, build_published_release
from dagster_privacy.pipeline.checks import PARTITION


def test_a_leaky_month_is_blocked_and_the_others_publish(tmp_path) -> None:
    defs = build_defs(tmp_path)
    published_month = defs.resolve_assets_def("published_month")
    assert published_month.partitions_def == MONTHS
    target = tmp_path / "published"
    outcome = {}
    with dg.instance_for_test() as instance:
        for month, res in run_months(defs, instance).items():
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
    data = frames()
    assert written == {fingerprint(data["2026-08-01"]), fingerprint(data["2026-10-01"])}
    names = " ".join(f.name for f in files)
    assert "2026-08-01" in names and "2026-10-01" in names and "2026-09-01" not in names


def test_sign_off_and_withdrawal_name_the_partition(tmp_path) -> None:
    """A partitioned release under a sign-off: each month awaits its own approval (its release id names
    the month), an approval of August publishes August only, a sign-off that names no partition or
    another month's release is refused, and withdrawing August removes August's file alone and keeps
    it from coming back on the old approval."""
    from dagster_privacy.pipeline import build_report_hook, build_signoff_check
    from dagster_privacy.pipeline.governance.audit import AuditLog
    from dagster_privacy.pipeline.governance.rejudge import withdraw_release
    from dagster_privacy.pipeline.governance.signoff import SignoffError, current_evaluation
    from dagster_privacy.pipeline.governance.signoff_record import record_signoff

    data = frames()
    real, holdout = data["real"], data["holdout"]

    @dg.asset
    def real_table() -> pl.DataFrame:
        return real

    @dg.asset
    def holdout_table() -> pl.DataFrame:
        return holdout

    @dg.asset(partitions_def=MONTHS)
    def synthetic_table(context) -> pl.DataFrame:  # noqa: ANN001
        return data[context.partition_key]

    hook = build_report_hook(
        asset=synthetic_table, release_resource_key=None, reports_dir=tmp_path / "reports"
    )
    checks = build_privacy_checks(asset=synthetic_table, policy=POLICY, real_asset=real_table,
                                  holdout_asset=holdout_table, release_resource_key=None,
                                  on_evaluation=hook)  # fmt: skip
    signoff = build_signoff_check(asset=synthetic_table)
    published = build_published_release(
        synthetic_asset=synthetic_table,
        required_checks=["privacy_risk_membership", "privacy_signoff"],
        real_asset=real_table,
        holdout_asset=holdout_table,
    )
    target = tmp_path / "published"
    storage = {
        "io_manager": dg.FilesystemIOManager(base_dir=str(tmp_path / "storage")),
        "publish_target": PublishTarget(path=str(target)),
    }
    defs = dg.Definitions(
        assets=[real_table, holdout_table, synthetic_table, published],
        asset_checks=[*checks, signoff],
        resources=storage,
    )
    job = defs.resolve_implicit_global_asset_job_def()

    def publish(instance: dg.DagsterInstance, month: str) -> list[str]:
        """The step's failures, and its warnings: awaiting a sign-off is a warning, not a failure."""
        res = job.execute_in_process(instance=instance, partition_key=month, raise_on_error=False,
                                     asset_selection=[published.key], run_config=QUIET)  # fmt: skip
        failures = [e.event_specific_data.error.message for e in res.all_events if e.is_step_failure]
        logged = (e.user_message or "" for e in instance.all_logs(res.run_id))
        waiting = [m for m in logged if "awaiting sign-off" in m]
        assert not (failures and waiting) and res.success == (not failures)
        return failures + waiting

    with dg.instance_for_test() as instance:
        dg.materialize([real_table, holdout_table], instance=instance, resources=storage)
        sel = [synthetic_table.key]
        for month in ("2026-08-01", "2026-10-01"):
            res = job.execute_in_process(instance=instance, partition_key=month, asset_selection=sel,
                                         raise_on_error=False, run_config=QUIET)  # fmt: skip
            evals = {e.check_name: e.passed for e in res.get_asset_check_evaluations()}
            assert evals["privacy_risk_membership"] and evals["privacy_signoff"] is False, evals
        aug = current_evaluation(instance, synthetic_table.key, partition="2026-08-01")
        octo = current_evaluation(instance, synthetic_table.key, partition="2026-10-01")
        assert aug.release_id.endswith("+2026-08-01") and octo.release_id.endswith("+2026-10-01")
        assert aug.report_path and "2026-08-01" in aug.report_path
        audit = AuditLog(instance=instance)
        from dagster_privacy.console.release_views import releases

        views = releases(instance, synthetic_table.key, audit, str(target))  # the officer console's list
        assert {r: (v.current, v.latest.partition) for r, v in views.items() if v.latest} == {
            aug.release_id: (True, "2026-08-01"),
            octo.release_id: (True, "2026-10-01"),
        }  # each month's release is decidable, and the console signs it off with its partition
        who = {"decision": "approve", "by": "officer", "reason": "read it", "instance": instance,
               "asset": synthetic_table.key, "audit": audit}  # fmt: skip
        with pytest.raises(SignoffError, match="partitioned: name the partition"):
            record_signoff(release=aug.release_id, **who)
        with pytest.raises(SignoffError, match="is not the release of the latest privacy evaluation"):
            record_signoff(release=octo.release_id, partition="2026-08-01", **who)
        # the hint names the release (issue 57: it printed "--release <release id>")
        hint = f"--release {aug.release_id} --partition 2026-08-01"
        assert any("awaiting sign-off" in m and hint in m for m in publish(instance, "2026-08-01"))
        record_signoff(release=aug.release_id, partition="2026-08-01", **who)
        assert publish(instance, "2026-08-01") == []
        assert len(list(target.glob("*.parquet"))) == 1
        assert any("awaiting sign-off" in m for m in publish(instance, "2026-10-01"))
        files = sorted(target.glob("*.parquet"))
        assert len(files) == 1 and "2026-08-01" in files[0].name
        from dagster_privacy.cli.governance import _published_to

        assert _published_to(instance, "published_release") == str(target)  # withdraw's default target
        row = withdraw_release(PublishTarget(path=str(target)), release_id=aug.release_id, by="officer",
                               reason="recalled", audit=audit, instance=instance)  # fmt: skip
        assert row["action"] == "withdraw" and not list(target.glob("*.parquet"))
        log = PublishTarget(path=str(target)).log()
        assert [r["action"] for r in log] == ["publish", "withdraw"]
        again = publish(instance, "2026-08-01")  # the old approval does not outlive the withdrawal
        assert any("withdraw" in m for m in again), again
        assert not list(target.glob("*.parquet"))


def test_the_re_judging_schedule_runs_the_checks_of_each_month(tmp_path) -> None:
    """Each tick requests one checks-only run per materialized month; run as the daemon launches them
    (the schedule's job, subset to the requested checks and no asset), each re-judges its month."""
    from dagster_privacy.pipeline import build_partitioned_checks_schedule

    base = build_defs(tmp_path)
    schedule = build_partitioned_checks_schedule(checks=list(base.asset_checks or []))
    defs = dg.Definitions.merge(base, dg.Definitions(schedules=[schedule]))
    repo = defs.get_repository_def()
    schedule = repo.get_schedule_def(schedule.name)  # bound to the resolved, partitioned job
    with dg.instance_for_test() as instance:
        context = dg.build_schedule_context(instance=instance, repository_def=repo)
        assert "no partition" in (schedule.evaluate_tick(context).skip_message or "")
        run_months(defs, instance)
        before = instance.get_materialized_partitions(dg.AssetKey("synthetic_table"))
        requests = schedule.evaluate_tick(context).run_requests or []
        assert sorted(r.partition_key for r in requests) == MONTHS.get_partition_keys()
        judged = {}
        for r in requests:
            assert r.asset_selection == [] and r.asset_check_keys
            job = repo.get_job(schedule.job_name).get_subset(
                asset_selection=set(r.asset_selection), asset_check_selection=set(r.asset_check_keys)
            )
            res = job.execute_in_process(instance=instance, partition_key=r.partition_key, run_config=QUIET,
                                         raise_on_error=False)  # fmt: skip
            evals = {e.check_name: e for e in res.get_asset_check_evaluations()}
            assert {e.metadata[PARTITION].value for e in evals.values()} == {r.partition_key}
            assert not res.get_asset_materialization_events()  # checks only: nothing re-materialized
            judged[r.partition_key] = evals["privacy_risk_membership"].passed
        assert instance.get_materialized_partitions(dg.AssetKey("synthetic_table")) == before
    assert judged == {"2026-08-01": True, "2026-09-01": False, "2026-10-01": True}


def test_two_partitions_never_share_a_release_id() -> None:
    """Review: the key 'p<12 hex>' and the key that hashes to it shared a release id (one file), and
    'v1' + 'a+b' read as 'v1+a' + 'b'."""
    import hashlib

    from dagster_privacy.data.release_ids import partition_release_id

    hashed = "p" + hashlib.sha256(b"eu/2026").hexdigest()[:12]
    keys = ["eu/2026", hashed, "a+b", "a", "b", "2026-08-01", "x" * 60, "site 7"]
    ids = [partition_release_id("v1", k) for k in keys] + [partition_release_id("v1+a", "b")]
    assert len(set(ids)) == len(ids), ids
    assert partition_release_id("v1", "2026-08-01") == "v1+2026-08-01"  # a plain key reads as itself


def test_an_edited_withdrawal_record_is_refused_before_anything_is_recorded(tmp_path) -> None:
    """Review: a corrupt withdrawal record failed the withdrawal after its audit row was written."""
    from dagster_privacy.data.release_ids import file_name
    from dagster_privacy.pipeline.governance.audit import AuditLog
    from dagster_privacy.pipeline.governance.rejudge import withdraw_release
    from dagster_privacy.pipeline.publication.target import RECORD, PublicationRefused

    target = PublishTarget(path=str(tmp_path / "published"))
    df = frames()["2026-08-01"]
    target.publish(df, release_id="v1+2026-08-01", sha256=fingerprint(df))
    tomb = tmp_path / "published" / f"{file_name('v1+2026-08-01')}{RECORD}"
    tomb.write_text('{"not": "a list"}')
    audit = AuditLog(tmp_path / "audit.duckdb")
    with pytest.raises(PublicationRefused, match="publication record"):
        withdraw_release(target, release_id="v1+2026-08-01", by="officer", reason="recalled", audit=audit)
    assert audit.rows() == [] and len(list((tmp_path / "published").glob("*.parquet"))) == 1


def test_a_directory_target_keeps_every_row_and_refuses_a_record_of_another_release(tmp_path) -> None:
    """Second review: a release file published again replaced its earlier row (the log lost it), and a
    record's rows were not bound to its file (a crafted row let withdrawn content back)."""
    import json

    from dagster_privacy.data.release_ids import file_name
    from dagster_privacy.pipeline.publication.target import RECORD, PublicationRefused

    target = PublishTarget(path=str(tmp_path / "published"))
    data = frames()
    for month in ("2026-08-01", "2026-10-01"):  # the same release id, two contents (a configured id)
        target.publish(data[month], release_id="v1+2026-08-01", sha256=fingerprint(data[month]))
    log = target.log()
    assert [(r["action"], r["sha256"]) for r in log] == [
        ("publish", fingerprint(data["2026-08-01"])),
        ("publish", fingerprint(data["2026-10-01"])),
    ]
    record = tmp_path / "published" / f"{file_name('v1+2026-08-01')}{RECORD}"
    rows = json.loads(record.read_text())
    rows[0]["release_id"] = "v2"  # a row of another release moved into this file's record
    record.write_text(json.dumps(rows))
    with pytest.raises(PublicationRefused, match="publication record"):
        target.log()
