"""Columns no metric uses (identifier, empty, unsupported, excluded): are their synthetic values real
values? Compared in a form that does not depend on spelling (docs/metrics.md, "Columns left out")."""

from __future__ import annotations

import unicodedata

import polars as pl

from .tables import Schema
from .values import _finite, _seconds


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
