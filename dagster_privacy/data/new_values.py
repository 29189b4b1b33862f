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


MISSING = "values missing where the real column has none"


def _new_rows(train: pl.Series, other: pl.Series, numerical: bool) -> dict[str, np.ndarray]:
    """What kind of new value → bool per row of ``other``: cells missing where the training column has
    none, and categories it lacks or numbers more than a whole range outside it."""
    missing = other.is_null().to_numpy() if train.null_count() == 0 else np.zeros(other.len(), dtype=bool)
    if numerical:
        lo, hi = train.min(), train.max()
        if lo is None or hi is None:
            return {MISSING: missing}
        span = max(float(hi) - float(lo), 1.0)  # type: ignore[arg-type]
        x = other.cast(pl.Float64)
        far = ((x < float(lo) - span) | (x > float(hi) + span)).fill_null(False).to_numpy()  # type: ignore[arg-type]
        return {MISSING: missing, "numbers more than a whole real range outside it": far}
    new = (~other.is_in(train.drop_nulls().unique().implode())).fill_null(False).to_numpy()
    return {MISSING: missing, "categories it lacks": new & other.is_not_null().to_numpy()}


def _blocks(k_s: int, n_s: int, k_h: int, n_h: int, level: float) -> bool:
    """Beyond the holdout's chance, or, where the holdout shows none (a small holdout cannot reach the
    level: 3 rows let a whole re-coded column through), more than ``tolerated``."""
    return _beyond_chance(k_s, n_s, k_h, n_h, level) or (k_h == 0 and k_s > tolerated(n_s))


def _beyond_chance(k_s: int, n_s: int, k_h: int, n_h: int, level: float) -> bool:
    from scipy.stats import binom

    if k_s <= 0:
        return False
    return float(binom.sf(k_s - 1, k_s + k_h, n_s / (n_s + n_h))) <= level


#: (column, what kind) → (synthetic rows with such values, holdout rows with them or None)
NewRows = dict[tuple[str, str], tuple[np.ndarray, "np.ndarray | None"]]


def new_values(real: pl.DataFrame, holdout: pl.DataFrame | None, synthetic: pl.DataFrame,
               schema: Schema) -> NewRows:  # fmt: skip
    """Per used column and kind, which synthetic (and holdout) rows hold values the training table never
    holds. Every column, not only those the release holds new values in: the holdout's new rows elsewhere
    are part of chance (a second reading: selecting on the release side made the per-row test fail 2 of
    5 clean releases of 150 columns)."""
    out: NewRows = {}
    for c in schema.columns:
        if c.name not in synthetic.columns:
            continue
        num = c.kind == "numerical"
        train = real.get_column(c.name)
        syn = _new_rows(train, synthetic.get_column(c.name), num)
        hold = (
            None
            if holdout is None or not holdout.height
            else _new_rows(train, holdout.get_column(c.name), num)
        )
        for what, mask in syn.items():
            out[c.name, what] = (mask, None if hold is None else hold[what])
    return out


def blocked(rows: NewRows, declared: Collection[str] = ()) -> dict[str, tuple[int, str]]:
    """column → (synthetic rows, what) for the undeclared columns that block: each column and kind beyond
    the holdout's chance at half of LEVEL divided among them, and, at the other half split between the
    kinds, the rows with a new value of a kind in any column (two cells emptied per copy spread thin over
    the columns), which then names the columns beyond their own chance at NAMING (or the one holding most).
    Without a holdout: ``tolerated``."""
    cells = {k: v for k, v in rows.items() if f"new_values.{k[0]}" not in declared}
    if not cells:
        return {}
    n_s = next(iter(cells.values()))[0].size
    if any(h is None for _, h in cells.values()):
        return {c: (int(s.sum()), w) for (c, w), (s, _) in cells.items() if s.sum() > tolerated(n_s)}
    n_h = next(iter(cells.values()))[1].size  # type: ignore[union-attr]
    count = {k: (int(s.sum()), int(h.sum())) for k, (s, h) in cells.items()}  # type: ignore[union-attr]
    level = LEVEL / 2 / len(cells)
    out = {c: (ks, w) for (c, w), (ks, kh) in count.items() if _blocks(ks, n_s, kh, n_h, level)}
    for kind in {w for _, w in cells}:
        mine = {k: v for k, v in cells.items() if k[1] == kind}
        any_s = np.logical_or.reduce([s for s, _ in mine.values()])
        any_h = np.logical_or.reduce([h for _, h in mine.values()])  # type: ignore[arg-type]
        if not _blocks(int(any_s.sum()), n_s, int(any_h.sum()), n_h, LEVEL / 4):
            continue
        named = {c: (count[c, w][0], w) for c, w in mine if count[c, w][0] and
                 _beyond_chance(count[c, w][0], n_s, count[c, w][1], n_h, NAMING)}  # fmt: skip
        if not named:  # spread thin: the column holding most of them
            c, w = max(mine, key=lambda k: count[k][0])
            named = {c: (count[c, w][0], w)}
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
