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
from collections.abc import Collection

import numpy as np
import polars as pl

from .tables import Schema

#: the family-wise level of the new-values test over the columns (a re-coded copy of 20 records sits at
#: p < 1e-6 against a holdout that holds a few rare categories)
LEVEL = 0.001
#: once the rows with a new value in any column are beyond chance, the columns named: each beyond its own
#: chance at this level
NAMING = 0.05
#: without a holdout (chance cannot be measured): rows with new values a column may hold before it
#: blocks, 5 or 2 % of the release; a small clean release of unseen rows holds rare categories at about 1 %
TOLERATED_SHARE = 0.02
TOLERATED_ROWS = 5


def tolerated(n_synthetic: int) -> int:
    return max(TOLERATED_ROWS, math.floor(TOLERATED_SHARE * n_synthetic))


def _new_rows(train: pl.Series, other: pl.Series, numerical: bool) -> tuple[np.ndarray, str]:
    """(bool per row of ``other``: it holds a value the training column never holds, what kind)."""
    missing = other.is_null().to_numpy() if train.null_count() == 0 else np.zeros(other.len(), dtype=bool)
    if numerical:
        lo, hi = train.min(), train.max()
        if lo is None or hi is None:
            return missing, "missing"
        span = max(float(hi) - float(lo), 1.0)  # type: ignore[arg-type]
        x = other.cast(pl.Float64)
        far = ((x < float(lo) - span) | (x > float(hi) + span)).fill_null(False).to_numpy()  # type: ignore[arg-type]
        return missing | far, "numbers more than a whole real range outside it" if far.any() else "missing"
    new = (~other.is_in(train.drop_nulls().unique().implode())).fill_null(False).to_numpy() & ~missing
    new &= other.is_not_null().to_numpy()
    return missing | new, "categories it lacks" if new.any() else "missing"


def _beyond_chance(k_s: int, n_s: int, k_h: int, n_h: int, level: float) -> bool:
    from scipy.stats import binom

    if k_s <= 0:
        return False
    return float(binom.sf(k_s - 1, k_s + k_h, n_s / (n_s + n_h))) <= level


#: per column: (synthetic rows with new values, holdout rows with new values or None, what kind)
NewRows = dict[str, tuple[np.ndarray, "np.ndarray | None", str]]


def new_values(real: pl.DataFrame, holdout: pl.DataFrame | None, synthetic: pl.DataFrame,
               schema: Schema) -> NewRows:  # fmt: skip
    """Per used column, which synthetic (and holdout) rows hold values the training table never holds."""
    out: NewRows = {}
    for c in schema.columns:
        if c.name not in synthetic.columns:
            continue
        num = c.kind == "numerical"
        train = real.get_column(c.name)
        syn, what = _new_rows(train, synthetic.get_column(c.name), num)
        hold = (
            None
            if holdout is None or not holdout.height
            else _new_rows(train, holdout.get_column(c.name), num)[0]
        )
        if syn.any():
            out[c.name] = (
                syn,
                hold,
                "values missing where the real column has none" if what == "missing" else what,
            )
    return out


def blocked(rows: NewRows, declared: Collection[str] = ()) -> dict[str, tuple[int, str]]:
    """column → (synthetic rows, what) for the undeclared columns that block: each column beyond the
    holdout's chance at half of LEVEL divided among the columns, and, at the other half, the rows with a
    new value in any column (an alteration spread over many columns, two cells emptied say), which then
    names every column whose new rows exceed its chance count. Without a holdout: ``tolerated``."""
    cols = {c: v for c, v in rows.items() if f"new_values.{c}" not in declared}
    if not cols:
        return {}
    syn0, hold0, _ = next(iter(cols.values()))
    n_s = syn0.size
    if hold0 is None:
        return {c: (int(s.sum()), w) for c, (s, _, w) in cols.items() if s.sum() > tolerated(n_s)}
    n_h, level = hold0.size, LEVEL / 2 / max(1, len(cols))
    out = {c: (int(s.sum()), w) for c, (s, h, w) in cols.items()
           if _beyond_chance(int(s.sum()), n_s, int(h.sum()), n_h, level)}  # type: ignore[union-attr]  # fmt: skip
    any_s = np.logical_or.reduce([s for s, _, _ in cols.values()])
    any_h = np.logical_or.reduce([h for _, h, _ in cols.values()])  # type: ignore[arg-type]
    if _beyond_chance(int(any_s.sum()), n_s, int(any_h.sum()), n_h, LEVEL / 2):
        named = {c: (int(s.sum()), w) for c, (s, h, w) in cols.items()  # each column beyond chance alone
                 if _beyond_chance(int(s.sum()), n_s, int(h.sum()), n_h, NAMING)}  # type: ignore[union-attr]  # fmt: skip
        if not named:  # spread thin: the column holding most of them
            c = max(cols, key=lambda c: int(cols[c][0].sum()))
            named = {c: (int(cols[c][0].sum()), cols[c][2])}
        out.update({c: v for c, v in named.items() if c not in out})
    return out


def findings(found: dict[str, tuple[int, str]]) -> list[str]:
    """One line per blocking column: its name and row count, never a value."""
    return [
        f"column {name!r}: {rows} synthetic rows hold values the real table never holds ({what}); a copy "
        "re-coded this way hides a person from every count: give the release the real table's encoding, or "
        f"declare them in the policy (waivers: {{new_values.{name}: <why>}}, which asks for a sign-off)"
        for name, (rows, what) in found.items()
    ]


__all__ = ["blocked", "findings", "new_values", "tolerated"]
