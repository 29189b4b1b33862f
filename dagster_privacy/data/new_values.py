"""Values the real tables never hold (issue 55, item 3: no encoding hides a person).

A copy whose categories are re-coded (M/F → 0/1), whose cells are emptied where the real column has no
missing value, or whose numbers are rescaled off the real range escapes every count that compares cells.
On every route (CLI, Python API, Dagster) such values are a finding that blocks the verdict, one line
naming the column and the number of rows, never a value; a policy declares a column whose new values are
legitimate (a generator that adds categories) with a waiver ``new_values.COLUMN: <why>``, which forces a
sign-off.

Chance is measured as everywhere in the count: the holdout's real rows, which no generator saw, hold
values the training table lacks (rare categories, outliers) at the rate a clean release of unseen rows
does; a column blocks when its synthetic rows with new values are beyond that by an exact conditional
binomial test at ``LEVEL`` (divided among the columns). Without a holdout a few rows are tolerated
(``tolerated``: a wholesale re-coding blocks, a few rare categories do not)."""

from __future__ import annotations

import math

import polars as pl

from .tables import Schema

#: the family-wise level of the new-values test over the columns (a re-coded copy of 20 records sits at
#: p < 1e-6 against a holdout that holds a few rare categories)
LEVEL = 0.001
#: without a holdout (chance cannot be measured): rows with new values a column may hold before it
#: blocks, 5 or 2 % of the release; a small clean release of unseen rows holds rare categories at about 1 %
TOLERATED_SHARE = 0.02
TOLERATED_ROWS = 5


def tolerated(n_synthetic: int) -> int:
    return max(TOLERATED_ROWS, math.floor(TOLERATED_SHARE * n_synthetic))


def _new_rows(train: pl.Series, other: pl.Series, numerical: bool) -> tuple[int, str]:
    """(rows of ``other`` holding a value the training column never holds, what kind)."""
    nulls = int(other.null_count()) if train.null_count() == 0 else 0
    present = other.drop_nulls()
    if numerical:
        lo, hi = train.min(), train.max()
        if lo is None or hi is None:
            return nulls, "missing"
        span = max(float(hi) - float(lo), 1.0)  # type: ignore[arg-type]
        x = present.cast(pl.Float64)
        out = int(((x < float(lo) - span) | (x > float(hi) + span)).sum())  # type: ignore[arg-type]
        return nulls + out, "numbers more than a whole real range outside it" if out else "missing"
    new = int((~present.is_in(train.drop_nulls().unique().implode())).sum())
    return nulls + new, "categories it lacks" if new else "missing"


def _beyond_chance(k_s: int, n_s: int, k_h: int, n_h: int, level: float) -> bool:
    from scipy.stats import binom

    if k_s <= 0:
        return False
    return float(binom.sf(k_s - 1, k_s + k_h, n_s / (n_s + n_h))) <= level


def new_values(real: pl.DataFrame, holdout: pl.DataFrame | None, synthetic: pl.DataFrame,
               schema: Schema) -> dict[str, tuple[int, str]]:  # fmt: skip
    """column → (synthetic rows, what) for every used column whose synthetic rows hold values the
    training table never holds beyond what the holdout's unseen rows show by chance."""
    cols = [c for c in schema.columns if c.name in synthetic.columns]
    level = LEVEL / max(1, len(cols))
    out = {}
    for c in cols:
        num = c.kind == "numerical"
        train = real.get_column(c.name)
        k_s, what = _new_rows(train, synthetic.get_column(c.name), num)
        if holdout is not None and holdout.height:
            k_h, _ = _new_rows(train, holdout.get_column(c.name), num)
            blocked = _beyond_chance(k_s, synthetic.height, k_h, holdout.height, level)
        else:
            blocked = k_s > tolerated(synthetic.height)
        if blocked:
            out[c.name] = (
                k_s,
                "values missing where the real column has none" if what == "missing" else what,
            )
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
