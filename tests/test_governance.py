"""Governance under hostile operators (issue 21): release ids, sign-off replay, the audit chain's
anchors, remediation by content, publication under concurrency and crashes."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from test_pipeline import POLICY, Release, materialized, run, write_db

from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import ReleaseSettings, build_release_definitions
from dagster_privacy.pipeline.resources import RELEASE_ID_TAG, ReleaseIdError, file_name, release_id


@pytest.fixture(scope="module")
def release() -> Release:
    from test_pipeline import _in_domain

    data = load_demo().head(1200)
    clean, leaky = leaky_split(data, 0.0, seed=0), leaky_split(data, 0.3, seed=0)
    return Release(clean.train, clean.control, _in_domain(clean.synthetic, clean.train),
                   _in_domain(leaky.synthetic, leaky.train))


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


def test_release_id_dot_dot_writes_no_report_outside_its_directory(tmp_path: Path, release: Release,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 21 case 6: a release id of '..' (from a run tag) wrote the evidence report one level up."""
    reports = tmp_path / "reports" / "inner"
    monkeypatch.setenv("DAGSTER_PRIVACY_REPORTS", str(reports))
    write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout, synthetic=release.clean)
    settings = ReleaseSettings(database=str(tmp_path / "release.duckdb"), policy=POLICY, schema_gate=False,
                               publish_target=str(tmp_path / "published.duckdb"))
    res = run(build_release_definitions(settings=settings), dg.DagsterInstance.ephemeral(),
              tags={RELEASE_ID_TAG: ".."})
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
    from dagster_privacy.pipeline.signoff import SIGNOFF_CHECK, SignoffError, verify_signoff

    env = signoff_env
    env.release("v1", "clean")
    env.sign("v1", "approve", by="alice")
    key = dg.AssetCheckKey(dg.AssetKey("synthetic_table"), SIGNOFF_CHECK)
    approval = env.instance.get_latest_asset_check_evaluation_record(key).evaluation
    env.sign("v1", "reject", by="bob")
    env.instance.report_runless_asset_event(approval)  # the replay
    assert env.instance.get_latest_asset_check_evaluation_record(key).evaluation.passed
    with pytest.raises(SignoffError, match="latest decision on this release and report is #2 'reject' by bob"):
        verify_signoff(env.instance, dg.AssetKey("synthetic_table"), audit=env.audit)
    res = env.publish()
    assert not res.success
