"""Columns no metric uses (identifier, empty, unsupported, excluded): are their synthetic values real
values? Compared in a form that does not depend on spelling (docs/metrics.md, "Columns left out")."""

from __future__ import annotations

import html
import math
import re
import unicodedata
import urllib.parse

import polars as pl

from .tables import Schema
from .values import _seconds


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
    (also one written as text, '0007000000', '7000000.0', '123-45-6789' or '+1 (555) 123-4000' once its
    punctuation is gone) exactly, a time as its seconds (also one written as text), other text in its
    identifier_form; None: not comparable. Numbers are compared exactly (an identifier is not a
    measurement: 16-digit ids that differ in the last digit are different people)."""
    try:
        if s.dtype.is_temporal():
            return "t:" + _seconds(s).cast(pl.String)
        if s.dtype.is_integer() or s.dtype == pl.Boolean:
            return "n:" + s.cast(pl.Int64).cast(pl.String)
        if s.dtype.is_numeric():
            return "n:" + pl.Series([_number_key(float(v)) for v in s.cast(pl.Float64).to_list()])
        text = s.cast(pl.String).str.strip_chars()
    except Exception:
        return None
    try:
        when = _seconds(text.str.to_datetime(strict=False, time_zone="UTC"))
    except Exception:  # no datetime format fits the text
        when = pl.Series([None] * text.len(), dtype=pl.Float64)
    forms = {v: _text_key(v) for v in text.unique().drop_nulls().to_list()}
    return (
        pl.DataFrame({"t": when, "s": text})
        .select(
            pl.when(pl.col("t").is_not_null() & ~pl.col("s").replace_strict(forms).str.starts_with("n:"))
            .then("t:" + pl.col("t").cast(pl.String))
            .otherwise(pl.col("s").replace_strict(forms))
        )
        .to_series()
    )


def _number_key(x: float) -> str:
    """A number's exact key: whole numbers as integers (7000000.0 is 7000000), others as repr."""
    return str(int(x)) if math.isfinite(x) and x == int(x) else repr(x)


def _text_key(value: str) -> str:
    """The key of one text value: its identifier form; spelled as a number (digits, perhaps with a
    sign and a decimal point, once the punctuation is gone), that number exactly."""
    decoded = html.unescape(urllib.parse.unquote(value))
    form = identifier_form(decoded)
    plain = decoded.strip().replace(",", "")
    if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", plain):
        try:
            return (
                "n:" + _number_key(float(plain))
                if "." in plain or "e" in plain.lower()
                else "n:" + str(int(plain))
            )
        except (ValueError, OverflowError):
            pass
    if re.fullmatch(r"\+?\d+", form):  # an id of digits, perhaps with a leading + (a phone number)
        return "n:" + str(int(form))
    return "s:" + form


#: characters Unicode counts as letters that show as nothing (Hangul fillers): not part of an identifier
_INVISIBLE = dict.fromkeys(map(ord, "\u115f\u1160\u3164\uffa0"))


def identifier_form(value: str) -> str:
    """What counts as the same identifier (docs/metrics.md, "Columns left out"): percent and HTML
    escapes decoded, Unicode NFKC, accents dropped, case folded, whitespace and punctuation (every
    character that is not a letter, digit or symbol) and invisible fillers removed; a value made only
    of those keeps its folded form."""
    folded = unicodedata.normalize("NFKC", value).casefold().translate(_INVISIBLE)
    bare = "".join(ch for ch in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(ch))
    kept = "".join(ch for ch in unicodedata.normalize("NFKC", bare) if unicodedata.category(ch)[0] in "LNS")
    return kept or folded.strip()
