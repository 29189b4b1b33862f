"""``privacy_lineage`` in Dagster (issue 56), as the docs write it: a monthly-partitioned synthetic table
re-released by a monthly schedule, each month's release 800 unseen rows plus 7 other unique training
records copied verbatim (one of them holds a canary). Each month passes alone; the lineage (named by the
real asset) blocks the fourth, which is not published; the check's figures are numeric metadata with no
real value; a re-run of a month is judged as before and not recorded twice; the officer console's
lineage page shows the months."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "lineage"))
from lineage_data import FRESH, POLICY_YAML, copies, split, with_canary  # noqa: E402
from test_console import PASSWORD, Client, Served  # noqa: E402

from dagster_privacy.lineage import FileLedger, releases  # noqa: E402
from dagster_privacy.lineage.names import key_folder, lineage_key  # noqa: E402
from dagster_privacy.pipeline import PublishTarget, build_privacy_checks, build_published_release  # noqa: E402

MONTHS = dg.MonthlyPartitionsDefinition(start_date="2026-01-01", end_date="2026-07-01")
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
K = 7
CANARY = "CANARY-DAGSTER-LINEAGE-9e0a"


def _month(i: int, train: pl.DataFrame) -> pl.DataFrame:
    """Month ``i``'s release: its own draw of unseen rows, then K training records copied verbatim."""
    import numpy as np

    unseen = split().unseen
    rng = np.random.default_rng([56, i])
    fresh = unseen[np.sort(rng.choice(unseen.height, FRESH, replace=False))]
    return pl.concat([fresh, train[np.sort(copies(i, K))]])


def _defs(work: Path) -> dg.Definitions:
    s = split()
    train = with_canary(CANARY)[0]
    months = MONTHS.get_partition_keys()

    @dg.asset
    def real_table() -> pl.DataFrame:
        return train

    @dg.asset
    def holdout_table() -> pl.DataFrame:
        return s.holdout

    @dg.asset(partitions_def=MONTHS)
    def synthetic_table(context) -> pl.DataFrame:  # noqa: ANN001
        return _month(months.index(context.partition_key), train)

    policy = yaml.safe_load(POLICY_YAML)
    checks = build_privacy_checks(asset=synthetic_table, policy=policy, real_asset=real_table,
                                  holdout_asset=holdout_table, release_resource_key=None, on_evaluation=None,
                                  lineage=True, ledger=str(work / "ledger.duckdb"))  # fmt: skip
    published = build_published_release(
        synthetic_asset=synthetic_table,
        required_checks=["privacy_lineage", "privacy_risk_membership"],
        real_asset=real_table,
        holdout_asset=holdout_table,
        key="published_month",
    )
    monthly = dg.define_asset_job("monthly", selection=dg.AssetSelection.assets(synthetic_table, published))
    return dg.Definitions(
        assets=[real_table, holdout_table, synthetic_table, published],
        asset_checks=checks,
        jobs=[monthly],
        schedules=[dg.build_schedule_from_partitioned_job(monthly)],
        resources={
            "io_manager": dg.FilesystemIOManager(base_dir=str(work / "storage")),
            "publish_target": PublishTarget(path=str(work / "published")),
        },
    )


def _lineage_result(run: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    return next(e for e in run.get_asset_check_evaluations() if e.check_name == "privacy_lineage")


def test_a_monthly_release_is_blocked_when_its_copies_tip_the_lineage(tmp_path) -> None:
    defs = _defs(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    instance = dg.DagsterInstance.local_temp(tempdir=str(home))
    defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=[dg.AssetKey("real_table"), dg.AssetKey("holdout_table")],
        run_config=QUIET,
    )  # fmt: skip
    job = defs.resolve_job_def("monthly")
    assert defs.resolve_schedule_def("monthly_schedule").cron_schedule.startswith("0 0 1 * *")
    outcome = {}
    for month in MONTHS.get_partition_keys():
        run = job.execute_in_process(instance=instance, partition_key=month, raise_on_error=False,
                                     run_config=QUIET)  # fmt: skip
        lin = _lineage_result(run)
        risk = next(e for e in run.get_asset_check_evaluations() if e.check_name == "privacy_risk_membership")
        assert risk.passed, f"{month} passes alone"
        keys = {e.asset_key for e in run.get_asset_materialization_events()}
        published = dg.AssetKey("published_month") in keys
        outcome[month] = (lin.passed, published, lin.metadata)
        if not lin.passed:
            break
    blocked = [m for m, (ok, _, _) in outcome.items() if not ok]
    assert len(blocked) == 1 and list(outcome).index(blocked[0]) == 3, outcome.keys()  # the fourth month
    assert all(pub for m, (ok, pub, _) in outcome.items() if ok)
    assert not outcome[blocked[0]][1], "the blocked month is not published"
    meta = outcome[blocked[0]][2]
    assert meta["lineage/name"].value == "real_table"
    for k in ("lineage/people", "lineage/look", "lineage/chance", "lineage/added_people"):
        assert isinstance(meta[k].value, int | float), k
    assert meta["lineage/recorded"].value == "refused"
    assert all(CANARY not in str(v.value) for _, _, m in outcome.values() for v in m.values())
    # the ledger holds the months before, published (their reservations committed by the publication),
    # and the blocked one, refused
    path = tmp_path / "ledger.duckdb"
    key = lineage_key(key_folder(path), "real_table", create=False)
    rel = releases(FileLedger(path).entries("real_table", key))
    assert [r.status for r in rel] == ["published"] * (len(outcome) - 1) + ["refused"]
    # a re-run of a passing month: judged as before, not recorded again
    first = MONTHS.get_partition_keys()[0]
    again = job.execute_in_process(instance=instance, partition_key=first, raise_on_error=False,
                                   run_config=QUIET)  # fmt: skip
    assert _lineage_result(again).passed
    again_rel = releases(FileLedger(path).entries("real_table", key))
    assert len(again_rel) == len(rel) and again_rel[0].status == "published"
    assert len(FileLedger(path).entries("real_table", key)) == 2 * (len(outcome) - 1) + 1  # no second commit
    assert CANARY.encode() not in path.read_bytes()
    _the_console_shows_the_months(home, path, tmp_path)


def _the_console_shows_the_months(home: Path, ledger: Path, tmp_path: Path) -> None:
    from dagster_privacy.console import ConsoleSettings
    from dagster_privacy.console.identity import Users

    users = tmp_path / "users.json"
    Users(users).add("dana", "officer", PASSWORD)
    served = Served(ConsoleSettings(instance_dir=str(home), users=str(users), ledger=str(ledger)))
    try:
        dana = Client(served.url)
        assert dana.login("dana") == 303
        status, _, body = dana.request("/lineage/real_table")
    finally:
        served.stop()
    assert status == 200 and "4 release(s), hash chain intact" in body and CANARY not in body
    assert body.count(">published<") == 3 and body.count(">refused<") == 1


def test_a_lineage_without_a_count_or_a_holdout_is_refused_at_definition() -> None:
    @dg.asset
    def synthetic() -> pl.DataFrame:
        return split().train

    with pytest.raises(dg.DagsterInvalidDefinitionError, match="exposed_records and a holdout"):
        build_privacy_checks(asset=synthetic, policy=yaml.safe_load(POLICY_YAML), real="real", lineage=True)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="lineage name"):
        build_privacy_checks(asset=synthetic, policy=yaml.safe_load(POLICY_YAML), real="real", holdout="h",
                             lineage="../x")  # fmt: skip


def test_a_pipeline_publishing_to_postgresql_keeps_its_lineage_there(pg, tmp_path) -> None:
    """ReleaseSettings as docs/lineage.md writes it: tables in PostgreSQL, publication to another
    PostgreSQL database, lineage=True and no ledger given: the ledger is the table lineage_ledger of the
    publication database, its keys beside the instance; each passing release is committed as published."""
    from postgres_server import create_database

    from dagster_privacy.data import postgres
    from dagster_privacy.lineage import open_ledger
    from dagster_privacy.pipeline import ReleaseSettings, build_release_definitions
    from dagster_privacy.pipeline.resources import RELEASE_ID_TAG

    src, pub = create_database(pg, "lineage_src"), create_database(pg, "lineage_pub")
    s = split()
    postgres.replace_tables(src, {"real": s.train, "holdout": s.holdout})
    (tmp_path / "policy.yaml").write_text(POLICY_YAML)
    settings = ReleaseSettings(database=src, policy=str(tmp_path / "policy.yaml"), publish_target=pub,
                               lineage=True)  # fmt: skip
    assert settings.ledger_location == pub
    job = build_release_definitions(settings=settings).resolve_job_def("privacy_release_job")
    home = tmp_path / "home"
    home.mkdir()
    instance = dg.DagsterInstance.local_temp(tempdir=str(home))
    for i in range(2):
        postgres.replace_tables(src, {"synthetic": _month(i, s.train)})
        run = job.execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET,
                                     tags={RELEASE_ID_TAG: f"m{i}"})  # fmt: skip
        lin = _lineage_result(run)
        assert lin.passed and lin.metadata["lineage/ledger"].value == pub
        assert lin.metadata["lineage/name"].value == "table:real"
    led = open_ledger(pub, home=home / "dagster_privacy")
    rel = releases(led.entries("table:real", led.key("table:real")))
    assert [(r.release_id, r.status) for r in rel] == [("m0", "published"), ("m1", "published")]
    assert not (home / "dagster_privacy" / "ledger.duckdb").exists()  # no second ledger beside it
