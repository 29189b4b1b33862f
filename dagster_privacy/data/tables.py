"""Tables: column kinds (seed 000 Definition 1), loading through DuckDB, schema inference, validation.

Every table the engine sees is a *canonical* polars frame: the real table's used columns in the real
table's order, numerical columns as Float64 (datetimes as epoch seconds, NaN as null), categorical and
binary columns as String (a missing value stays null and is a category of its own).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import polars as pl

from ..errors import TableError
from ..results import TableInfo
from .values import (  # noqa: F401 - _is_text: loading.py reads it here
    DATETIME_FORMATS,
    _as_number,
    _as_text,
    _is_numeric,
    _is_text,
    _parse_datetimes,
)

Kind = Literal["numerical", "categorical", "binary"]
KINDS: tuple[str, ...] = ("numerical", "categorical", "binary")
#: a column kind override may also drop a column from every metric, or parse text as datetimes
#: ("datetime" detects the format, "datetime:%Y-%m-%d" gives it)
OVERRIDES: tuple[str, ...] = (*KINDS, "exclude", "datetime")
#: a string/integer column whose values are all distinct is an identifier only from this many rows on
IDENTIFIER_MIN_ROWS = 20
#: free text: a text column whose values are mostly distinct (at least this share) and long (at least
#: this many characters on average) is left out, like an identifier
FREE_TEXT_DISTINCT = 0.5
FREE_TEXT_LENGTH = 20
#: a categorical column with more distinct real values than this is high-cardinality: its one-hot block
#: keeps the HIGH_CARDINALITY − 1 most frequent categories and one "other" dimension, and singling-out
#: predicates do not use it (docs/metrics.md, "Table model")
HIGH_CARDINALITY = 100
ROLES: tuple[str, ...] = ("real", "synthetic", "holdout")


@dataclass(frozen=True)
class Column:
    name: str
    kind: Kind
    #: a numerical column stored as text: the datetime format its values parse with
    format: str | None = None
    #: how the real table holds it ("boolean", "number", "time", "text"): every side is read into it
    reads: str = "text"


@dataclass
class Schema:
    """The columns every metric uses, and the ones left out with their reason."""

    columns: list[Column]
    excluded: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: per left-out column the synthetic table holds: its synthetic values found in the real column
    #: (None: could not be compared); any overlap fails the verdict (the column is never evaluated)
    left_out: dict[str, int | None] = field(default_factory=dict)
    #: left-out identifier columns judged surrogate keys (surrogate.py): name → why; no leak
    surrogates: dict[str, str] = field(default_factory=dict)

    @property
    def left_out_leaks(self) -> list[str]:
        """Left-out columns whose synthetic values occur in the real table (or could not be compared),
        but for surrogate keys (row numbers that link no one)."""
        return [n for n, k in self.left_out.items() if (k is None or k > 0) and n not in self.surrogates]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def of_kind(self, *kinds: str) -> list[str]:
        return [c.name for c in self.columns if c.kind in kinds]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def kind(self, name: str) -> Kind:
        for c in self.columns:
            if c.name == name:
                return c.kind
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [
                {
                    "name": c.name,
                    "kind": c.kind,
                    **({"reads": c.reads} if c.reads != "text" else {}),
                    **({"format": c.format} if c.format else {}),
                }
                for c in self.columns
            ],
            "excluded": [
                {
                    "name": n,
                    "reason": r,
                    **({"synthetic_values_in_real": self.left_out[n]} if n in self.left_out else {}),
                    **({"judged": "surrogate key"} if n in self.surrogates else {}),
                }
                for n, r in self.excluded
            ],
            "notes": list(self.notes),
        }


# ----------------------------------------------------------------------------------------- the schema


def infer_schema(  # noqa: C901
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
        if kind not in OVERRIDES and not kind.startswith("datetime:"):
            raise TableError(
                f"column kind {kind!r} for {name!r}: use one of {', '.join(OVERRIDES)} or datetime:FORMAT"
            )
    columns: list[Column] = []
    excluded: list[tuple[str, str]] = []
    notes: list[str] = []
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
        if overrides.get(name, "").startswith("datetime"):
            columns.append(_datetime_column(s, overrides[name]))
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
            fmt = _datetime_format(s) if distinct > 2 else None
            if fmt is not None:
                columns.append(Column(name, "numerical", fmt))
                notes.append(f"column {name!r}: text parsed as datetimes ({fmt})")
            elif _free_text(s, distinct):
                excluded.append((name, "free text: long, mostly distinct strings"))
            elif distinct == n and n >= IDENTIFIER_MIN_ROWS:
                excluded.append((name, "identifier: unique per row"))
            else:
                columns.append(Column(name, "binary" if distinct <= 2 else "categorical"))
                if distinct > HIGH_CARDINALITY:
                    notes.append(
                        f"column {name!r}: {distinct} categories, high-cardinality (one-hot capped at "
                        f"{HIGH_CARDINALITY}, left out of singling-out predicates)"
                    )
        else:
            excluded.append((name, f"unsupported type {dtype}"))
    if not columns:
        raise TableError("the real table has no usable column (numerical, categorical or binary)")
    columns = [replace(c, reads=dtype_family(real.schema[c.name])) for c in columns]
    columns.sort(key=lambda c: c.name)  # name order: nothing downstream depends on the input's column order
    return Schema(columns, excluded, notes)


def dtype_family(dtype: pl.DataType) -> str:
    """How the real table holds a column (boolean, time, number or text): every other side is read into
    it, and the schema gate expects its types of the synthetic side (issue 44: a side typed otherwise,
    yes/no as BOOLEAN from a CSV and as text from Parquet, must not hide a copy)."""
    if dtype == pl.Boolean:
        return "boolean"
    if dtype.is_temporal():
        return "time"
    if dtype.is_numeric():
        return "number"
    return "text"


def _datetime_format(s: pl.Series) -> str | None:
    """The first of DATETIME_FORMATS every non-null value of a text column parses with, or None."""
    values = s.drop_nulls()
    if values.len() == 0:
        return None
    probe = values.head(200)  # cheap rejection before the whole column is parsed
    for fmt in DATETIME_FORMATS:
        if _parse_datetimes(probe, fmt).null_count() == 0 and _parse_datetimes(values, fmt).null_count() == 0:
            return fmt
    return None


def _datetime_column(s: pl.Series, override: str) -> Column:
    """The column declared ``datetime`` (format detected) or ``datetime:FORMAT``."""
    if s.dtype.is_temporal():
        return Column(s.name, "numerical")
    if not _is_text(s.dtype):
        raise TableError(f"column {s.name!r} cannot be a datetime: it is neither text nor a datetime type")
    fmt = override.partition(":")[2] or _datetime_format(s)
    if not fmt:
        raise TableError(
            f"column {s.name!r}: no datetime format fits every value; "
            f"give one, e.g. {s.name}=datetime:%Y-%m-%d"
        )
    bad = _unparsed(s, fmt)
    if bad:
        raise TableError(f"column {s.name!r} of the real table: {bad} value(s) do not parse as {fmt}")
    return Column(s.name, "numerical", fmt)


def _unparsed(s: pl.Series, fmt: str) -> int:
    try:
        parsed = _parse_datetimes(s, fmt)
    except Exception:  # a format polars refuses
        raise TableError(f"column {s.name!r}: {fmt!r} is not a datetime format polars reads") from None
    return int(parsed.null_count() - s.null_count())


def _free_text(s: pl.Series, distinct: int) -> bool:
    values = s.drop_nulls().cast(pl.String)
    n = values.len()
    if n < IDENTIFIER_MIN_ROWS or distinct < FREE_TEXT_DISTINCT * n:
        return False
    mean = values.str.len_chars().mean()
    return float(mean or 0.0) >= FREE_TEXT_LENGTH  # a mean of lengths: a number


def canonical(df: pl.DataFrame, schema: Schema, *, role: str) -> pl.DataFrame:
    """The frame restricted to the schema's columns, in its order, with canonical dtypes."""
    out = []
    for c in schema.columns:
        s = df.get_column(c.name)
        if c.format is not None and not s.dtype.is_temporal() and s.dtype != pl.Null:
            s = _datetime_series(s, c.format, role=role)
        out.append(
            _as_number(s, role=role, reads=c.reads)
            if c.kind == "numerical"
            else _as_text(s, role=role, reads=c.reads)
        )
    return pl.DataFrame(out)


def _datetime_series(s: pl.Series, fmt: str, *, role: str) -> pl.Series:
    """A datetime column stored as text, parsed; a value that does not parse is bad input (counted, never
    shown)."""
    if not _is_text(s.dtype):
        if s.dtype.is_temporal() or s.dtype.is_numeric():  # a side typed as time (or epoch numbers)
            return s
        raise TableError(f"column {s.name!r} is a datetime in the real table but not in the {role} table")
    bad = _unparsed(s, fmt)
    if bad:
        raise TableError(f"column {s.name!r} of the {role} table: {bad} value(s) do not parse as {fmt}")
    return _parse_datetimes(s, fmt)


def check_ranges(real: pl.DataFrame, schema: Schema) -> None:
    """Every numerical column of the (canonical) real table spans a finite range: the engine scales by it."""
    for name in schema.of_kind("numerical"):
        s = real.get_column(name).drop_nulls()
        if s.len() and not np.isfinite(float(s.max()) - float(s.min())):  # type: ignore[arg-type]
            raise TableError(f"column {name!r} of the real table spans a range too large for a float64")


def content_order(df: pl.DataFrame) -> np.ndarray:
    """The permutation that sorts rows by content (row hash, then every column): the order an
    evaluation sees, so that no figure, interval or seeded sample depends on the input's row order."""
    if df.width == 0:
        return np.arange(df.height)
    keyed = df.with_columns(
        pl.Series("__hash", df.hash_rows(seed=0)), pl.Series("__row", np.arange(df.height))
    )
    order = keyed.sort(["__hash", *df.columns], nulls_last=True, maintain_order=True).get_column("__row")
    return order.to_numpy()


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


#: 2^64 / the golden ratio: the odd step that spreads consecutive integers over 64-bit hash keys
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a well-spread 64-bit hash of 64-bit integers (wraps on purpose)."""
    z = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


def occurrence(keys: np.ndarray) -> np.ndarray:
    """Per row, how many earlier rows (by position) have the same key: 0 for a record's first copy, 1
    for its second, ... A seeded order keyed on content and occurrence treats copies as distinct rows
    while staying order-free (copies are interchangeable)."""
    by_key = np.lexsort((np.arange(keys.size), keys))
    run_start = np.flatnonzero(np.r_[True, keys[by_key][1:] != keys[by_key][:-1]])
    out = np.empty(keys.size, dtype=np.uint64)
    out[by_key] = np.arange(keys.size) - np.repeat(run_start, np.diff(np.r_[run_start, keys.size]))
    return out


def salted_keys(keys: np.ndarray, salt: np.uint64) -> np.ndarray:
    """A seeded sort key per row from its content key: mix64 of the key xor ``salt``, plus its
    occurrence times GOLDEN, so copies are ranked apart (the first n rows of the order are a simple
    random sample of rows) and a record's first copy keeps the key of its content alone."""
    with np.errstate(over="ignore"):
        return mix64((keys ^ np.uint64(salt)) + occurrence(keys) * GOLDEN)


def fingerprint(df: pl.DataFrame) -> str:
    """sha256 over the column names and dtypes and the sorted row hashes: content, not row order."""
    h = hashlib.sha256()
    h.update(repr([(c, str(t)) for c, t in df.schema.items()]).encode())
    h.update(np.sort(row_hashes(df)).tobytes())
    return h.hexdigest()


def table_info(df: pl.DataFrame) -> TableInfo:
    """What an evaluation records of a table: its size and content fingerprint, never its values."""
    return TableInfo(rows=df.height, columns=df.width, sha256=fingerprint(df))
