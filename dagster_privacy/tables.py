"""Tables: column kinds (seed 000 Definition 1), loading through DuckDB, schema inference, validation.

Every table the engine sees is a *canonical* polars frame: the real table's used columns in the real
table's order, numerical columns as Float64 (datetimes as epoch seconds, NaN as null), categorical and
binary columns as String (a missing value stays null and is a category of its own).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import polars as pl

from .errors import TableError
from .results import TableInfo

Kind = Literal["numerical", "categorical", "binary"]
KINDS: tuple[str, ...] = ("numerical", "categorical", "binary")
#: a column kind override may also drop a column from every metric, or parse text as datetimes
#: ("datetime" detects the format, "datetime:%Y-%m-%d" gives it)
OVERRIDES: tuple[str, ...] = (*KINDS, "exclude", "datetime")
#: a string/integer column whose values are all distinct is an identifier only from this many rows on
IDENTIFIER_MIN_ROWS = 20
#: the formats a text column is tried with: a column whose every value parses with one is a datetime
DATETIME_FORMATS: tuple[str, ...] = (
    "%Y-%m-%d",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y/%m/%d",
    "%d.%m.%Y",
)
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

    @property
    def left_out_leaks(self) -> list[str]:
        """Left-out columns whose synthetic values occur in the real table (or could not be compared)."""
        return [name for name, n in self.left_out.items() if n is None or n > 0]

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
                {"name": c.name, "kind": c.kind, **({"format": c.format} if c.format else {})}
                for c in self.columns
            ],
            "excluded": [
                {
                    "name": n,
                    "reason": r,
                    **({"synthetic_values_in_real": self.left_out[n]} if n in self.left_out else {}),
                }
                for n, r in self.excluded
            ],
            "notes": list(self.notes),
        }


# ----------------------------------------------------------------------------------------- the schema


def _is_text(dtype: pl.DataType) -> bool:
    return dtype in (pl.String, pl.Categorical) or isinstance(dtype, (pl.Enum, pl.Categorical))


def _is_numeric(dtype: pl.DataType) -> bool:
    """Numbers, booleans, times — and polars' Null dtype (a column whose every value is missing)."""
    return dtype.is_numeric() or dtype == pl.Boolean or dtype.is_temporal() or dtype == pl.Null


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
    columns = [replace(c, reads=_reads(real.schema[c.name])) for c in columns]
    columns.sort(key=lambda c: c.name)  # name order: nothing downstream depends on the input's column order
    return Schema(columns, excluded, notes)


def _reads(dtype: pl.DataType) -> str:
    """How the real table holds a column, which every other side is read into (issue 44: a side typed
    otherwise, yes/no as BOOLEAN from a CSV and as text from Parquet, must not hide a copy)."""
    if dtype == pl.Boolean:
        return "boolean"
    if dtype.is_temporal():
        return "time"
    if dtype.is_numeric():
        return "number"
    return "text"


def _parse_datetimes(s: pl.Series, fmt: str) -> pl.Series:
    """Text parsed with ``fmt`` (a value that does not parse becomes null: callers count those)."""
    text = s.cast(pl.String).str.strip_chars()
    return text.str.strptime(pl.Datetime("us"), fmt, strict=False, exact=True)


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
    return float(values.str.len_chars().mean() or 0.0) >= FREE_TEXT_LENGTH


#: whole numbers print without a decimal point up to 2^53 (exact in float64, and in Int64 range)
_WHOLE_LIMIT = 2.0**53


#: beyond this magnitude a float32 overflows: such numbers are kept at full precision
_FLOAT32_MAX = 3.0e38


def _finite(s: pl.Series, *, role: str) -> pl.Series:
    """Float64 at float32 precision (7 significant digits, the precision distances are computed in),
    NaN as missing; an infinite value is bad input (a distance to it is no figure). The rounding makes
    a copy stored as float32 a copy: 1234.56 and float32(1234.56) are one value."""
    f = s.cast(pl.Float64)
    n_inf = int(f.is_infinite().sum())
    if n_inf:
        raise TableError(
            f"column {s.name!r} of the {role} table holds {n_inf} infinite value(s): give a finite "
            "number or leave the cell empty (missing)"
        )
    x = f.fill_nan(None).to_numpy()
    with np.errstate(all="ignore"):
        r = np.where(np.abs(x) < _FLOAT32_MAX, x.astype(np.float32).astype(np.float64), x)
    return pl.Series(s.name, r, dtype=pl.Float64).fill_nan(None)  # to_numpy made missing NaN


#: text that is a plain decimal number: read as that number wherever it arrives (a CSV reader types
#: it, Parquet and frames keep it as text)
_NUMBER = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"
#: the words DuckDB's CSV reader types as BOOLEAN (any case, surrounding blanks ignored)
_BOOLEAN_WORDS = {"true": "true", "t": "true", "yes": "true", "false": "false", "f": "false", "no": "false"}


def _as_text(s: pl.Series, *, role: str, reads: str = "text") -> pl.Series:
    """Categorical/binary values as text keys that do not depend on how a side was typed: a number (also
    one written as text) prints as its float32-precision number, whole numbers without a decimal point,
    value by value (a per-column choice printed 17.0 as "17" in a table of whole numbers and as "17.0"
    in one that also held 0.5: a copy across the two was not a copy); a boolean (also a word DuckDB
    reads as one, and 0 / 1 where the real table holds booleans) as true / false; other text as it is."""
    if s.dtype == pl.Null:
        return s.cast(pl.String)
    if s.dtype == pl.Boolean:
        return s.cast(pl.String) if reads != "number" else _as_text(s.cast(pl.Int8), role=role)
    if s.dtype.is_numeric():
        if reads == "boolean":
            return _numbers_as_booleans(s, role=role)
        f = _finite(s, role=role)
        whole = ((f - f.round(0)).abs() == 0) & (f.abs() < _WHOLE_LIMIT)
        as_int = f.cast(pl.Int64, strict=False).cast(pl.String)
        return pl.select(pl.when(whole).then(as_int).otherwise(f.cast(pl.String))).to_series().alias(s.name)
    if s.dtype.is_temporal():
        return _seconds(s).cast(pl.String)
    return _text_keys(s.cast(pl.String), role=role, reads=reads)


def _text_keys(text: pl.Series, *, role: str, reads: str) -> pl.Series:
    """Text values read as the numbers or booleans they spell (computed once per distinct value)."""
    values = text.unique().drop_nulls()
    stripped = values.str.strip_chars()
    words = stripped.str.to_lowercase().replace_strict(_BOOLEAN_WORDS, default=None)
    if reads == "number":  # 0 / 1 written as false / true
        words = words.replace_strict({"true": "1", "false": "0"}, default=None)
    number = stripped.str.contains(_NUMBER)
    parsed = stripped.cast(pl.Float64, strict=False)
    number = number & parsed.is_finite().fill_null(False) & (parsed.abs() < _FLOAT32_MAX)
    if reads == "boolean":  # 0 / 1 where the real table holds booleans
        as_number = parsed.replace_strict({1.0: "true", 0.0: "false"}, default=None)
    else:
        as_number = _as_text(parsed.fill_null(0.0), role=role)
    keys = pl.select(
        pl.when(number & as_number.is_not_null())
        .then(as_number)
        .when(words.is_not_null())
        .then(words)
        .otherwise(values)
    ).to_series()
    changed = keys != values
    if not changed.any():
        return text
    return text.replace_strict(values.filter(changed), keys.filter(changed), default=text).alias(text.name)


def _numbers_as_booleans(s: pl.Series, *, role: str) -> pl.Series:
    """0 / 1 in a column the real table holds as booleans; another number cannot be read as one."""
    f = s.cast(pl.Float64)
    bad = int((f.is_not_null() & ~f.is_in([0.0, 1.0])).sum())
    if bad:
        raise TableError(
            f"column {s.name!r} holds booleans in the real table; {bad} value(s) of the {role} table "
            "are numbers other than 0 and 1"
        )
    return f.replace_strict({1.0: "true", 0.0: "false"}, default=None, return_dtype=pl.String).alias(s.name)


def _seconds(s: pl.Series) -> pl.Series:
    """A temporal column as seconds: epoch seconds (dates as days × 86,400), times of day since
    midnight, durations as they are."""
    if s.dtype == pl.Date:
        return (s.cast(pl.Int64) * 86400).cast(pl.Float64)
    if s.dtype == pl.Time:  # nanoseconds since midnight
        return s.cast(pl.Int64).cast(pl.Float64) / 1e9
    if s.dtype == pl.Duration:
        return s.dt.total_microseconds().cast(pl.Float64) / 1e6
    return s.dt.epoch("ms").cast(pl.Float64) / 1000.0


def _as_number(s: pl.Series, *, role: str, reads: str = "number") -> pl.Series:
    if s.dtype == pl.Null or s.null_count() == s.len():  # all missing, whatever the dtype
        return pl.Series(s.name, [None] * s.len(), dtype=pl.Float64)
    if s.dtype.is_temporal():
        return _seconds(s)
    if s.dtype == pl.Boolean or s.dtype.is_numeric():
        return _finite(s, role=role) + 0.0  # + 0.0 turns -0.0 into 0.0 for hashing
    return _as_number(_parse_text(s.cast(pl.String), role=role, reads=reads), role=role)


def _parse_text(text: pl.Series, *, role: str, reads: str) -> pl.Series:
    """A numerical column that arrived as text, read as the real table holds it (times: ISO forms and
    DATETIME_FORMATS; numbers: plain decimals); a value that does not read is bad input, counted."""
    stripped = text.str.strip_chars()
    if reads == "time":
        parsed = stripped.str.to_datetime(strict=False, time_zone="UTC")
        for fmt in DATETIME_FORMATS:
            if parsed.null_count() == text.null_count():
                break
            parsed = parsed.fill_null(_parse_datetimes(text, fmt).dt.replace_time_zone("UTC"))
        what = "datetimes"
    else:
        number = stripped.str.contains(_NUMBER)
        parsed = pl.select(pl.when(number).then(stripped.cast(pl.Float64, strict=False))).to_series()
        what = "numbers"
    bad = int(parsed.null_count() - text.null_count())
    if bad:
        raise TableError(
            f"column {text.name!r} is numerical in the real table; {bad} value(s) of the {role} table "
            f"do not read as {what}"
        )
    return parsed.alias(text.name)


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


def left_out_overlap(real: pl.DataFrame, synthetic: pl.DataFrame, schema: Schema) -> dict[str, int | None]:
    """For each column no metric uses (identifier, empty, unsupported, excluded) that the synthetic table
    holds: how many of its synthetic values occur verbatim in the real column (None: could not compare,
    which counts as overlap — fail closed)."""
    out: dict[str, int | None] = {}
    for name, _ in schema.excluded:
        if name in synthetic.columns and name in real.columns:
            out[name] = _values_in(real.get_column(name), synthetic.get_column(name))
    return out


def _values_in(real: pl.Series, synthetic: pl.Series) -> int | None:
    r, s = _value_keys(real.drop_nulls()), _value_keys(synthetic.drop_nulls())
    if r is None or s is None:  # nested or exotic types: by hash when the types agree, else unknown
        if real.dtype != synthetic.dtype:
            return None
        try:
            r, s = real.drop_nulls().hash(seed=0), synthetic.drop_nulls().hash(seed=0)
        except Exception:
            return None
    if r.len() == 0 or s.len() == 0:
        return 0
    return int(s.is_in(r.implode()).sum())


def _value_keys(s: pl.Series) -> pl.Series | None:
    """One comparable text key per value, the same for the same value however it is rendered: a number
    (also one written as text, '0007000000' or '7000000.0') as its float32-precision number, a time as
    its seconds (also one written as text), other text in its identifier_form; None: not comparable."""
    try:
        if s.dtype.is_temporal():
            return "t:" + _seconds(s).cast(pl.String)
        if s.dtype.is_numeric() or s.dtype == pl.Boolean:
            return "n:" + _finite(s, role="").cast(pl.String)
        text = s.cast(pl.String).str.strip_chars()
    except Exception:
        return None
    num = _finite(
        text.cast(pl.Float64, strict=False).fill_nan(None).replace([float("inf"), float("-inf")], None),
        role="",
    )
    try:
        when = _seconds(text.str.to_datetime(strict=False, time_zone="UTC"))
    except Exception:  # no datetime format fits the text
        when = pl.Series([None] * text.len(), dtype=pl.Float64)
    return (
        pl.DataFrame({"n": num, "t": when, "s": text})
        .select(
            pl.when(pl.col("n").is_not_null())
            .then("n:" + pl.col("n").cast(pl.String))
            .when(pl.col("t").is_not_null())
            .then("t:" + pl.col("t").cast(pl.String))
            .otherwise("s:" + pl.col("s").replace_strict(_identifier_forms(text), default=pl.col("s")))
        )
        .to_series()
    )


def identifier_form(value: str) -> str:
    """What counts as the same identifier (docs/metrics.md, "Columns left out"): Unicode NFKC, accents
    dropped, case folded, whitespace and punctuation (every character that is not a letter, digit or
    symbol) removed; a value made only of those keeps its folded form."""
    folded = unicodedata.normalize("NFKC", value).casefold()
    bare = "".join(ch for ch in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(ch))
    kept = "".join(ch for ch in unicodedata.normalize("NFKC", bare) if unicodedata.category(ch)[0] in "LNS")
    return kept or folded.strip()


def _identifier_forms(text: pl.Series) -> dict[str, str]:
    return {v: identifier_form(v) for v in text.unique().drop_nulls().to_list()}


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


def fingerprint(df: pl.DataFrame) -> str:
    """sha256 over the column names and dtypes and the sorted row hashes: content, not row order."""
    h = hashlib.sha256()
    h.update(repr([(c, str(t)) for c, t in df.schema.items()]).encode())
    h.update(np.sort(row_hashes(df)).tobytes())
    return h.hexdigest()


def table_info(df: pl.DataFrame) -> TableInfo:
    """What an evaluation records of a table: its size and content fingerprint, never its values."""
    return TableInfo(rows=df.height, columns=df.width, sha256=fingerprint(df))
