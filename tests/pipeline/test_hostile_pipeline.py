"""Hostile input through the Dagster side (issue 18): the read-only resource runs one SELECT and
nothing else; error paths (a failing table asset, a failing check, a refused publication) leave no
record value in check metadata or anywhere in Dagster's event log; a copied identifier blocks
publication; a clean release with categories the real table lacks still publishes."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from conftest import Release
from dagster._serdes import serialize_value
from test_pipeline import (
    CANARY,
    POLICY,
    PUB,
    SYN,
    evaluations,
    make_defs,
    materialized,
    published_ids,
    run,
    step_failures,
    write_db,
)

from dagster_privacy.calibration import leaky_split
from dagster_privacy.data.tables import TableError
from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import ReadOnlyDuckDB


def event_log(instance: dg.DagsterInstance, res: dg.ExecuteInProcessResult) -> str:
    """Every record Dagster stored for the run, serialised (messages, errors, metadata)."""
    return "\n".join(serialize_value(e) for e in instance.all_logs(res.run_id))


def planted(df: pl.DataFrame, column: str, value: str, every: int = 40) -> pl.DataFrame:
    return df.with_columns(
        pl.when(pl.int_range(pl.len()) % every == 0)
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )


@pytest.mark.parametrize(
    "sql",
    [
        "select 1; copy (select * from real) to '{d}/out.csv'",
        "copy (select * from real) to '{d}/out.csv'",
        "attach '{d}/evil.duckdb' as e",
        "install httpfs",
        "select * from read_csv('/etc/passwd')",
    ],
    ids=["stacked-copy", "copy", "attach", "install", "outside-file"],
)
def test_resource_runs_one_select_and_nothing_else(tmp_path: Path, release: Release, sql: str) -> None:
    db = ReadOnlyDuckDB(database=str(write_db(tmp_path / "release.duckdb", real=release.real)))
    with pytest.raises(TableError) as info:
        db.read(sql.format(d=tmp_path), role="real")
    assert "\n" not in str(info.value) and str(tmp_path) not in str(info.value)  # the query is not echoed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.duckdb"]  # nothing written
    in_memory = ReadOnlyDuckDB(allowed_directories=[str(tmp_path)])
    with pytest.raises(TableError):
        in_memory.read(sql.format(d=tmp_path), role="real")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.duckdb"]


def test_failing_table_asset_leaves_no_value_in_the_event_log(tmp_path: Path, release: Release) -> None:
    """A view that casts a real text column to a number fails; DuckDB's message quotes the value."""
    real = planted(release.real, "native-country", CANARY)
    db = write_db(tmp_path / "release.duckdb", real=real, holdout=release.holdout, synthetic=release.clean)
    con = duckdb.connect(str(db))
    con.execute('create view real_cast as select cast("native-country" as integer) as code, * from real')
    con.close()
    instance = dg.DagsterInstance.ephemeral()
    res = run(make_defs(tmp_path, real="real_cast"), instance)
    assert not res.success and "published_release" not in materialized(res)
    failures = step_failures(res)
    assert failures and any("ConversionException" in f for f in failures)
    assert CANARY not in event_log(instance, res)


def test_failing_check_leaves_no_value_in_metadata_or_the_event_log(
    tmp_path: Path, release: Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses
    import sys

    reg = sys.modules["dagster_privacy.metrics.registration"]._REGISTRY

    def boom(ctx, **params):  # a library error quoting a value bare, in brackets and with an apostrophe
        raise ValueError(f"value 31337731 [1.0000e19] O'BRIEN {CANARY} not understood")

    monkeypatch.setitem(reg, "dcr_percentile", dataclasses.replace(reg["dcr_percentile"], func=boom))
    write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout, synthetic=release.clean)
    instance = dg.DagsterInstance.ephemeral()
    res = run(make_defs(tmp_path), instance)
    gate = evaluations(res)["dcr_percentile"]  # a gate of standard's
    assert not gate.passed and "published_release" not in materialized(res)
    log = event_log(instance, res)
    for secret in (CANARY, "31337731", "1.0000e19", "O'BRIEN"):
        assert secret not in serialize_value(gate) and secret not in log, secret


def test_refused_publication_leaves_no_value_in_the_event_log(tmp_path: Path, release: Release) -> None:
    real = planted(release.real, "workclass", CANARY)
    write_db(tmp_path / "release.duckdb", real=real, holdout=release.holdout, synthetic=release.leaky)
    instance = dg.DagsterInstance.ephemeral()
    defs = make_defs(tmp_path)
    run(defs, instance)  # the leaky release fails crp
    res = run(defs, instance, selection=[PUB])  # publication alone re-verifies and refuses
    assert not res.success and any("publication refused" in f for f in step_failures(res))
    assert CANARY not in event_log(instance, res)


def test_copied_identifier_column_blocks_publication(tmp_path: Path, release: Release) -> None:
    """Issue 18 case 2: an ssn column (unique per row, so no metric uses it) copied from the real table."""
    real = release.real.with_columns(pl.format("555-01-{}", pl.int_range(pl.len())).alias("ssn"))
    syn = release.clean.with_columns(
        pl.Series("ssn", real.get_column("ssn").to_list()[: release.clean.height])
    )
    write_db(
        tmp_path / "release.duckdb",
        real=real,
        holdout=release.holdout.with_columns(pl.format("999-{}", pl.int_range(pl.len())).alias("ssn")),
        synthetic=syn,
    )
    instance = dg.DagsterInstance.ephemeral()
    res = run(make_defs(tmp_path, schema_gate=True), instance)
    gate = evaluations(res)["schema_gate"]
    assert evaluations(res)["crp"].passed and not gate.passed  # the metrics see nothing: the gate does
    rows = {(r.data["expectation"], r.data["column"]): r.data for r in gate.metadata["results"].records}
    assert rows[("left_out_column_holds_no_real_value", "ssn")]["unexpected_count"] == syn.height
    assert "published_release" not in materialized(res) and not (tmp_path / "published.duckdb").exists()
    assert "555-01-" not in event_log(instance, res)


def test_clean_release_with_unseen_categories_publishes_and_leaky_is_blocked(tmp_path: Path) -> None:
    """Issue 18 case 10: the leaky model at f = 0 (real records the generator never saw) holds categories
    the training table lacks; they are counted, not blocking. At f = 0.3 crp blocks."""
    data = load_demo().head(1200)
    clean, leaky = leaky_split(data, 0.0, seed=1), leaky_split(data, 0.3, seed=1)
    write_db(tmp_path / "release.duckdb", real=clean.train, holdout=clean.control, synthetic=clean.synthetic)
    instance = dg.DagsterInstance.ephemeral()
    defs = make_defs(tmp_path, schema_gate=True, policy=POLICY)
    res = run(defs, instance)
    gate = evaluations(res)["schema_gate"]
    assert gate.passed and res.success, gate.description
    assert gate.metadata["unseen_category_values"].value > 0  # counted: the test covers the case
    assert published_ids(tmp_path / "published.duckdb")
    write_db(tmp_path / "release.duckdb", real=leaky.train, holdout=leaky.control, synthetic=leaky.synthetic)
    res = run(defs, instance)
    assert not res.success and not evaluations(res)["crp"].passed
    assert "published_release" not in materialized(res)
    assert SYN.to_user_string() in materialized(res)


def test_publication_that_cannot_write_fails_with_one_safe_line(tmp_path: Path, release: Release) -> None:
    from dagster_privacy.pipeline import ReleaseSettings, build_release_definitions

    write_db(tmp_path / "release.duckdb", real=release.real, holdout=release.holdout, synthetic=release.clean)
    (tmp_path / "a-file").write_text("not a directory")
    settings = ReleaseSettings(
        database=str(tmp_path / "release.duckdb"),
        policy=POLICY,
        schema_gate=False,
        publish_target=str(tmp_path / "a-file" / "published.duckdb"),
    )
    res = run(
        build_release_definitions(settings=settings, on_evaluation=None), dg.DagsterInstance.ephemeral()
    )
    assert not res.success and "published_release" not in materialized(res)
    failures = step_failures(res)
    assert any(
        "Failure: publication failed, nothing was replaced: FileExistsError (a file or directory" in f
        for f in failures
    ), failures
