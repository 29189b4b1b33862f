"""Values the real tables never hold (issue 55, item 3: no encoding hides a person).

A copy whose categories are re-coded (M/F → 0/1), whose cells are emptied where the real column has no
missing value, or whose numbers are rescaled off the real range escapes every count that compares cells.
On every route (CLI, Python API, Dagster) such values are a finding that blocks the verdict, one line
naming the column and the number of rows, never a value; a policy declares a column whose new values are
legitimate (a generator that adds categories) with a waiver ``new_values.COLUMN: <why>``, which forces a
sign-off.

The real domain is the training and holdout tables together: both are real records, and a category the
training table lacks but the holdout holds is a category of the population. A few rows are tolerated
(``TOLERATED``): unseen real rows carry rare categories neither table holds (a clean release of real
rows no generator saw does), while a re-coded copy re-codes every copied row."""

from __future__ import annotations

import math

import polars as pl

from .tables import Schema

#: rows with new values a column may hold before it blocks: at least 3, or 0.1 % of the release
TOLERATED_SHARE = 0.001
TOLERATED_ROWS = 2


def tolerated(n_synthetic: int) -> int:
    return max(TOLERATED_ROWS, math.floor(TOLERATED_SHARE * n_synthetic))


def _column(real: pl.Series, synthetic: pl.Series, numerical: bool) -> tuple[int, str]:
    """(synthetic rows holding a value the real column never holds, what kind)."""
    nulls = int(synthetic.null_count()) if real.null_count() == 0 else 0
    present = synthetic.drop_nulls()
    if numerical:
        lo, hi = real.min(), real.max()
        if lo is None or hi is None:
            return nulls, "missing"
        span = max(float(hi) - float(lo), 1.0)  # type: ignore[arg-type]
        far = present.cast(pl.Float64)
        out = int(((far < float(lo) - span) | (far > float(hi) + span)).sum())  # type: ignore[arg-type]
        return nulls + out, "numbers more than a whole real range outside it" if out else "missing"
    known = real.drop_nulls().unique()
    new = int((~present.is_in(known.implode())).sum())
    return nulls + new, "categories it lacks" if new else "missing"


def new_values(real: pl.DataFrame, holdout: pl.DataFrame | None, synthetic: pl.DataFrame,
               schema: Schema) -> dict[str, tuple[int, str]]:  # fmt: skip
    """column → (rows, what) for every used column whose new values exceed what is tolerated."""
    domain = real if holdout is None else pl.concat([real, holdout.select(real.columns)], how="vertical_relaxed")
    limit = tolerated(synthetic.height)
    out = {}
    for c in schema.columns:
        if c.name not in synthetic.columns:
            continue
        rows, what = _column(domain.get_column(c.name), synthetic.get_column(c.name), c.kind == "numerical")
        if rows > limit:
            out[c.name] = (rows, "values missing where the real column has none" if what == "missing" else what)
    return out


def findings(found: dict[str, tuple[int, str]], declared: dict[str, str]) -> list[str]:
    """One line per column not declared by the policy (``waivers: {new_values.COLUMN: why}``)."""
    return [
        f"column {name!r}: {rows} synthetic rows hold values the real table never holds ({what}); a copy "
        "re-coded this way hides a person from every count: give the release the real table's encoding, or "
        f"declare them in the policy (waivers: {{new_values.{name}: <why>}}, which asks for a sign-off)"
        for name, (rows, what) in found.items()
        if f"new_values.{name}" not in declared
    ]


__all__ = ["findings", "new_values", "tolerated"]
