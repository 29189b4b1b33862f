"""A team's own assets, end to end (issue 46, item 1): tables as pandas and polars assets under Dagster's
default IO manager, the privacy checks and the sign-off from the factories alone — the checks write the
evidence report by default, the console finds the asset without --asset, an officer approves there,
and the release publishes; waiting for the officer is no failure."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import polars as pl
import pytest
from test_console import PASSWORD, Client, Served

from dagster_privacy.calibration import leaky_split
from dagster_privacy.console import ConsoleSettings
from dagster_privacy.console.identity import Users
from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import (
    PublishTarget,
    build_privacy_checks,
    build_published_release,
    build_signoff_check,
    required_check_names,
)
from dagster_privacy.pipeline.evidence import REPORT_PATH, REPORT_SHA256

POLICY = {"preset": "standard", "require_signoff": True}
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _defs(root: Path) -> dg.Definitions:
    split = leaky_split(load_demo().head(2400), 0.0, seed=0)

    @dg.asset
    def customers_real() -> pd.DataFrame:  # pandas, as a team's own asset may be
        return split.train.to_pandas()

    @dg.asset
    def customers_holdout() -> pl.DataFrame:
        return split.control

    @dg.asset
    def customers_synthetic() -> pl.DataFrame:
        return split.synthetic

    sides = {"real_asset": customers_real, "holdout_asset": customers_holdout}
    checks = [
        *build_privacy_checks(asset=customers_synthetic, policy=POLICY, release_resource_key=None, **sides),
        build_signoff_check(asset=customers_synthetic),
    ]
    published = build_published_release(
        synthetic_asset=customers_synthetic,
        required_checks=required_check_names(POLICY, schema_gate=False),
        **sides,
    )
    return dg.Definitions(
        assets=[customers_real, customers_holdout, customers_synthetic, published],
        asset_checks=checks,
        resources={
            "publish_target": PublishTarget(path=str(root / "published")),
            "io_manager": dg.FilesystemIOManager(base_dir=str(root / "storage")),
        },
    )


@pytest.mark.slow
def test_own_assets_get_a_report_a_console_entry_an_approval_and_a_publication(tmp_path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    defs = _defs(tmp_path)
    job = defs.resolve_implicit_global_asset_job_def()
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        res = job.execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET)
        evals = {e.check_name: e for e in res.get_asset_check_evaluations()}
        assert res.success, [e.event_specific_data.error.message for e in res.all_events if e.is_step_failure]
        assert all(evals[n].passed for n in required_check_names(POLICY, schema_gate=False, extra=()) if
                   n != "privacy_signoff")  # fmt: skip
        assert evals["privacy_signoff"].description == "awaiting sign-off"
        assert "published_release" not in {e.asset_key.to_user_string() for e in
                                            res.get_asset_materialization_events()}  # fmt: skip
        meta = evals["privacy_risk_membership"].metadata
        report = Path(meta[REPORT_PATH].value)  # written by default: no hook was given
        assert report.is_file() and "Verdict: PASS" in report.read_text()

        users = tmp_path / "users.json"
        Users(users).add("dana", "officer", PASSWORD)
        audit = str(tmp_path / "audit.duckdb")
        settings = ConsoleSettings(
            instance_dir=str(home), users=str(users), audit=audit, secure_cookies=False
        )
        served = Served(settings)  # no asset named: the console finds customers_synthetic
        try:
            dana = Client(served.url)
            assert dana.login("dana") == 303
            listing = dana.request("/")[2]
            assert "customers_synthetic" in listing and "Awaiting decision" in listing
            release = listing.split('href="/release/', 1)[1].split('"', 1)[0]
            page = dana.request(f"/release/{release}")[2]
            assert 'value="approve"' in page
            form = {"decision": "approve", "reason": "read the report", "csrf": dana.csrf("/"),
                    "report_sha256": meta[REPORT_SHA256].value}  # fmt: skip
            status, _, body = dana.request(f"/release/{release}/decision", form)
            assert status == 303, body
            # review: the server, not only the page, takes one decision per report
            again = {**form, "decision": "reject", "csrf": dana.csrf("/")}
            status, _, body = dana.request(f"/release/{release}/decision", again)
            assert status == 409 and "already approved" in body
        finally:
            served.stop()
        monkeypatch.setenv("DAGSTER_PRIVACY_AUDIT", audit)  # where publication reads the approval
        publish = [dg.AssetKey("published_release")]
        published = job.execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET,
                                           asset_selection=publish)  # fmt: skip
        assert published.success
        assert "published_release" in {e.asset_key.to_user_string() for e in
                                        published.get_asset_materialization_events()}  # fmt: skip
        assert list((tmp_path / "published").glob("*.parquet"))
    finally:
        instance.dispose()


def test_two_assets_in_one_run_under_one_release_id_keep_their_own_reports(tmp_path) -> None:
    """Review: the default report path was <release>/<run>.html, so a second asset evaluated in the same
    run under the same release id overwrote the first's report, which then could never be signed off."""
    import hashlib

    from dagster_privacy.data.release_ids import file_name  # noqa: F401
    from dagster_privacy.data.tables import fingerprint  # noqa: F401  (the report's own sha256 is checked)
    from dagster_privacy.pipeline.resources import RELEASE_ID_TAG

    split = leaky_split(load_demo().head(1200), 0.0, seed=0)
    assets, checks = [], []
    for name in ("customers", "orders"):

        @dg.asset(name=f"{name}_real")
        def real() -> pl.DataFrame:
            return split.train

        @dg.asset(name=f"{name}_holdout")
        def holdout() -> pl.DataFrame:
            return split.control

        @dg.asset(name=f"{name}_synthetic")
        def synthetic() -> pl.DataFrame:
            return split.synthetic

        assets += [real, holdout, synthetic]
        sides = {"real_asset": real, "holdout_asset": holdout, "release_resource_key": None}
        checks += build_privacy_checks(asset=synthetic, policy="standard", **sides)
    defs = dg.Definitions(assets=assets, asset_checks=checks)
    job = defs.resolve_implicit_global_asset_job_def()
    with dg.instance_for_test() as instance:
        res = job.execute_in_process(instance=instance, run_config=QUIET, tags={RELEASE_ID_TAG: "2024-06"})
        reports = {
            e.asset_key.to_user_string(): (
                Path(e.metadata[REPORT_PATH].value),
                e.metadata[REPORT_SHA256].value,
            )
            for e in res.get_asset_check_evaluations()
            if e.check_name == "privacy_risk_membership"
        }
    assert len({path for path, _ in reports.values()}) == 2, reports
    for path, sha in reports.values():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha  # nothing overwrote it
