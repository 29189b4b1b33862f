"""Tables: column kinds (seed 000 Definition 1), loading through DuckDB, schema inference, validation.

Every table the engine sees is a *canonical* polars frame: the real table's used columns in the real
table's order, numerical columns as Float64 (datetimes as epoch seconds, NaN as null), categorical and
binary columns as String (a missing value stays null and is a category of its own).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

Kind = Literal["numerical", "categorical", "binary"]
KINDS: tuple[str, ...] = ("numerical", "categorical", "binary")
#: a column kind override may also drop a column from every metric
OVERRIDES: tuple[str, ...] = (*KINDS, "exclude")
#: a string/integer column whose values are all distinct is an identifier only from this many rows on
IDENTIFIER_MIN_ROWS = 20
ROLES: tuple[str, ...] = ("real", "synthetic", "holdout")


class TableError(ValueError):
    """Bad input. Its message is one line, meant for the user, and carries no value of a record."""


def redact(message: str) -> str:
    """First line of a library message with quoted literals removed (they may be record values)."""
    line = str(message).strip().splitlines()[0] if str(message).strip() else "no message"
    return re.sub(r"(['\"]).*?\1", "'…'", line)


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind


@dataclass
class Schema:
    """The columns every metric uses, and the ones left out with their reason."""

    columns: list[Column]
    excluded: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def of_kind(self, *kinds: str) -> list[str]:
        return [c.name for c in self.columns if c.kind in kinds]

    def kind(self, name: str) -> Kind:
        for c in self.columns:
            if c.name == name:
                return c.kind
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [{"name": c.name, "kind": c.kind} for c in self.columns],
            "excluded": [{"name": n, "reason": r} for n, r in self.excluded],
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------------------------- loading

TableLike = Any  # polars / pandas DataFrame, pyarrow Table, path, "FILE.duckdb:TABLE", or SQL text


def _is_sql(text: str) -> bool:
    return bool(re.match(r"^\s*(select|with|from|table|values)\b", text, re.IGNORECASE))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read_duckdb(path: str, what: str) -> pl.DataFrame:
    import duckdb

    if not Path(path).is_file():
        raise TableError(f"DuckDB file not found: {path}")
    con = duckdb.connect(path, read_only=True)
    try:
        query = what if _is_sql(what) else f"select * from {_ident(what)}"
        return con.sql(query).pl()
    finally:
        con.close()


def _ident(name: str) -> str:
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def load(source: TableLike, *, role: str = "input") -> pl.DataFrame:
    """Load one table as a polars frame; files and SQL are read through DuckDB (read-only, closed)."""
    import duckdb

    if isinstance(source, pl.DataFrame):
        return source
    if isinstance(source, pl.LazyFrame):
        return source.collect()
    try:
        import pandas as pd

        if isinstance(source, pd.DataFrame):
            return pl.from_pandas(source)
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    try:
        import pyarrow as pa

        if isinstance(source, pa.Table):
            return pl.from_arrow(source)  # type: ignore[return-value]
    except ImportError:  # pragma: no cover
        pass
    if not isinstance(source, (str, Path)):
        raise TableError(f"{role} table: unsupported input type {type(source).__name__}")
    text = str(source)
    try:
        m = re.match(r"^(.*?\.duckdb):(.+)$", text, re.IGNORECASE)
        if m:
            return _read_duckdb(m.group(1), m.group(2))
        if _is_sql(text):
            con = duckdb.connect(":memory:")
            try:
                return con.sql(text).pl()
            finally:
                con.close()
        path = Path(text)
        if not path.is_file():
            raise TableError(f"{role} table: file not found: {text}")
        name = path.name.lower()
        con = duckdb.connect(":memory:")
        try:
            if name.endswith((".parquet", ".pq")):
                return con.sql(f"select * from read_parquet({_quote(str(path))})").pl()
            if name.endswith((".csv", ".csv.gz", ".tsv", ".txt")):
                return con.sql(f"select * from read_csv({_quote(str(path))}, header=true)").pl()
            if name.endswith(".duckdb"):
                raise TableError(f"{role} table: give the table as {text}:TABLE")
            raise TableError(f"{role} table: unsupported file type {path.suffix!r} (CSV, Parquet or FILE.duckdb:TABLE)")
        finally:
            con.close()
    except TableError:
        raise
    except Exception as exc:  # duckdb / polars errors: one line, no values
        raise TableError(f"cannot read {role} table {text}: {redact(str(exc))}") from None


# ----------------------------------------------------------------------------------------- the schema


def _is_text(dtype: pl.DataType) -> bool:
    return dtype in (pl.String, pl.Categorical) or isinstance(dtype, (pl.Enum, pl.Categorical))


def _is_numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Boolean or dtype.is_temporal()


def infer_schema(
    real: pl.DataFrame,
    column_kinds: Mapping[str, str] | None = None,
    *,
    exclude: Sequence[str] = (),
) -> Schema:
    """Column kinds from dtypes and cardinality (documented in docs/metrics.md, "Table model")."""
    overrides = dict(column_kinds or {})
    for name, kind in overrides.items():
        if name not in real.columns:
            raise TableError(f"column kind given for {name!r}, which is not a column of the real table")
        if kind not in OVERRIDES:
            raise TableError(f"column kind {kind!r} for {name!r}: use one of {', '.join(OVERRIDES)}")
    columns: list[Column] = []
    excluded: list[tuple[str, str]] = []
    n = real.height
    for name in real.columns:
        s = real.get_column(name)
        dtype = s.dtype
        if name in exclude:
            excluded.append((name, "excluded by argument"))
            continue
        if overrides.get(name) == "exclude":
            excluded.append((name, "excluded by column kind override"))
            continue
        if name in overrides:
            if overrides[name] == "numerical" and not _is_numeric(dtype):
                raise TableError(f"column {name!r} cannot be numerical: its values are text")
            columns.append(Column(name, overrides[name]))  # type: ignore[arg-type]
            continue
        if s.null_count() == n:
            excluded.append((name, "empty: every value is missing"))
            continue
        distinct = s.drop_nulls().n_unique()
        if dtype == pl.Boolean:
            columns.append(Column(name, "binary"))
        elif dtype.is_temporal():
            columns.append(Column(name, "numerical"))
        elif dtype.is_numeric():
            if dtype.is_integer() and distinct == n and n >= IDENTIFIER_MIN_ROWS:
                excluded.append((name, "identifier: unique per row"))
            else:
                columns.append(Column(name, "binary" if distinct <= 2 else "numerical"))
        elif _is_text(dtype):
            if distinct == n and n >= IDENTIFIER_MIN_ROWS:
                excluded.append((name, "identifier: unique per row"))
            else:
                columns.append(Column(name, "binary" if distinct <= 2 else "categorical"))
        else:
            excluded.append((name, f"unsupported type {dtype}"))
    if not columns:
        raise TableError("the real table has no usable column (numerical, categorical or binary)")
    return Schema(columns, excluded)


def _as_text(s: pl.Series) -> pl.Series:
    """Categorical/binary values as text; numbers that are whole print without a decimal point."""
    if _is_text(s.dtype):
        return s.cast(pl.String)
    if s.dtype == pl.Boolean:
        return s.cast(pl.String)
    if s.dtype.is_numeric():
        f = s.cast(pl.Float64).fill_nan(None)
        whole = f.drop_nulls()
        if whole.len() == 0 or bool(((whole - whole.round(0)).abs() == 0).all()):
            return f.cast(pl.Int64).cast(pl.String)
        return f.cast(pl.String)
    return s.cast(pl.String)


def _as_number(s: pl.Series, *, role: str) -> pl.Series:
    if s.dtype.is_temporal():
        if s.dtype == pl.Date:
            return (s.cast(pl.Int64) * 86400).cast(pl.Float64)
        return s.dt.epoch("ms").cast(pl.Float64) / 1000.0
    if s.dtype == pl.Boolean or s.dtype.is_numeric():
        return s.cast(pl.Float64).fill_nan(None) + 0.0  # + 0.0 turns -0.0 into 0.0 for hashing
    raise TableError(f"column {s.name!r} is numerical in the real table but text in the {role} table")


def canonical(df: pl.DataFrame, schema: Schema, *, role: str) -> pl.DataFrame:
    """The frame restricted to the schema's columns, in its order, with canonical dtypes."""
    out = []
    for c in schema.columns:
        s = df.get_column(c.name)
        out.append(_as_number(s, role=role) if c.kind == "numerical" else _as_text(s))
    return pl.DataFrame(out)


def validate(tables: Mapping[str, pl.DataFrame], schema: Schema, *, ignore: Sequence[str] = ()) -> None:
    """Real, synthetic and holdout checked against each other; raises TableError with one line."""
    real_cols = set(tables["real"].columns)
    used = schema.names
    for role, df in tables.items():
        if df.height == 0:
            raise TableError(f"the {role} table is empty")
        if role == "real":
            if df.height < 2:
                raise TableError("the real table needs at least 2 rows")
            continue
        missing = [c for c in used if c not in df.columns]
        if missing:
            raise TableError(f"the {role} table lacks column(s) of the real table: {', '.join(missing)}")
        extra = [c for c in df.columns if c not in real_cols and c not in ignore]
        if extra:
            raise TableError(f"the {role} table has column(s) not in the real table: {', '.join(extra)}")
        for c in schema.columns:
            dtype = df.get_column(c.name).dtype
            if c.kind == "numerical" and not _is_numeric(dtype):
                raise TableError(f"column {c.name!r} is numerical in the real table but text in the {role} table")


def unseen_categories(real: pl.DataFrame, other: pl.DataFrame, schema: Schema) -> dict[str, int]:
    """Per categorical/binary column, how many rows of `other` hold a category the real table lacks."""
    out: dict[str, int] = {}
    for name in schema.of_kind("categorical", "binary"):
        known = real.get_column(name).unique()
        n = int((~other.get_column(name).is_in(known.implode(), nulls_equal=True)).sum())
        if n:
            out[name] = n
    return out


# ------------------------------------------------------------------------------------- fingerprints


def row_hashes(df: pl.DataFrame) -> np.ndarray:
    """One 64-bit hash per canonical row; equal rows (nulls equal) hash equal across tables."""
    return df.hash_rows(seed=0).to_numpy()


def fingerprint(df: pl.DataFrame) -> str:
    """sha256 over the column names and dtypes and the sorted row hashes: content, not row order."""
    h = hashlib.sha256()
    h.update(repr([(c, str(t)) for c, t in df.schema.items()]).encode())
    h.update(np.sort(row_hashes(df)).tobytes())
    return h.hexdigest()


def table_info(df: pl.DataFrame) -> dict[str, Any]:
    """What an evaluation records of a table: its size and content fingerprint, never its values."""
    return {"rows": df.height, "columns": df.width, "sha256": fingerprint(df)}
