"""Governance under hostile operators (issue 21): release ids, sign-off replay, the audit chain's
anchors, remediation by content, publication under concurrency and crashes."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import Release
from gates import STANDARD_CHECKS, STANDARD_GATES_YAML
from test_pipeline import (
    POLICY,
    PUB,
    make_defs,
    materialized,
    run,
    step_failures,
    write_db,
)

from dagster_privacy.data.tables import fingerprint
from dagster_privacy.pipeline import PublishTarget, ReleaseSettings, build_release_definitions
from dagster_privacy.pipeline.resources import RELEASE_ID_TAG, ReleaseIdError, file_name, release_id

# ------------------------------------------------------------------------------------- release ids


@pytest.mark.parametrize("rid", ["..", "../up", "a/b", ".hidden", "v1\nv2", "x" * 129, "rel ease", "ünï"])
def test_release_ids_outside_the_safe_set_are_refused(rid: str) -> None:
    with pytest.raises(ReleaseIdError) as info:
        release_id(rid, fingerprint="f" * 64)
    assert rid not in str(info.value) or rid == ".."


@pytest.mark.parametrize("rid", ["v1", "2026-11-23.rc1", "sha256:0123abcd", "team+release_7"])
def test_safe_release_ids_pass_and_file_names_have_no_dot(rid: str) -> None:
    assert release_id(rid, fingerprint="f" * 64) == rid
    assert "." not in file_name(rid) and "/" not in file_name(rid)


def test_release_id_dot_dot_writes_no_report_outside_its_directory(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21 case 6: a release id of '..' (from a run tag) wrote the evidence report one level up."""
    reports = tmp_path / "reports" / "inner"
    monkeypatch.setenv("DAGSTER_PRIVACY_REPORTS", str(reports))
    write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout, synthetic=release.clean)
    settings = ReleaseSettings(
        database=str(tmp_path / "release.duckdb"),
        policy=POLICY,
        schema_gate=False,
        publish_target=str(tmp_path / "published.duckdb"),
    )
    res = run(
        build_release_definitions(settings=settings),
        dg.DagsterInstance.ephemeral(),
        tags={RELEASE_ID_TAG: ".."},
    )
    assert not res.success and "published_release" not in materialized(res)
    written = [p for p in (tmp_path / "reports").rglob("*") if p.is_file()]
    assert all(reports in p.parents for p in written), written


# ------------------------------------------------------------------------------------------ sign-off


@pytest.fixture
def signoff_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from test_signoff import Env

    e = Env(tmp_path)
    monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT", str(e.audit.path))
    yield e
    e.instance.dispose()


def test_replayed_approval_does_not_beat_a_later_rejection(signoff_env) -> None:
    """Issue 21 case 2: approve (alice), reject (bob), then alice's approval event reported again."""
    from dagster_privacy.pipeline.governance.signoff import SIGNOFF_CHECK, SignoffError, verify_signoff

    env = signoff_env
    env.release("v1", "clean")
    env.sign("v1", "approve", by="alice")
    key = dg.AssetCheckKey(dg.AssetKey("synthetic_table"), SIGNOFF_CHECK)
    approval = env.instance.get_latest_asset_check_evaluation_record(key).evaluation
    env.sign("v1", "reject", by="bob")
    env.instance.report_runless_asset_event(approval)  # the replay
    assert env.instance.get_latest_asset_check_evaluation_record(key).evaluation.passed
    with pytest.raises(
        SignoffError, match="latest decision on this release and report is #2 'reject' by bob"
    ):
        verify_signoff(env.instance, dg.AssetKey("synthetic_table"), audit=env.audit)
    res = env.publish()
    assert not res.success


# ------------------------------------------------------------------------------- publication target

PUBLISHER = """
import sys
import polars as pl
from dagster_privacy.pipeline import PublishTarget
path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
target = PublishTarget(path=path)
for i in range(n):
    rid = f"{who}-{i}"
    target.publish(pl.DataFrame({"release": [rid] * 3, "i": [i] * 3}), release_id=rid, sha256=rid)
"""

KILLED = """
import os, shutil, signal, sys
import polars as pl
import dagster_privacy.pipeline.publication.store as S
import dagster_privacy.pipeline.publication.target as T
path, step = sys.argv[1], sys.argv[2]
die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
real_copy, real_replace = shutil.copyfile, os.replace
if step == "after-lock":  # the file kinds' lock and stale-file sweep live in store.py
    S.remove_stale = die
elif step == "after-copy":  # the DuckDB file's next state is written by duckdb_target (issue 44)
    import dagster_privacy.pipeline.publication.duckdb_target as D
    D.shutil.copyfile = lambda *a: (real_copy(*a), die())
elif step == "before-replace":
    S.os.replace = die
elif step == "after-replace":
    S.os.replace = lambda *a: (real_replace(*a), die())
T.PublishTarget(path=path).publish(pl.DataFrame({"release": ["v1"] * 3, "i": [1] * 3}), release_id="v1",
                                   sha256="v1")
"""


def _state(target: Path) -> tuple[list[str], list[str]]:
    """(log release ids in order, distinct release values in the release table)."""
    import duckdb

    con = duckdb.connect(str(target), read_only=True)
    try:
        ids = [r[0] for r in con.execute("select release_id from publications order by rowid").fetchall()]
        held = sorted({r[0] for r in con.execute('select "release" from "release"').fetchall()})
    finally:
        con.close()
    return ids, held


def test_two_publishers_racing_lose_nothing(tmp_path: Path) -> None:
    """Issue 21 case 1: 2 processes × 20 publications to one DuckDB target."""
    import subprocess
    import sys

    script, target = tmp_path / "publisher.py", tmp_path / "published.duckdb"
    script.write_text(PUBLISHER)
    procs = [subprocess.Popen([sys.executable, str(script), str(target), who, "20"]) for who in ("a", "b")]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    ids, held = _state(target)
    print(
        f"2 processes × 20 publications: {len(ids)} log rows, {40 - len(set(ids))} lost, "
        f"target holds {held} (log's last row {ids[-1]})"
    )
    assert len(ids) == 40 and len(set(ids)) == 40
    assert held == [ids[-1]]  # the target holds the release of the log's last row
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize("step", ["after-lock", "after-copy", "before-replace", "after-replace"])
def test_publisher_killed_at_each_step_leaves_old_or_new_and_no_leftovers(tmp_path: Path, step: str) -> None:
    import subprocess
    import sys

    import polars as pl

    target = tmp_path / "published.duckdb"
    pub = PublishTarget(path=str(target))
    pub.publish(pl.DataFrame({"release": ["v0"] * 3, "i": [0] * 3}), release_id="v0", sha256="v0")
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    assert subprocess.run([sys.executable, str(script), str(target), step], timeout=300).returncode == -9
    ids, held = _state(target)  # readable, and the release table matches the log's last row
    assert (ids, held) in ((["v0"], ["v0"]), (["v0", "v1"], ["v1"])), (step, ids, held)
    assert ((ids, held) == (["v0", "v1"], ["v1"])) == (step == "after-replace")
    pub.publish(pl.DataFrame({"release": ["v2"] * 3, "i": [2] * 3}), release_id="v2", sha256="v2")
    ids2, held2 = _state(target)
    assert ids2 == [*ids, "v2"] and held2 == ["v2"]
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]  # the next run cleaned up


# ------------------------------------------------------------------------------------- stale inputs


def test_publication_refuses_when_the_real_table_changed_after_the_checks(
    tmp_path: Path, release: Release
) -> None:
    """Issue 21 case 8: a new training extract after the checks voids their pass."""
    write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout, synthetic=release.clean)
    instance = dg.DagsterInstance.ephemeral()
    defs = make_defs(tmp_path)
    checked = run(
        defs,
        instance,
        selection=[dg.AssetKey("real_table"), dg.AssetKey("holdout_table"), dg.AssetKey("synthetic_table")],
    )
    assert checked.success
    write_db(tmp_path / "release.duckdb", real=release.real.head(release.real.height - 1))  # new extract
    res = run(defs, instance, selection=[PUB])
    assert not res.success and "published_release" not in materialized(res)
    assert any("the real table changed after it was evaluated against it" in f for f in step_failures(res))
    write_db(tmp_path / "release.duckdb", real=release.real)  # the extract the checks saw: publishes
    res = run(defs, instance, selection=[PUB])
    assert res.success
    log = PublishTarget(path=str(tmp_path / "published.duckdb")).log()
    assert log[-1]["real_sha256"] == fingerprint(release.real)


# --------------------------------------------------------------------------------- audit anchors


def _rehash(path: Path, edit_sql: str | None = None, *, delete_from: int | None = None) -> None:
    """Tamper as an insider without the key would: edit or cut rows, then recompute every hash."""
    import duckdb

    from dagster_privacy.pipeline.governance.audit import GENESIS, NAMES, TABLE, _hash

    con = duckdb.connect(str(path))
    try:
        if delete_from is not None:
            con.execute(f"delete from {TABLE} where seq >= ?", [delete_from]).fetchall()
        if edit_sql:
            con.execute(edit_sql).fetchall()
        rows = [
            dict(zip(NAMES, r, strict=True))
            for r in con.execute(f"select {', '.join(NAMES)} from {TABLE} order by seq").fetchall()
        ]
        prev = GENESIS
        for r in rows:
            r["prev_hash"] = prev
            r["row_hash"] = prev = _hash(r)
            con.execute(
                f"update {TABLE} set prev_hash = ?, row_hash = ? where seq = ?",
                [r["prev_hash"], r["row_hash"], r["seq"]],
            ).fetchall()
    finally:
        con.close()


def test_audit_verify_detects_a_cut_tail_and_a_rehashed_rewrite(signoff_env, monkeypatch) -> None:
    """Issue 21 case 3: both used to verify (the chain alone has no anchor)."""
    import shutil

    from click.testing import CliRunner

    from dagster_privacy.cli.governance import audit_command
    from dagster_privacy.pipeline.governance.audit import AuditLog

    env = signoff_env
    env.release("v1", "clean")
    env.sign("v1", "approve", by="alice")
    assert env.publish().success  # the publication log records the audit head #1
    env.release("v2", "clean")
    env.sign("v2", "reject", by="bob")  # the Dagster sign-off event records #2
    monkeypatch.setenv("DAGSTER_HOME", str(env.home))

    def verify(audit: Path):
        return CliRunner().invoke(
            audit_command, ["verify", "--audit", str(audit), "--target", str(env.target)]
        )

    ok = verify(env.audit.path)
    assert ok.exit_code == 0 and "2 decision(s), hash chain intact, 3 recorded head(s) match" in ok.output, (
        ok.output
    )
    cut = env.root / "cut.duckdb"
    shutil.copyfile(env.audit.path, cut)
    _rehash(cut, delete_from=2)
    assert len(AuditLog(cut).verify_chain()) == 1  # the chain alone still verifies
    res = verify(cut)
    assert res.exit_code == 1 and "records audit row #2; the table ends at #1 (rows deleted)" in res.output
    rewritten = env.root / "rewritten.duckdb"
    shutil.copyfile(env.audit.path, rewritten)
    _rehash(rewritten, "update signoff_audit set approver = 'mallory' where seq = 1")
    assert AuditLog(rewritten).verify_chain()[0].approver == "mallory"  # the chain alone still verifies
    res = verify(rewritten)
    assert res.exit_code == 1 and "(the table was rewritten)" in res.output
    assert "the publication log of" in res.output and "the Dagster sign-off event" in res.output


def test_keyed_audit_table_cannot_be_rehashed_without_the_key(tmp_path: Path, monkeypatch) -> None:
    from dagster_privacy.pipeline.governance.audit import AuditError, AuditLog

    monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT_KEY", "held-by-the-verifier")
    log = AuditLog(tmp_path / "audit.duckdb")
    for d in ("approve", "reject"):
        log.append(recorded_at="t", release_id="v1", decision=d, approver="a", reason="r", asset_key="s")
    assert len(log.verify_chain()) == 2
    _rehash(log.path, "update signoff_audit set decision = 'approve' where seq = 2")  # sha256, no key
    with pytest.raises(AuditError, match="altered at row 1"):
        log.verify_chain()
    monkeypatch.delenv("DAGSTER_PRIVACY_AUDIT_KEY")
    with pytest.raises(AuditError, match="keyed"):
        log.verify_chain()


# ------------------------------------------------------------------------------------- one assembler


def test_component_with_a_signoff_policy_gets_the_signoff_check_and_the_report(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21 case 5: the component built its own assets and checks, without the sign-off check its
    publication required and without the evidence report."""
    from test_pipeline import component_defs, evaluations

    from dagster_privacy.pipeline.evidence import REPORT_PATH

    monkeypatch.setenv("DAGSTER_PRIVACY_REPORTS", str(tmp_path / "reports"))
    write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout, synthetic=release.clean)
    defs = component_defs(
        tmp_path,
        "require_signoff: true\nmetrics:\n  crp: {threshold: 0.05, severity: WARN}\n" + STANDARD_GATES_YAML,
    )
    check_names = {k.name for c in defs.asset_checks for k in c.check_keys}
    assert check_names == {
        "crp",
        "privacy_risk_membership",
        "privacy_signoff",
        "published_release_still_passes",
        *STANDARD_CHECKS,
    }
    res = run(defs, dg.DagsterInstance.ephemeral())
    evs = evaluations(res)
    assert evs["crp"].passed and not evs["privacy_signoff"].passed  # awaiting the officer, as everywhere
    assert Path(evs["crp"].metadata[REPORT_PATH].value).is_file()  # the evidence report was written
    assert "published_release" not in materialized(res)


# --------------------------------------------------------------------- re-judging what is published


def test_published_demo_release_rejudged_under_a_stricter_policy_then_withdrawn(
    tmp_path: Path, monkeypatch
) -> None:
    """Issue 21 case 7: the demo's published v1, re-evaluated by the schedule's job under a stricter
    policy, fails published_release_still_passes; after `withdraw` the target holds no release and its
    log says why."""
    from click.testing import CliRunner

    from dagster_privacy.cli import cli
    from dagster_privacy.pipeline.demo_run import demo_policy, run_demo
    from dagster_privacy.pipeline.governance.rejudge import CHECK

    monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT", str(tmp_path / "audit.duckdb"))
    demo = run_demo(tmp_path / "demo", echo=lambda _line: None, dagster_home=tmp_path / "home")
    assert demo.published_ids == ["v1"]
    stricter = demo_policy().model_dump(mode="json")
    stricter["name"] = "stricter"
    stricter["metrics"]["dcr"] = {"threshold": 0.5, "severity": "ERROR"}  # v1's dcr is ≈ 0.8
    # a gate added beside standard's takes level from them (issue 54): that share is waived
    stricter["waivers"] = {"metrics.dcr.severity": "dcr gates too: its share of the level is given up"}
    settings = ReleaseSettings(
        database=str(demo.database), policy=stricter, publish_target=str(demo.publish_target)
    )
    defs = build_release_definitions(settings=settings)
    instance = dg.DagsterInstance.from_config(str(demo.dagster_home))
    try:
        res = defs.resolve_job_def("privacy_checks_job").execute_in_process(
            instance=instance, raise_on_error=False
        )
        rejudged = {e.check_name: e for e in res.get_asset_check_evaluations()}[CHECK]
    finally:
        instance.dispose()
    assert not rejudged.passed and rejudged.asset_key == dg.AssetKey("published_release")
    assert rejudged.metadata["dagster_privacy/release_id"].value == "v1"
    assert "dcr" in rejudged.metadata["failing_metrics"].value
    out = CliRunner().invoke(
        cli,
        [
            "withdraw",
            "--release",
            "v1",
            "--by",
            "Dana Officer",
            "--reason",
            "fails the stricter policy",
            "--target",
            str(demo.publish_target),
        ],
    )
    assert out.exit_code == 0, out.output
    target = PublishTarget(path=str(demo.publish_target))
    assert target.held() is None
    last = target.log()[-1]
    assert (last["action"], last["release_id"], last["by"], last["reason"]) == (
        "withdraw",
        "v1",
        "Dana Officer",
        "fails the stricter policy",
    )
    from dagster_privacy.pipeline.governance.audit import AuditLog

    assert AuditLog(tmp_path / "audit.duckdb").verify_chain()[-1].decision == "withdraw"
    again = CliRunner().invoke(
        cli,
        ["withdraw", "--release", "v1", "--by", "x", "--reason", "y", "--target", str(demo.publish_target)],
    )
    assert again.exit_code == 2 and "holds no release" in again.output


# ----------------------------------------------------------------- a second auditor's breaks (issue 21)


@pytest.mark.parametrize("tamper", ["swap-for-an-older-copy", "cut-the-rejection"])
def test_no_publication_after_a_rejection_whatever_is_done_to_the_audit_file(
    signoff_env, monkeypatch, tamper
):
    """The audit table is held to the heads Dagster recorded before any decision in it is trusted."""
    import shutil

    import duckdb

    from dagster_privacy.pipeline.governance.signoff import SIGNOFF_CHECK

    env = signoff_env
    env.release("v1", "clean")
    env.sign("v1", "approve", by="alice")
    key = dg.AssetCheckKey(dg.AssetKey("synthetic_table"), SIGNOFF_CHECK)
    approval = env.instance.get_latest_asset_check_evaluation_record(key).evaluation
    older = env.root / "older.duckdb"
    shutil.copyfile(env.audit.path, older)
    env.sign("v1", "reject", by="bob")
    env.instance.report_runless_asset_event(approval)
    if tamper == "swap-for-an-older-copy":
        monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT", str(older))
    else:
        con = duckdb.connect(str(env.audit.path))
        con.execute("delete from signoff_audit where seq = 2").fetchall()
        con.close()
    res = env.publish()
    assert not res.success and not env.target.exists()
    assert any("does not match the heads Dagster recorded" in f for f in step_failures(res))


def test_a_withdrawn_release_is_not_published_again_without_a_new_signoff(signoff_env) -> None:
    from dagster_privacy.pipeline.governance.rejudge import withdraw_release

    env = signoff_env
    env.release("v1", "clean")
    env.sign("v1", "approve", by="alice")
    assert env.publish().success
    withdraw_release(
        PublishTarget(path=str(env.target)), release_id="v1", by="carol", reason="pull it", audit=env.audit
    )
    res = env.publish()
    assert not res.success and any("#2 'withdraw' by carol" in f for f in step_failures(res))
    assert [r["action"] for r in PublishTarget(path=str(env.target)).log()] == ["publish", "withdraw"]


def test_withdrawal_content_is_not_republished_without_a_signoff_policy(
    tmp_path: Path, release: Release
) -> None:
    from dagster_privacy.pipeline.governance.rejudge import withdraw_release

    write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout, synthetic=release.clean)
    instance, defs = dg.DagsterInstance.ephemeral(), make_defs(tmp_path)
    assert run(defs, instance).success
    target = PublishTarget(path=str(tmp_path / "published.duckdb"))
    rid = target.log()[-1]["release_id"]
    withdraw_release(target, release_id=rid, by="carol", reason="pull it", audit=tmp_path / "audit.duckdb")
    res = run(defs, instance)
    assert not res.success and any("this content was withdrawn" in f for f in step_failures(res))


@pytest.mark.parametrize("edit", ["withdraw-row-added", "log-emptied", "log-dropped"])
def test_rejudging_refuses_a_target_whose_log_was_edited(tmp_path: Path, release: Release, edit: str) -> None:
    """A failing release stays in the target while only its log is edited: the check fails closed."""
    import duckdb

    from dagster_privacy.pipeline.governance.rejudge import judge_published
    from dagster_privacy.pipeline.publication.target import PublicationRefused
    from dagster_privacy.pipeline.resources import ReadOnlyDuckDB

    db = ReadOnlyDuckDB(
        database=str(write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout))
    )
    target = PublishTarget(path=str(tmp_path / "published.duckdb"))
    target.publish(release.leaky, release_id="v2", sha256=fingerprint(release.leaky))
    assert not judge_published(db, target, policy=dp_policy(), real="real", holdout="holdout")[0]
    con = duckdb.connect(target.path)
    con.execute(
        {
            "withdraw-row-added": "insert into publications (release_id, action) values ('v2', 'withdraw')",
            "log-emptied": "delete from publications",
            "log-dropped": "drop table publications",
        }[edit]
    )
    con.close()
    with pytest.raises(PublicationRefused, match="disagree"):
        judge_published(db, target, policy=dp_policy(), real="real", holdout="holdout")


def dp_policy():
    from dagster_privacy import load_policy

    return load_policy(POLICY)


def test_a_refused_withdrawal_leaves_no_audit_row(tmp_path: Path, release: Release) -> None:
    from dagster_privacy.pipeline.governance.audit import AuditLog
    from dagster_privacy.pipeline.governance.rejudge import withdraw_release
    from dagster_privacy.pipeline.publication.target import PublicationRefused

    target = PublishTarget(path=str(tmp_path / "published.duckdb"))
    target.publish(release.clean, release_id="v2", sha256=fingerprint(release.clean))
    with pytest.raises(PublicationRefused, match="holds v2, not release v1"):
        withdraw_release(target, release_id="v1", by="x", reason="y", audit=tmp_path / "audit.duckdb")
    assert AuditLog(tmp_path / "audit.duckdb").rows() == []


def test_a_symlinked_target_publishes_into_the_real_file(tmp_path: Path, release: Release) -> None:
    real, link = tmp_path / "real.duckdb", tmp_path / "link.duckdb"
    PublishTarget(path=str(real)).publish(release.clean, release_id="v1", sha256="a")
    link.symlink_to(real)
    PublishTarget(path=str(link)).publish(release.clean, release_id="v2", sha256="b")
    assert link.is_symlink() and [r["release_id"] for r in PublishTarget(path=str(real)).log()] == [
        "v1",
        "v2",
    ]


def test_release_ids_that_differ_only_in_punctuation_get_their_own_files(
    tmp_path: Path, release: Release
) -> None:
    target = PublishTarget(path=str(tmp_path / "releases"))
    paths = {
        rid: target.publish(release.clean, release_id=rid, sha256=rid)
        for rid in ("v1.0", "v1_0", "2024:q1", "2024+q1")
    }
    assert len(set(paths.values())) == 4


def test_audit_verify_names_a_publication_made_under_a_rejection() -> None:
    from dagster_privacy.pipeline.governance.audit import AuditRow, verify_publications

    def row(seq, decision):
        return AuditRow(
            seq, "t", "v1", decision, "a", None, "r", "h", None, "s", None, None, None, None, "p", f"h{seq}"
        )

    rows = [row(1, "approve"), row(2, "reject"), row(3, "withdraw")]
    log = [
        {"action": "publish", "release_id": "v1", "audit_seq": 1, "published_at": "t1"},
        {"action": "publish", "release_id": "v1", "audit_seq": 2, "published_at": "t2"},
    ]
    problems = verify_publications(rows, log, "log")
    assert problems == [
        "log: release v1 was published (t2) while the latest audited decision on it was #2 'reject'",
        "log: the audited withdrawal #3 of release v1 is not in the log",
    ]


def test_audit_verify_of_a_missing_file_is_bad_input_not_a_clean_audit(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dagster_privacy.cli.governance import audit_command

    res = CliRunner().invoke(audit_command, ["verify", "--audit", str(tmp_path / "typo.duckdb")])
    assert res.exit_code == 2 and "no audit table at" in res.output


def test_audit_verify_reads_a_directory_target(tmp_path: Path) -> None:
    """Issue 46 (8): `audit verify --target releases/` refused the directory target the docs use; it
    reads its publication records like a DuckDB log, and finds a release published against a
    rejection there too. A withdrawal row prints what it is, never 'materialization None'."""
    from click.testing import CliRunner

    from dagster_privacy.cli.governance import audit_command
    from dagster_privacy.pipeline.governance.audit import AuditLog

    audit = AuditLog(tmp_path / "audit.duckdb")
    audit.append(recorded_at="t1", release_id="v1", decision="approve", approver="alice", reason="fine",
                 asset_key="synthetic_table")  # fmt: skip
    target = PublishTarget(path=str(tmp_path / "releases"))
    target.publish(pl.DataFrame({"x": [1, 2]}), release_id="v1", sha256="s1", audit_seq=1, by="ci-bot")
    res = CliRunner().invoke(audit_command, ["verify", "--audit", str(audit.path), "--target", target.path])
    assert res.exit_code == 0, res.output
    assert "1 decision(s), hash chain intact" in res.output
    audit.append(recorded_at="t2", release_id="v2", decision="reject", approver="bob", reason="leaks",
                 asset_key="synthetic_table")  # fmt: skip
    target.publish(pl.DataFrame({"x": [3]}), release_id="v2", sha256="s2", audit_seq=2, by="ci-bot")
    res = CliRunner().invoke(audit_command, ["verify", "--audit", str(audit.path), "--target", target.path])
    assert res.exit_code == 1 and "release v2 was published" in res.output, res.output
    audit.append(recorded_at="t3", release_id="v1", decision="withdraw", approver="alice", reason="recall",
                 asset_key="synthetic_table")  # fmt: skip
    res = CliRunner().invoke(audit_command, ["verify", "--audit", str(audit.path)])
    withdrawal = next(line for line in res.output.splitlines() if "WITHDRAW" in line)
    assert "None" not in withdrawal, withdrawal
