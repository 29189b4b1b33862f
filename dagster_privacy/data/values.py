"""How one column's values are read, whatever type their source gave them (issue 44): numbers, times
and booleans as the real table holds them, text that spells one of those as that value. Shared by the
canonical frames (tables.py) and the left-out columns' comparison (left_out.py)."""

from __future__ import annotations

import numpy as np
import polars as pl

from ..errors import TableError

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


def _is_text(dtype: pl.DataType) -> bool:
    return dtype in (pl.String, pl.Categorical) or isinstance(dtype, (pl.Enum, pl.Categorical))


def _is_numeric(dtype: pl.DataType) -> bool:
    """Numbers, booleans, times — and polars' Null dtype (a column whose every value is missing)."""
    return dtype.is_numeric() or dtype == pl.Boolean or dtype.is_temporal() or dtype == pl.Null


def _parse_datetimes(s: pl.Series, fmt: str) -> pl.Series:
    """Text parsed with ``fmt`` (a value that does not parse becomes null: callers count those)."""
    text = s.cast(pl.String).str.strip_chars()
    return text.str.strptime(pl.Datetime("us"), fmt, strict=False, exact=True)


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
#: more spellings of a boolean, read only where the real column holds booleans
_MORE_BOOLEAN_WORDS = {"y": "true", "n": "false", "on": "true", "off": "false"}


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
    vocabulary = {**_BOOLEAN_WORDS, **_MORE_BOOLEAN_WORDS} if reads == "boolean" else _BOOLEAN_WORDS
    words = stripped.str.to_lowercase().replace_strict(vocabulary, default=None)
    if reads == "number":  # 0 / 1 written as false / true
        words = words.replace_strict({"true": "1", "false": "0"}, default=None)
    number = stripped.str.contains(_NUMBER)
    parsed = stripped.cast(pl.Float64, strict=False)
    number = number & parsed.is_finite().fill_null(False) & (parsed.abs() < _FLOAT32_MAX)
    if reads == "boolean":  # 0 / 1 where the real table holds booleans
        as_number = parsed.replace_strict({1.0: "true", 0.0: "false"}, default=None)
    else:
        as_number = _as_text(parsed.fill_null(0.0), role=role)
    read = (number & as_number.is_not_null()) | words.is_not_null()
    if reads in ("boolean", "number") and not read.all():  # the real column holds booleans / numbers
        what = "booleans" if reads == "boolean" else "numbers"
        raise TableError(
            f"column {text.name!r} holds {what} in the real table; {int((~read).sum())} distinct value(s) "
            f"of the {role} table do not read as {what}"
        )
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
