"""A copy is a copy whichever way each side arrived (issue 44, break 0): the column kinds are decided once,
from the real table, and every side is read into them. Each pair of CSV, Parquet, DuckDB, PostgreSQL,
pandas and polars, with booleans, integers stored as text, dates, decimals and categorical codes."""

from __future__ import annotations

import decimal
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from postgres_server import create_database

from dagster_privacy.data import postgres
from dagster_privacy.data import tables as tb
from dagster_privacy.errors import TableError
from dagster_privacy.evaluate import prepare
from dagster_privacy.pipeline.demo_run import write_tables

N = 48


def _text_table(seed: int) -> pl.DataFrame:
    """Every cell as text, as a spreadsheet export would give it."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "member": rng.choice(["yes", "no"], N).tolist(),
            "visits": [str(v) for v in rng.integers(0, 9, N)],
            "seen": [f"2021-03-{d:02d}" for d in rng.integers(1, 29, N)],
            "fee": [f"{v:.2f}" for v in rng.choice([12.5, 7.25, 30.0, 99.99], N)],
            "region": [f"{v:02d}" for v in rng.integers(1, 6, N)],
            "plan": rng.choice(["basic", "plus", "pro"], N).tolist(),
        }
    )


def _typed(df: pl.DataFrame) -> pl.DataFrame:
    """The same values in the types a warehouse would give them."""
    return df.with_columns(
        pl.col("member") == "yes",
        pl.col("visits").cast(pl.Int64),
        pl.col("seen").str.to_date(),
        pl.col("fee").cast(pl.Decimal(10, 2)),
        pl.col("region").cast(pl.Int32),
    )


def _as_csv(df: pl.DataFrame, where: Path, name: str) -> str:
    df.write_csv(where / f"{name}.csv")
    return str(where / f"{name}.csv")


def _as_parquet(df: pl.DataFrame, where: Path, name: str) -> str:
    df.write_parquet(where / f"{name}.parquet")  # text stays text
    return str(where / f"{name}.parquet")


def _as_duckdb(df: pl.DataFrame, where: Path, name: str) -> str:
    write_tables(where / "tables.duckdb", {name: _typed(df)})
    return f"{where / 'tables.duckdb'}:{name}"


def _as_pandas(df: pl.DataFrame, where: Path, name: str):
    return df.to_pandas()  # object columns of text


def _as_polars(df: pl.DataFrame, where: Path, name: str):
    return _typed(df)


FORMATS: dict[str, Callable] = {
    "csv": _as_csv,
    "parquet": _as_parquet,
    "duckdb": _as_duckdb,
    "pandas": _as_pandas,
    "polars": _as_polars,
}


def _copies(real, synthetic) -> int:
    """Synthetic rows equal to a real row, as the exact-match metrics see them (canonical row hashes)."""
    ctx, _ = prepare(real, synthetic)
    return int(np.isin(tb.row_hashes(ctx.table("synthetic")), tb.row_hashes(ctx.table("real"))).sum())


@pytest.fixture(scope="module")
def sides() -> tuple[pl.DataFrame, pl.DataFrame]:
    train = _text_table(0)
    fresh = _text_table(1).with_columns(pl.lit("elite").alias("plan"))  # never a training row
    return train, pl.concat([train.head(10), fresh.head(20)])  # 10 verbatim copies


@pytest.mark.parametrize("real_as", list(FORMATS))
@pytest.mark.parametrize("synthetic_as", list(FORMATS))
def test_a_copy_is_a_copy_whichever_way_each_side_arrived(real_as, synthetic_as, sides, tmp_path) -> None:
    train, synthetic = sides
    real = FORMATS[real_as](train, tmp_path, "real")
    syn = FORMATS[synthetic_as](synthetic, tmp_path, "synthetic")
    assert _copies(real, syn) == 10


def test_postgres_sides_against_every_other(pg, sides, tmp_path) -> None:
    train, synthetic = sides
    uri = create_database(pg, "arrival")
    postgres.replace_tables(uri, {"real": _typed(train), "synthetic": _typed(synthetic)})
    for name, fmt in FORMATS.items():
        assert _copies(f"{uri}?table=real", fmt(synthetic, tmp_path, "synthetic")) == 10, name
        assert _copies(fmt(train, tmp_path, "real"), f"{uri}?table=synthetic") == 10, name


def test_booleans_read_from_words_and_from_zero_one(sides) -> None:
    train, _ = sides
    real = _typed(train)  # member as Boolean
    words = train.head(5).with_columns(pl.col("member").str.to_uppercase())  # YES / NO
    digits = train.head(5).with_columns(
        pl.when(pl.col("member") == "yes").then(1).otherwise(0).alias("member")
    )
    assert _copies(real, words) == 5
    assert _copies(real, _typed(train.head(5)).with_columns(pl.col("member").cast(pl.Int8))) == 5
    assert _copies(real, digits.with_columns(pl.col("member").cast(pl.String))) == 5


@pytest.mark.parametrize(
    ("column", "value", "what"),
    [("visits", "seven", "numbers"), ("seen", "the 3rd of May", "datetimes")],
)
def test_a_value_that_cannot_be_read_as_the_real_table_holds_it_is_bad_input(
    column, value, what, sides
) -> None:
    train, synthetic = sides
    bad = synthetic.with_columns(pl.lit(value).alias(column))
    with pytest.raises(TableError, match=f"{column!r} is numerical in the real table; 30 value.*{what}") as e:
        prepare(_typed(train), bad)
    assert value not in str(e.value)


def test_a_boolean_column_refuses_other_numbers(sides) -> None:
    train, synthetic = sides
    bad = _typed(synthetic).with_columns(pl.lit(7).alias("member"))
    with pytest.raises(TableError, match="'member' holds booleans in the real table; 30 value"):
        prepare(_typed(train), bad)


def test_the_cli_fails_a_csv_against_parquet_leak(sides, tmp_path) -> None:
    """The break as found: CSV training and holdout sides, a Parquet release carrying copies."""
    train, synthetic = sides
    big = pl.concat([_text_table(s) for s in range(2, 8)]).with_row_index("i")
    big = big.with_columns(pl.col("plan") + "-" + (pl.col("i") % 40).cast(pl.String)).drop("i")
    holdout, release = big.slice(0, 120), big.slice(120, 120)
    real = pl.concat([train, big.slice(240, 40)])
    leak = pl.concat([release, real.head(60)])
    real.write_csv(tmp_path / "train.csv")
    holdout.write_csv(tmp_path / "holdout.csv")
    leak.write_parquet(tmp_path / "leak.parquet")
    out = tmp_path / "ev.json"
    run = subprocess.run(
        [
            sys.executable, "-m", "dagster_privacy.cli", "evaluate", "--real", str(tmp_path / "train.csv"),
            "--synthetic", str(tmp_path / "leak.parquet"), "--holdout", str(tmp_path / "holdout.csv"),
            "--metrics", "crp,ims", "--json", str(out),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    doc = json.loads(out.read_text())
    values = {m["id"]: m["value"] for m in doc["metrics"]}
    assert values["crp"] >= 60 / 180 - 1e-9 and values["ims"] > 0.5, values
    assert run.returncode == 1, run.stdout + run.stderr


def test_decimal_and_text_numbers_are_one_value() -> None:
    real = pl.DataFrame(
        {"x": [decimal.Decimal("1.50"), decimal.Decimal("2.25")] * 15, "c": ["a", "b", "c"] * 10}
    )
    syn = pl.DataFrame({"x": ["1.5", " 2.250 "] * 3, "c": ["a", "b", "c"] * 2})
    assert _copies(real, syn) == 6


@pytest.mark.parametrize(
    "respell",
    [
        str.upper,
        lambda e: e + ".",
        lambda e: " " + e.replace(".", " . ") + " ",
        lambda e: e.replace("e", "é").replace("a", "à"),
        lambda e: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in e),  # full width
    ],
    ids=["upper", "trailing-dot", "spaces", "accents", "fullwidth"],
)
def test_an_identifier_published_under_another_spelling_is_found(respell) -> None:
    """Issue 44, break 3: a left-out identifier is compared in its normalised form."""
    emails = [f"p.{i}@ex.org" for i in range(30)]
    real = pl.DataFrame({"email": emails, "plan": ["a", "b", "c"] * 10})
    syn = pl.DataFrame({"email": [respell(e) for e in emails[:7]], "plan": ["a"] * 7})
    ctx, _ = prepare(real, syn)
    assert ("email", "identifier: unique per row") in ctx.schema.excluded
    assert ctx.schema.left_out["email"] == 7


def test_different_identifiers_stay_different() -> None:
    real = pl.DataFrame({"email": [f"p.{i}@ex.org" for i in range(30)], "plan": ["a", "b"] * 15})
    syn = pl.DataFrame({"email": [f"p.{i}@ex.net" for i in range(5)], "plan": ["a"] * 5})
    ctx, _ = prepare(real, syn)
    assert ctx.schema.left_out["email"] == 0


@pytest.mark.parametrize(
    ("real_values", "respell"),
    [
        ([f"{100 + i:03d}-45-{6789 + i:04d}" for i in range(30)], lambda v: v.replace("-", "")),
        ([f"{100 + i:03d}45{6789 + i:04d}" for i in range(30)], lambda v: f"{v[:3]}-{v[3:5]}-{v[5:]}"),
        ([f"+1 (555) 123-{4000 + i}" for i in range(30)], lambda v: "".join(c for c in v if c.isdigit())),
        ([f"p.{i}@ex.org" for i in range(30)], lambda v: v.replace("@", "%40")),
        ([f"p.{i}@ex.org" for i in range(30)], lambda v: v.replace("@", "&#64;")),
        ([f"p.{i}@ex.org" for i in range(30)], lambda v: v[:2] + "\u3164" + v[2:]),
        ([f"AC-{i:06d}" for i in range(30)], lambda v: v.replace("-", "")),
    ],
    ids=["ssn-digits", "digits-ssn", "phone-digits", "percent-at", "entity-at", "hangul-filler", "account"],
)
def test_identifier_spellings_of_the_second_review(real_values, respell) -> None:
    real = pl.DataFrame({"id": real_values, "plan": ["a", "b", "c"] * 10})
    syn = pl.DataFrame({"id": [respell(v) for v in real_values[:7]], "plan": ["a"] * 7})
    ctx, _ = prepare(real, syn)
    assert ctx.schema.left_out["id"] == 7


def test_sixteen_digit_identifiers_that_differ_are_different() -> None:
    real = pl.DataFrame({"id": [4000_0000_0000_0000 + i for i in range(30)], "plan": ["a", "b"] * 15})
    syn = pl.DataFrame({"id": [4000_0000_0000_0000 + 100 + i for i in range(7)], "plan": ["a"] * 7})
    ctx, _ = prepare(real, syn)
    assert ctx.schema.left_out["id"] == 0  # float32 merged them (second review)


def test_booleans_spelled_y_n_or_on_off_read_and_other_text_is_refused(sides) -> None:
    train, _ = sides
    real = _typed(train)  # member as Boolean
    yn = train.head(5).with_columns(pl.col("member").replace({"yes": "Y", "no": "N"}))
    onoff = train.head(5).with_columns(pl.col("member").replace({"yes": "on", "no": "off"}))
    assert _copies(real, yn) == 5 and _copies(real, onoff) == 5
    maybe = train.head(5).with_columns(pl.lit("maybe").alias("member"))
    with pytest.raises(TableError, match="'member' holds booleans in the real table; 1 distinct"):
        prepare(real, maybe)
