"""Table model (seed 000 Definition 1): kinds, identifiers, missing values, validation, loading."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.data import tables as tb
from dagster_privacy.data.loading import load
from dagster_privacy.evaluate import prepare


def test_kinds_are_inferred_from_dtype_and_cardinality() -> None:
    n = 30
    df = pl.DataFrame(
        {
            "id": list(range(n)),  # integer unique per row → identifier
            "name": [f"p{i}" for i in range(n)],  # text unique per row → identifier
            "age": [20 + i % 7 for i in range(n)],
            "flag": [i % 2 for i in range(n)],  # two values → binary
            "sex": ["F", "M"] * (n // 2),
            "city": ["a", "b", "c"] * (n // 3),
            "when": [dt.date(2020, 1, 1 + i % 5) for i in range(n)],
            "score": np.linspace(0, 1, n),  # floats unique per row stay numerical
            "empty": [None] * n,
        }
    )
    schema = tb.infer_schema(df)
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds == {
        "age": "numerical",
        "flag": "binary",
        "sex": "binary",
        "city": "categorical",
        "when": "numerical",
        "score": "numerical",
    }
    assert dict(schema.excluded) == {
        "id": "identifier: unique per row",
        "name": "identifier: unique per row",
        "empty": "empty: every value is missing",
    }


def test_overrides_win_and_are_checked() -> None:
    df = pl.DataFrame({"edu": [1, 2, 3, 4] * 5, "x": ["a", "b", "c", "d"] * 5})
    schema = tb.infer_schema(df, {"edu": "categorical", "x": "exclude"})
    assert [(c.name, c.kind) for c in schema.columns] == [("edu", "categorical")]
    with pytest.raises(tb.TableError, match="cannot be numerical"):
        tb.infer_schema(df, {"x": "numerical"})
    with pytest.raises(tb.TableError, match="not a column"):
        tb.infer_schema(df, {"nope": "categorical"})
    with pytest.raises(tb.TableError, match="use one of"):
        tb.infer_schema(df, {"x": "ordinal"})


def test_missing_values_never_give_nan() -> None:
    real = pl.DataFrame({"x": [1.0, None, 3.0, 4.0, 5.0], "c": ["a", None, "b", "a", "c"]})
    syn = pl.DataFrame({"x": [None, 2.0, 3.0], "c": [None, "a", "b"]})
    ev = dp.evaluate(real, syn, policy="report-only", progress=False)
    for r in ev:
        assert r.status is not dp.Status.ERROR, (r.id, r.reason)
        if r.status is not dp.Status.NOT_APPLICABLE:  # hidden_rate: no source mapping given
            assert r.value is not None and np.isfinite(r.value), r.id
    # (missing, missing) is a copy of real row 1 (missing equals missing), (3, b) of real row 2
    assert ev["crp"].details["common_rows"] == 2


def test_missing_number_adds_an_indicator_dimension() -> None:
    real = pl.DataFrame({"x": [0.0, None, 10.0, 4.0], "c": ["a", "b", "a", "c"]})
    ctx, _ = prepare(real, real)
    x = ctx.euclidean("real")
    # columns in name order: one-hot of c, then x scaled (the missing one at the median 4 → .4) and its
    # missing indicator; rows in content order, so compared as a set of rows
    expected = np.array([[1, 0, 0, 0, 0], [0, 1, 0, 0.4, 1], [1, 0, 0, 1, 0], [0, 0, 1, 0.4, 0]])
    np.testing.assert_allclose(x[np.lexsort(x.T[::-1])], expected[np.lexsort(expected.T[::-1])], atol=1e-7)


def test_validation_errors_are_one_clear_line() -> None:
    real = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    cases = {
        "lacks column": pl.DataFrame({"a": [1]}),
        "not in the real table": pl.DataFrame({"a": [1], "b": ["x"], "c": [0]}),
        "numerical in the real table; 1 value": pl.DataFrame({"a": ["one"], "b": ["x"]}),
        "is empty": pl.DataFrame({"a": [], "b": []}, schema={"a": pl.Int64, "b": pl.String}),
    }
    for needle, syn in cases.items():
        with pytest.raises(tb.TableError, match=needle) as info:
            dp.evaluate(real, syn, progress=False)
        assert "\n" not in str(info.value)


def test_unseen_category_is_counted_not_an_error() -> None:
    real = pl.DataFrame({"c": ["a", "b", "c", "a"], "x": [1, 2, 3, 4]})
    syn = pl.DataFrame({"c": ["SECRET-NEW", "a"], "x": [1, 2]})
    ev = dp.evaluate(real, syn, policy="report-only", progress=False)
    notes = ev.schema_["notes"]
    assert notes == ["synthetic: categories absent from the real table in c (1 rows)"]
    assert "SECRET-NEW" not in ev.to_json()


def test_load_csv_parquet_duckdb_and_sql(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # SQL text may read files under the working directory only
    df = pl.DataFrame({"age": [30, 40, 50], "sex": ["F", "M", "F"]})
    df.write_csv(tmp_path / "t.csv")
    df.write_parquet(tmp_path / "t.parquet")
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.sql("create table people as select * from read_parquet('" + str(tmp_path / "t.parquet") + "')")
    con.close()
    for src in (
        tmp_path / "t.csv",
        tmp_path / "t.parquet",
        f"{tmp_path / 'db.duckdb'}:people",
        f"{tmp_path / 'db.duckdb'}:select * from people",
        f"select * from read_csv('{tmp_path / 't.csv'}')",
    ):
        got = load(src)
        assert got.sort("age").to_dicts() == df.to_dicts(), src
    # the DuckDB file is closed again: a read-write connection can open it
    duckdb.connect(str(tmp_path / "db.duckdb")).close()


def test_load_errors_are_one_line_without_values(tmp_path) -> None:
    with pytest.raises(tb.TableError, match="file not found"):
        load(tmp_path / "missing.csv", role="real")
    with pytest.raises(tb.TableError, match="unsupported file type"):
        (tmp_path / "x.xlsx").write_text("x")
        load(tmp_path / "x.xlsx")
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.sql("create table t as select 'CANARY-42' as v")
    con.close()
    with pytest.raises(tb.TableError) as info:
        load(f"{tmp_path / 'db.duckdb'}:select cast(v as integer) from t")
    assert "CANARY-42" not in str(info.value) and "\n" not in str(info.value)


def test_fingerprint_is_content_not_order() -> None:
    df = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    assert tb.fingerprint(df) == tb.fingerprint(df.reverse())
    assert tb.fingerprint(df) != tb.fingerprint(df.with_columns(pl.lit(9).alias("a")))


def test_numbers_as_categories_print_alike_across_dtypes() -> None:
    real = pl.DataFrame({"edu": [9, 10, 13, 13]})
    syn = pl.DataFrame({"edu": [9.0, 13.0]})  # floats in the synthetic table, integers in the real one
    ev = dp.evaluate(
        real, syn, column_kinds={"edu": "categorical"}, metrics=["crp"], policy="report-only", progress=False
    )
    assert ev["crp"].details["common_rows"] == 2


def test_a_whole_number_prints_alike_whether_or_not_its_table_holds_fractions() -> None:
    # review: 17.0 printed "17" in a table of whole numbers and "17.0" beside 0.5, so a copy of a real
    # row sat at Hamming distance 1 from it in gcap (a value's text now depends on the value only)
    real = pl.DataFrame({"k": [17.0, 18.0, 19.0], "s": [1, 2, 1]})
    syn = pl.DataFrame({"k": [17.0, 0.5, 2.5], "s": [1, 2, 2]})
    kinds = {"k": "categorical", "s": "categorical"}
    ctx, _ = prepare(real, syn, column_kinds=kinds)
    assert sorted(ctx.table("real").get_column("k")) == ["17", "18", "19"]
    assert sorted(ctx.table("synthetic").get_column("k")) == ["0.5", "17", "2.5"]
    ev = dp.evaluate(
        real, syn, metrics=["gcap"], policy="report-only", progress=False,
        key_columns=["k"], sensitive_columns=["s"], column_kinds=kinds,
    )  # fmt: skip
    # distances to the nearest synthetic key: 0 (the copy of 17), 1, 1
    assert ev["gcap"].details["per_column"]["s"]["mean_hamming_distance"] == pytest.approx(2 / 3)


def test_a_table_wider_than_the_limit_is_refused_in_one_line_before_parsing(tmp_path) -> None:
    """Issue 31 case 6: 5 rows × 10,000 columns (159 KB) exhausted memory and took minutes to sniff; it
    is refused from its header line (exit 2 in the CLI), and so is a frame of that width."""
    import time

    import polars as pl

    from dagster_privacy.data.loading import MAX_COLUMNS, load
    from dagster_privacy.errors import TableError

    wide = tmp_path / "wide.csv"
    wide.write_text(
        ",".join(f"c{i}" for i in range(10_000)) + "\n" + "\n".join(",".join("1" * 10_000) for _ in range(5))
    )
    t0 = time.perf_counter()
    with pytest.raises(TableError, match="10,000 columns; at most 1,000"):
        load(str(wide), role="real")
    assert time.perf_counter() - t0 < 5
    with pytest.raises(TableError, match="columns; at most"):
        load(pl.DataFrame({f"c{i}": [1] for i in range(MAX_COLUMNS + 1)}), role="synthetic")
    ok = pl.DataFrame({f"c{i}": [1, 2] for i in range(MAX_COLUMNS)})
    assert load(ok, role="real").width == MAX_COLUMNS


def test_occurrence_numbers_copies_by_position() -> None:
    keys = np.array([5, 3, 5, 5, 3, 9], dtype=np.uint64)
    assert tb.occurrence(keys).tolist() == [0, 0, 1, 2, 1, 0]
