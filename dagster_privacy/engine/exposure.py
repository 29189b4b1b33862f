"""Exposed records, counted per person (issue 45): which real records a release reproduces verbatim or
nearly, among the records that are rare at that radius, on the training side and, as chance, on the
holdout side.

A record is **rare at radius r** when no other training record lies within r cells of it (training
records leave themselves out; holdout records are compared with the training table), so the two sides
stay exchangeable: under no memorisation a rare training record and a rare holdout record are equally
likely to be reproduced. Numerical cells are compared on a grid of ``tolerance`` standard deviations of
the real column (jitter within a grid cell is no difference) wherever cells are counted. Three parts:

- **verbatim**: a synthetic row equal, in every used column, to a record no other training record
  equals (canonical row hashes; radius 0);
- **verbatim_isolated**: the same, among records **isolated** (rare at radius two: no other training
  record within two cells), whose chance count is near zero;
- **near_isolated**: a synthetic row within one cell of an isolated record that is not already a
  verbatim exposure (a copy with one cell edited, or jittered within the grid).

"Within k cells" is found with one hash per row and set of k masked columns: two rows are within one
cell exactly when they agree on some single-column masked hash. No pairwise pass over rows. Pure
functions of canonical frames; the decision (an exact conditional binomial test) is exposure_count.py's.
"""

from __future__ import annotations

import itertools
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..data.tables import Schema

#: the parts of the count (docs/metrics.md, "Exposed records"): every unique training record reproduced
#: verbatim; the isolated ones (rare at radius two) among them, whose chance count is near zero;
#: isolated records reproduced within one cell but not verbatim; the other records rare at radius
#: one reproduced within one cell (second review: a one-cell edit of them was seen by no gate); and
#: records a synthetic row lies nearer to than their own nearest other record (jittered copies)
PARTS = (
    "verbatim",
    "verbatim_isolated",
    "near_isolated",
    "near",
    "nearer",
    "cells_1",
    "cells_2",
    "tenth",
    "keys",
    "hundredth",
    "cells_1_far",
    "cells_1_wide",
    "sole_1",
    "sole_2",
)
#: the margin strata (issue 55): a record counts in cells_k when a synthetic row differs from it in at most
#: k cells while its nearest other real record differs in at least k + MARGIN_CELLS; in tenth when a
#: synthetic row lies within TENTH of its own spacing in the distance gates' space
CELL_STRATA = (1, 2)
MARGIN_CELLS = 2
#: cells_1_wide: cells_1's rule at a margin of one cell (records no other comes within one cell of):
#: on narrow tables of exact numbers (two flags and two amounts) no record is two cells clear of the
#: rest, so a nudged copy reached no stratum; on coarse tables its chance is high (its own small level)
#: cells_1's far band: its records no other record comes within FAR_CELLS cells of (four cells apart on
#: clean Adult: chance about 1 exposure in 2,700 records, against 1 in 400 at three); a sub-stratum of
#: cells_1, tested within it (decision/exposure_count.SUBSTRATA), never alone
FAR_CELLS = 3
TENTH = 0.1
#: the thinner distance stratum: on clean Adult 13 of 16,260 training records have a synthetic row within
#: a hundredth of their spacing (155 within a tenth), where a weight + 1 lands
HUNDREDTH = 0.01
#: above this many column pairs, isolation is taken at radius one (a 30-column table has 435 pairs)
MAX_PAIRS = 500
#: a margin stratum in cells needs one hash per set of k + 1 masked columns: above this many it is left
#: out (k = 2 on 15 columns: 455 triples; on 25 columns 2,300)
MAX_MASKS = 1000
#: … or, beyond it, while masks × pooled records stay within this (a 31-column table of 2,200 records:
#: 4,495 triples, about 2 s), so small wide tables keep their strata
MAX_MASK_WORK = 10**7


@dataclass(frozen=True)
class Part:
    """One part's counts: rare records per side, which of them the release exposes, and which synthetic
    rows expose a rare training record (for remediation)."""

    rare_train: np.ndarray  # bool per training record
    rare_holdout: np.ndarray  # bool per holdout record
    exposed_train: np.ndarray  # bool per training record (rare and reproduced)
    exposed_holdout: np.ndarray  # bool per holdout record
    exposing: np.ndarray  # bool per synthetic row

    def counts(self) -> dict[str, int]:
        return {
            "k_t": int(self.exposed_train.sum()),
            "n_t": int(self.rare_train.sum()),
            "k_c": int(self.exposed_holdout.sum()),
            "n_c": int(self.rare_holdout.sum()),
        }


@dataclass(frozen=True)
class Exposed:
    """What a lineage needs of one evaluation (issue 56): each part's rare and exposed records on both
    sides, the folded training and holdout tables they index (records are named by their content there,
    so a re-ordered or re-spelled extract names a person the same), and each training record's row
    number in the input as given. Memory only: never serialised."""

    parts: dict[str, Part]
    train: pl.DataFrame
    holdout: pl.DataFrame
    train_rows: np.ndarray | None  # input row number per training record (None: the context's order)


def grid(df: pl.DataFrame, schema: Schema, widths: dict[str, float]) -> pl.DataFrame:
    """Numerical columns as the index of their grid cell (``floor(x / width)``; missing stays missing);
    categorical and binary columns as they are."""
    big = 2.0**62  # a value off the grid's range (a generator's 1e300) is the grid's edge, not an error
    return df.with_columns(
        [
            (pl.col(c) / widths[c]).floor().clip(-big, big).cast(pl.Int64).alias(c)
            for c in schema.of_kind("numerical")
        ]
    )


def loose(df: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """Categorical and binary text as a copy's spelling cannot hide it: NFKC, blanks stripped, case
    folded (second review: upper-casing every text column hid a 30 % copy from every count). Only the
    count reads these forms; the other metrics keep the categories as given."""
    cols = [c for c in schema.of_kind("categorical", "binary") if df.schema[c] == pl.String]
    out = []
    for c in cols:
        values = df.get_column(c).unique().drop_nulls().to_list()
        forms = {v: unicodedata.normalize("NFKC", v).strip().casefold() for v in values}
        if any(k != v for k, v in forms.items()):
            out.append(pl.col(c).replace_strict(forms, default=pl.col(c)))
    return df.with_columns(out) if out else df


def grid_widths(real: pl.DataFrame, schema: Schema, tolerance: float) -> dict[str, float]:
    """Each numerical column's grid width: ``tolerance`` standard deviations of the real column (1.0
    for a constant or empty column)."""
    out = {}
    for c in schema.of_kind("numerical"):
        sd: Any = real.get_column(c).drop_nulls().std()  # a float for a numerical column, or None
        out[c] = tolerance * (float(sd) if sd is not None and np.isfinite(sd) and sd > 0 else 1.0)
    return out


def masked_hashes(df: pl.DataFrame) -> np.ndarray:
    """(rows, columns) uint64: per column, the row hash with that column left out."""
    if df.width == 1:  # masking the only column leaves every row equal
        return np.zeros((df.height, 1), dtype=np.uint64)
    return np.column_stack([df.drop(c).hash_rows(seed=0).to_numpy() for c in df.columns])


def _counts_in(keys: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """How many times each key occurs in ``reference``."""
    uniq, counts = np.unique(reference, return_counts=True)
    at = np.clip(np.searchsorted(uniq, keys), 0, max(0, uniq.size - 1))
    found = uniq.size > 0
    return np.where(found & (uniq[at] == keys) if found else False, counts[at] if found else 0, 0)


def restricted(part: Part, train: np.ndarray, holdout: np.ndarray, synthetic_keys: np.ndarray,
               train_keys: np.ndarray) -> Part:  # fmt: skip
    """A part restricted to a stratum of records (bool per training and holdout record): its exposing
    synthetic rows are those equal to an exposed record of the stratum."""
    exposed_t = part.exposed_train & train
    return Part(
        part.rare_train & train,
        part.rare_holdout & holdout,
        exposed_t,
        part.exposed_holdout & holdout,
        np.isin(synthetic_keys, train_keys[exposed_t]),
    )


def verbatim(train: np.ndarray, holdout: np.ndarray, synthetic: np.ndarray) -> Part:
    """The verbatim part from canonical row hashes. Rare: no other record of the training and holdout
    tables pooled is equal (leave-one-out over both: the two sides stay exchangeable, and a cluster of
    equal holdout records, which training rarity could never count, counts as no one)."""
    pooled = np.concatenate([train, holdout])
    rare_t = _counts_in(train, pooled) == 1
    rare_h = _counts_in(holdout, pooled) == 1
    exposed_t = rare_t & np.isin(train, synthetic)
    exposed_h = rare_h & np.isin(holdout, synthetic)
    exposing = np.isin(synthetic, train[exposed_t])
    return Part(rare_t, rare_h, exposed_t, exposed_h, exposing)


def rare_within(train: np.ndarray, holdout: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Records rare at radius one: no other record of both tables pooled agrees with them on any
    masked hash ((rows, columns) each)."""
    rare_t = np.ones(train.shape[0], dtype=bool)
    rare_h = np.ones(holdout.shape[0], dtype=bool)
    for j in range(train.shape[1]):
        pooled = np.concatenate([train[:, j], holdout[:, j]])
        rare_t &= _counts_in(train[:, j], pooled) == 1
        rare_h &= _counts_in(holdout[:, j], pooled) == 1
    return rare_t, rare_h


def isolated(train: pl.DataFrame, holdout: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Records rare at radius two (on the grid): no other record of both tables pooled agrees with
    them on all but two cells (one hash per pair of masked columns; leave-one-out). Bool per training
    and per holdout record. A table too wide for every pair (MAX_PAIRS) is taken at radius one (every
    single column masked), which is weaker isolation, not a wrong count."""
    cols = train.columns
    if len(cols) < 3:  # masking two of two columns leaves every row equal
        return np.zeros(train.height, dtype=bool), np.zeros(holdout.height, dtype=bool)
    masks = (
        [list(p) for p in itertools.combinations(cols, 2)]
        if len(cols) * (len(cols) - 1) // 2 <= MAX_PAIRS
        else [[c] for c in cols]
    )
    iso_t = np.ones(train.height, dtype=bool)
    iso_h = np.ones(holdout.height, dtype=bool)
    for drop in masks:
        kt = train.drop(drop).hash_rows(seed=0).to_numpy()
        kh = holdout.drop(drop).hash_rows(seed=0).to_numpy()
        pooled = np.concatenate([kt, kh])
        iso_t &= _counts_in(kt, pooled) == 1
        iso_h &= _counts_in(kh, pooled) == 1
    return iso_t, iso_h


def within_one(
    train: np.ndarray, holdout: np.ndarray, synthetic: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bool per training and per holdout record: some synthetic row agrees with it on a masked hash
    ((rows, columns) each), i.e. differs from it in at most one cell."""
    hit_t = np.zeros(train.shape[0], dtype=bool)
    hit_h = np.zeros(holdout.shape[0], dtype=bool)
    for j in range(train.shape[1]):
        hit_t |= np.isin(train[:, j], synthetic[:, j])
        hit_h |= np.isin(holdout[:, j], synthetic[:, j])
    return hit_t, hit_h


def near_part(
    rare: tuple[np.ndarray, np.ndarray],
    hits: tuple[np.ndarray, np.ndarray],
    verbatim_part: Part,
    train: np.ndarray,
    synthetic: np.ndarray,
) -> Part:
    """A within-one-cell part: the records of ``rare`` (training, holdout) a synthetic row lies within
    one cell of (``hits``), not already exposed verbatim; its exposing rows from the masked hashes."""
    exposed_t = rare[0] & hits[0] & ~verbatim_part.exposed_train
    exposed_h = rare[1] & hits[1] & ~verbatim_part.exposed_holdout
    return Part(rare[0], rare[1], exposed_t, exposed_h, exposing_near(train, synthetic, exposed_t))


def exposing_near(train: np.ndarray, synthetic: np.ndarray, exposed: np.ndarray) -> np.ndarray:
    """Bool per synthetic row: within one cell of an exposed training record (masked hashes)."""
    out = np.zeros(synthetic.shape[0], dtype=bool)
    for j in range(train.shape[1]):
        out |= np.isin(synthetic[:, j], train[exposed, j])
    return out


def nearer(
    own_t: np.ndarray, own_h: np.ndarray, syn_t: np.ndarray, syn_h: np.ndarray, n_synthetic: int
) -> Part:
    """The nearer part, in the euclidean space of the distance gates: a record, training or holdout, is
    exposed when a synthetic row lies strictly nearer to it than its own nearest other record of the
    real and holdout tables together (``own_t``, ``own_h``: leave one out). One rule for both sides that
    does not depend on which side a record's neighbours fell: given the records and the release, the
    split alone decides who is counted where, so under no memorisation the training count is exactly
    hypergeometric (the rule "nearest other training record" made each record's ball depend on its
    neighbours' sides and the count overdispersed: a z-score's sd of 1.5 over 20 clean splits). A record
    with a twin (distance 0) is exposed by no one. A copy jittered below the table's own spacing lands
    inside its record's ball; unseen real rows land there as often as chance (about a third of records
    on the bench's clean releases), which the hypergeometric test of exposure_count.py allows for. It
    flags no synthetic row: at that chance rate it is a membership signal, not a list of rows to drop
    (remediation drops the other parts' rows)."""
    rare_t, rare_h = own_t > 0, own_h > 0
    exposed_t, exposed_h = rare_t & (syn_t < own_t), rare_h & (syn_h < own_h)
    return Part(rare_t, rare_h, exposed_t, exposed_h, np.zeros(n_synthetic, dtype=bool))


def margin_part(
    own: tuple[np.ndarray, np.ndarray],
    syn: tuple[np.ndarray, np.ndarray],
    nearest_synthetic: np.ndarray,
    n_synthetic: int,
    *,
    cells: int | None = None,
    ratio: float | None = None,
) -> Part:
    """A margin stratum (issue 55, "nearer than anyone else, at every margin"), one rule for both sides:
    ``own`` is each record's distance to its nearest other record of the training and holdout tables
    pooled (leave one out), ``syn`` its distance to the nearest synthetic row (training, holdout). With
    ``cells`` = k (distances counted in cells): rare when own ≥ k + MARGIN_CELLS, exposed when syn ≤ k — a
    copy with k cells altered of a record no other record comes within k + 1 cells of. With ``ratio``
    (distances in the euclidean space): rare when own > 0, exposed when syn < ratio · own — a copy nudged
    by a small part of the table's own spacing there. Either way a record's stratum depends on the
    records alone, never on which side its neighbours fell, so the two sides stay exchangeable and chance
    is thin: a synthetic row that close to an unseen record is rare. Its exposing rows: each exposed
    training record's nearest synthetic row (``nearest_synthetic``)."""
    if cells is not None:
        rare = (own[0] >= cells + MARGIN_CELLS, own[1] >= cells + MARGIN_CELLS)
        exposed_t, exposed_h = rare[0] & (syn[0] <= cells), rare[1] & (syn[1] <= cells)
    else:
        r = float(ratio or 0.0)
        rare = (own[0] > 0, own[1] > 0)
        exposed_t, exposed_h = rare[0] & (syn[0] < r * own[0]), rare[1] & (syn[1] < r * own[1])
    exposing = np.zeros(n_synthetic, dtype=bool)
    exposing[nearest_synthetic[exposed_t]] = True
    return Part(rare[0], rare[1], exposed_t, exposed_h, exposing)


def edit_registration(
    train_grid: pl.DataFrame, train_masked: np.ndarray, rare_near: np.ndarray, rare_verbatim: np.ndarray,
    rng: np.random.Generator, *, samples: int = 400,
) -> float:  # fmt: skip
    """The share of one-cell edits of rare (unique) training records that the near part counts: sampled
    records, one cell each set to another value of that column's training values (on the grid), looked
    up against the rare-at-one training records' masked hashes. The edited copies live in memory only."""
    candidates = np.flatnonzero(rare_verbatim)
    if candidates.size == 0 or train_grid.width < 2:
        return 0.0
    picked = np.sort(rng.choice(candidates, size=min(samples, candidates.size), replace=False))
    values = {
        c: train_grid.get_column(c).unique().sort(nulls_last=True).to_list() for c in train_grid.columns
    }
    rows = train_grid[picked].rows()
    edited = []
    for row in rows:
        j = int(rng.integers(0, len(row)))
        pool = values[train_grid.columns[j]]
        if len(pool) > 1:
            at = pool.index(row[j])
            row = (*row[:j], pool[(at + int(rng.integers(1, len(pool)))) % len(pool)], *row[j + 1 :])
        edited.append(row)
    edits = pl.DataFrame(edited, schema=train_grid.schema, orient="row")
    masked = masked_hashes(edits)
    rare_keys = train_masked[rare_near]
    registered = np.zeros(picked.size, dtype=bool)
    for j in range(masked.shape[1]):
        registered |= np.isin(masked[:, j], rare_keys[:, j])
    return float(registered.mean())


__all__ = [
    "loose",
    "PARTS",
    "Exposed",
    "Part",
    "edit_registration",
    "exposing_near",
    "grid",
    "grid_widths",
    "isolated",
    "margin_part",
    "masked_hashes",
    "near_part",
    "nearer",
    "rare_within",
    "verbatim",
    "within_one",
]
