"""Recorded sign-off on a real Dagster instance: the report written by the check, the blocking
``privacy_signoff`` check, runless decisions, publication refusing a missing, rejected or stale approval,
the append-only audit table, the CLI, and no canary value anywhere on disk."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from click.testing import CliRunner
from gates import STANDARD_CHECKS, covering

from dagster_privacy.cli.governance import signoff_command
from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline.demo_run import write_tables
from dagster_privacy.pipeline.evidence import REPORT_PATH, REPORT_SHA256, build_report_hook
from dagster_privacy.pipeline.governance.audit import AuditError, AuditLog, default_audit_path
from dagster_privacy.pipeline.governance.signoff import (
    SIGNOFF_CHECK,
    SignoffError,
    current_evaluation,
    verify_signoff,
)
from dagster_privacy.pipeline.governance.signoff_record import record_signoff
from dagster_privacy.pipeline.release import ReleaseSettings, build_release_definitions
from dagster_privacy.pipeline.resources import RELEASE_ID_TAG
from dagster_privacy.report import file_sha256

CANARY = "Zq7CanarySignoffOcc"
POLICY = covering(
    {
        "name": "signoff-test",
        "require_signoff": True,
        "metrics": {
            "crp": {"threshold": 0.05, "severity": "WARN"},
            "dcr": {"threshold": 0.95, "severity": "WARN"},
        },
    }
)
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
SYN = dg.AssetKey("synthetic_table")


def _frames() -> dict[str, pl.DataFrame]:
    df = load_demo().head(1200)
    real = df[:600].with_columns(
        pl.when(pl.int_range(pl.len()) < 9)
        .then(pl.lit(CANARY))
        .otherwise(pl.col("occupation"))
        .alias("occupation")
    )
    return {
        "real": real,
        "holdout": df[600:900],
        "clean": df[900:1200],
        "leaky": pl.concat([df[900:1200], real[:200]]),
    }


class Env:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "dagster_home"
        self.home.mkdir()
        (self.home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        self.database = root / "release.duckdb"
        self.target = root / "published.duckdb"
        self.reports = root / "reports"
        self.audit = AuditLog(root / "audit" / "audit.duckdb")
        self.frames = _frames()
        write_tables(
            self.database,
            {
                "real": self.frames["real"],
                "holdout": self.frames["holdout"],
                "synthetic": self.frames["clean"],
            },
        )
        settings = ReleaseSettings(
            database=str(self.database), policy=POLICY, publish_target=str(self.target), schema_gate=False
        )
        hook = build_report_hook(asset="synthetic_table", policy=POLICY, reports_dir=self.reports)
        self.defs = build_release_definitions(settings=settings, on_evaluation=hook)
        self.instance = dg.DagsterInstance.from_config(str(self.home))

    def release(self, release: str, frame: str | None = None) -> dg.ExecuteInProcessResult:
        if frame:
            write_tables(self.database, {"synthetic": self.frames[frame]})
        return self.defs.resolve_job_def("privacy_release_job").execute_in_process(
            instance=self.instance, raise_on_error=False, run_config=QUIET, tags={RELEASE_ID_TAG: release}
        )

    def publish(self) -> dg.ExecuteInProcessResult:
        return self.defs.resolve_implicit_global_asset_job_def().execute_in_process(
            instance=self.instance,
            raise_on_error=False,
            run_config=QUIET,
            asset_selection=[dg.AssetKey("published_release")],
        )

    def checks_only(self, *names: str) -> dg.ExecuteInProcessResult:
        sel = dg.AssetSelection.checks(*[dg.AssetCheckKey(SYN, n) for n in names])
        job = dg.define_asset_job("checks_subset", selection=sel)
        defs = dg.Definitions.merge(self.defs, dg.Definitions(jobs=[job]))
        return defs.resolve_job_def("checks_subset").execute_in_process(
            instance=self.instance, raise_on_error=False, run_config=QUIET
        )

    def sign(self, release: str, decision: str, **kw):
        return record_signoff(
            release=release,
            decision=decision,
            by=kw.pop("by", "Dana Officer"),
            reason=kw.pop("reason", f"{decision} after reading the report"),
            instance=self.instance,
            audit=self.audit,
            **kw,
        )


def _published(res: dg.ExecuteInProcessResult) -> bool:
    return any(
        e.asset_key == dg.AssetKey("published_release") for e in res.get_asset_materialization_events()
    )


def _logged(instance: dg.DagsterInstance, res: dg.ExecuteInProcessResult) -> str:
    """Every message the run logged (user log lines included, whatever the console's level)."""
    return "\n".join(e.user_message or "" for e in instance.all_logs(res.run_id))


def _failure(res: dg.ExecuteInProcessResult) -> str:
    return next(
        (e.event_specific_data.error.message for e in res.all_events if e.event_type_value == "STEP_FAILURE"),
        "",
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Env:
    e = Env(tmp_path_factory.mktemp("signoff"))
    before = os.environ.get("DAGSTER_PRIVACY_AUDIT")
    os.environ["DAGSTER_PRIVACY_AUDIT"] = str(e.audit.path)  # where publication looks for the approval
    yield e
    e.instance.dispose()
    if before is None:
        os.environ.pop("DAGSTER_PRIVACY_AUDIT", None)
    else:
        os.environ["DAGSTER_PRIVACY_AUDIT"] = before


def test_release_waits_for_signoff_and_the_check_writes_the_report(env: Env):
    res = env.release("v1", "clean")
    checks = {c.check_name: c for c in res.get_asset_check_evaluations()}
    assert checks["crp"].passed and not checks[SIGNOFF_CHECK].passed
    assert checks[SIGNOFF_CHECK].description == "awaiting sign-off"
    # issue 46 (7): waiting for a person is not a failure: a warning, the run succeeds, nothing published
    assert checks[SIGNOFF_CHECK].severity is dg.AssetCheckSeverity.WARN
    assert res.success and not _published(res), _failure(res)
    assert "not published, awaiting sign-off" in _logged(env.instance, res)
    meta = checks["crp"].metadata
    path, sha = Path(meta[REPORT_PATH].value), meta[REPORT_SHA256].value
    assert path.is_file() and file_sha256(path) == sha and path.is_relative_to(env.reports)
    html = path.read_text()
    assert "Verdict: PASS" in html and "This policy requires a recorded sign-off." in html
    # metric, distance, attack and membership (membership_inference: standard's gate) figures
    assert html.count('src="data:image/png;base64,') == 4 and 'id="fig-membership"' in html
    assert "privacy_report" in meta and sha in meta["privacy_report"].value
    assert checks["dcr"].metadata[REPORT_SHA256].value == sha  # every result names the same report
    with pytest.raises(SignoffError, match="awaiting sign-off"):
        verify_signoff(env.instance, SYN, audit=env.audit)
    waiting = env.publish()
    assert waiting.success and not _published(waiting)
    assert "not published, awaiting sign-off" in _logged(env.instance, waiting)


def test_signoff_refuses_wrong_release_and_wrong_report(env: Env):
    with pytest.raises(SignoffError, match="not the release of the latest privacy evaluation"):
        env.sign("v0", "approve")
    with pytest.raises(SignoffError, match="is not the current evaluation's report"):
        env.sign("v1", "approve", report_sha256="0" * 64)
    with pytest.raises(SignoffError, match="decision must be"):
        env.sign("v1", "maybe")
    assert env.audit.rows() == []


def test_approval_publishes(env: Env):
    cur = current_evaluation(env.instance, SYN)
    rec = env.sign("v1", "approve", report_sha256=cur.report_sha256)
    assert rec.decision == "approve" and rec.report_sha256 == cur.report_sha256 and rec.audit_seq == 1
    latest = env.instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(SYN, SIGNOFF_CHECK))
    ev = latest.evaluation
    assert latest.run_id == "" and ev.passed
    assert (
        ev.target_materialization_data.storage_id
        == env.instance.fetch_materializations(SYN, limit=1).records[0].storage_id
    )
    meta = {k: v.value for k, v in ev.metadata.items()}
    assert meta["decision"] == "approve" and meta["approver"] == "Dana Officer"
    assert meta[REPORT_SHA256] == cur.report_sha256 and meta["signed_at"].endswith("+00:00")
    assert verify_signoff(env.instance, SYN, audit=env.audit)["approver"] == "Dana Officer"
    res = env.publish()
    assert res.success and _published(res), _failure(res)


def test_a_new_evaluation_invalidates_the_approval(env: Env):
    old = current_evaluation(env.instance, SYN).report_sha256
    res = env.checks_only(
        "crp", "dcr", "privacy_risk_membership", *sorted(STANDARD_CHECKS)
    )  # re-evaluate the metrics only: the approval record stays the latest
    assert res.success
    assert current_evaluation(env.instance, SYN).report_sha256 != old
    with pytest.raises(SignoffError, match="a new evaluation needs a new sign-off"):
        verify_signoff(env.instance, SYN, audit=env.audit)
    waiting = env.publish()  # the new report awaits its own sign-off: not published, not a failure
    assert waiting.success and not _published(waiting)
    assert "a new evaluation needs a new sign-off" in _logged(env.instance, waiting)


def test_rejection_keeps_another_release_blocked(env: Env):
    res = env.release("v2", "leaky")
    assert not _published(res)
    with pytest.raises(SignoffError, match="failed its gates"):
        env.sign("v2", "approve")
    rec = env.sign("v2", "reject", reason="copies of training records (crp fails)")
    assert rec.decision == "reject"
    with pytest.raises(SignoffError, match="'reject' by Dana Officer"):
        verify_signoff(env.instance, SYN, audit=env.audit)
    refused = env.publish()
    assert not refused.success and not _published(refused)
    assert "'reject' by Dana Officer" in _failure(refused)
    # review: re-running the sign-off check alone (it warns "awaiting sign-off" again) must not turn the
    # audited rejection of this very report into a quiet wait
    assert env.checks_only(SIGNOFF_CHECK).success
    again = env.publish()
    assert not again.success and not _published(again)
    assert "'reject' by Dana Officer" in _failure(again) and "stays blocked" in _failure(again)


def test_audit_table_keeps_every_decision_and_detects_tampering(env: Env, capsys):
    from dagster_privacy.cli.governance import audit_command

    def main(args):
        return CliRunner().invoke(audit_command, ["verify", "--audit", *args])

    listed = main([str(env.audit.path)])
    assert listed.exit_code == 0, listed.output
    listing = listed.output
    assert "2 decision(s), hash chain intact" in listing and "release v2: REJECT by Dana Officer" in listing
    rows = env.audit.verify_chain()
    assert [(r.seq, r.release_id, r.decision) for r in rows] == [(1, "v1", "approve"), (2, "v2", "reject")]
    assert rows[1].prev_hash == rows[0].row_hash
    assert all(r.report_sha256 and r.approver == "Dana Officer" and r.os_user for r in rows)
    copy = env.root / "tampered.duckdb"
    copy.write_bytes(env.audit.path.read_bytes())
    con = duckdb.connect(str(copy))
    try:
        con.execute("update signoff_audit set decision = 'approve' where seq = 2").fetchall()
    finally:
        con.close()
    with pytest.raises(AuditError, match="altered at row 2"):
        AuditLog(copy).verify_chain()
    assert main([str(copy)]).exit_code == 1


def test_cli_records_a_decision(env: Env, monkeypatch):
    env.release("v3", "clean")
    monkeypatch.setenv("DAGSTER_HOME", str(env.home))
    monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT", str(env.audit.path))
    runner = CliRunner()
    args = ["--release", "v3", "--decision", "approve", "--by", "Ana Lee", "--reason", "report read"]
    out = runner.invoke(signoff_command, args)
    assert out.exit_code == 0, out.output
    assert "approve of release v3 by Ana Lee recorded" in out.output and "audit row #3" in out.output
    bad = runner.invoke(signoff_command, [*args[:1], "v9", *args[2:]])
    assert bad.exit_code == 2 and "sign-off not recorded" in bad.output
    res = env.publish()
    assert res.success and _published(res), _failure(res)


def test_the_cli_hashes_the_report_file_and_finds_the_target_the_pipeline_published_to(env: Env, monkeypatch):
    """Issue 33 part 3: `signoff --report FILE` hashes the file the officer read; `withdraw` without
    --target finds the DuckDB file of the latest publication in the instance; the publication log row
    says who approved it; the withdrawal shows on published_release in Dagster."""
    from dagster_privacy.cli.governance import withdraw_command
    from dagster_privacy.pipeline.publication.target import PublishTarget

    monkeypatch.setenv("DAGSTER_HOME", str(env.home))
    monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT", str(env.audit.path))
    monkeypatch.delenv("DAGSTER_PRIVACY_PUBLISH_TARGET", raising=False)
    other = env.root / "other.html"
    other.write_text("<html>not the report</html>")
    runner = CliRunner()
    args = ["--release", "v3", "--decision", "approve", "--by", "Ana Lee", "--reason", "again"]
    bad = runner.invoke(signoff_command, [*args, "--report", str(other)])
    assert bad.exit_code == 2 and "is not the current evaluation's report" in bad.output
    log = PublishTarget(path=str(env.target)).log()
    assert log[-1]["action"] == "publish" and log[-1]["by"] == "Ana Lee"
    assert log[-1]["reason"].startswith("approved in audit row #3")
    out = runner.invoke(
        withdraw_command, ["--release", "v3", "--by", "Ana Lee", "--reason", "consent withdrawn"]
    )
    assert out.exit_code == 0, out.output
    assert f"from {env.target}" in out.output
    obs = env.instance.fetch_observations(dg.AssetKey("published_release"), limit=1).records
    assert obs and obs[0].asset_observation.metadata["withdrawn_release"].value == "v3"


def test_audit_never_in_the_real_database(tmp_path, monkeypatch):
    db = tmp_path / "real.duckdb"
    monkeypatch.setenv("DAGSTER_PRIVACY_DATABASE", str(db))
    with pytest.raises(AuditError, match="real data's database"):
        AuditLog(db)
    monkeypatch.delenv("DAGSTER_PRIVACY_AUDIT", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert default_audit_path() == tmp_path / "home" / "dagster_privacy" / "audit.duckdb"
    (tmp_path / "inst").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "inst")) as inst:  # the instance's own directory wins
        assert default_audit_path(inst) == tmp_path / "inst" / "dagster_privacy" / "audit.duckdb"


def test_a_rejection_between_the_checks_and_the_lock_stops_publication(tmp_path, monkeypatch):
    """Issue 31 case 3, the sign-off half: the publisher read an approval, then the officer rejected the
    release before the publisher took the target's lock. The sign-off is decided again under the lock,
    so the target keeps what it held; before, the release was published on the stale approval."""
    from dagster_privacy.pipeline.publication.target import PublishTarget

    own = Env(tmp_path)
    monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT", str(own.audit.path))
    try:
        own.release("v1", "clean")
        report = current_evaluation(own.instance, SYN).report_sha256
        own.sign("v1", "approve", report_sha256=report)
        publish = PublishTarget.publish

        def paused(self, *args, **kwargs):  # the checks have run; the rejection lands before the lock
            own.sign("v1", "reject", reason="a leak found on second reading", report_sha256=report)
            return publish(self, *args, **kwargs)

        monkeypatch.setattr(PublishTarget, "publish", paused)
        refused = own.publish()
        assert not refused.success and not _published(refused)
        assert "publication refused" in _failure(refused) and "'reject' by Dana Officer" in _failure(refused)
        assert not own.target.exists()  # nothing was written
        monkeypatch.setattr(PublishTarget, "publish", publish)
        assert "'reject' by Dana Officer" in _failure(own.publish())  # and it stays refused
    finally:
        own.instance.dispose()


def test_no_canary_on_disk(env: Env):
    assert (env.frames["real"]["occupation"] == CANARY).any()
    hits = []
    for base in (env.home, env.reports, env.audit.path.parent, env.target.parent):
        for p in Path(base).rglob("*"):
            if p.is_file() and p != env.database and CANARY.encode() in p.read_bytes():
                hits.append(os.fspath(p))
    assert hits == []
