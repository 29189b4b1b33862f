"""The margin strata in cells (issue 55), by masked keys: ``cells_k`` (a record no other comes within
k + 1 cells of, a synthetic row within k: the record's side), its far band and wide margin, and
``sole_k`` (a synthetic row k cells from one record and k + 2 from every other: the release's side).

One 64-bit key per cell (its value's hash mixed with the column's position), so a row's key with some
columns left out is the row's sum less those columns' keys: "within k cells" is one key per set of k
masked columns, with no pairwise pass over rows. Pure functions of canonical frames; the parts'
decision is decision/exposure_count.py's.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl

from .exposure import CELL_STRATA, FAR_CELLS, MARGIN_CELLS, MAX_MASK_WORK, MAX_MASKS, Part, _counts_in


def cell_keys(df: pl.DataFrame) -> np.ndarray:
    """(rows, columns) uint64: each cell's value hashed with its column's position, so that a row's key
    with some columns left out is the sum of the other columns' keys (wrapping): one subtraction per
    mask instead of one row hash per mask."""
    from ..data.tables import mix64

    if df.width == 0:
        return np.zeros((df.height, 0), dtype=np.uint64)
    with np.errstate(over="ignore"):
        return np.column_stack(
            [
                mix64(df.get_column(c).hash(seed=0).to_numpy() + np.uint64(j + 1) * _GOLDEN)
                for j, c in enumerate(df.columns)
            ]  # fmt: skip
        )


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _masked(keys: np.ndarray, total: np.ndarray, mask: tuple[int, ...]) -> np.ndarray:
    with np.errstate(over="ignore"):
        return total - keys[:, list(mask)].sum(axis=1, dtype=np.uint64)


def _in_sorted(values: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Bool per value: it occurs in ``ref`` (sorted): a binary search, cheaper than np.isin's sort."""
    if ref.size == 0:
        return np.zeros(values.size, dtype=bool)
    at = np.minimum(np.searchsorted(ref, values), ref.size - 1)
    return ref[at] == values


def _shared(values: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Bool per candidate index: its value occurs more than once in ``values``."""
    ref = np.sort(values)
    v = values[candidates]
    at = np.searchsorted(ref, v)
    # the first equal sits at ``at``: a second one right after it
    return (at + 1 < ref.size) & (ref[np.minimum(at + 1, ref.size - 1)] == v)


def cells_strata(
    train: pl.DataFrame, holdout: pl.DataFrame, synthetic: pl.DataFrame, strata: tuple[int, ...] = CELL_STRATA
) -> dict[str, Part]:
    """The margin strata in cells (issue 55), on exact values: for each k, a record is rare when no
    other record of both tables pooled lies within k + 1 cells of it (one key per set of k + 1 masked
    columns, leave one out) and exposed when a synthetic row lies within k cells (equal on some set of
    all but k columns); its exposing rows are every such synthetic row. ``cells_1_far``: cells_1's
    records no other comes within FAR_CELLS cells of (cells_2's rare ones); ``cells_1_wide``: records no
    other comes within one cell of, exposed within one. A stratum whose masks would
    are too many (``_fits``: a wide, large table) is left out: no stratum is better than an inexact one."""
    keys = {"t": cell_keys(train), "h": cell_keys(holdout), "s": cell_keys(synthetic)}
    with np.errstate(over="ignore"):
        total = {r: k.sum(axis=1, dtype=np.uint64) for r, k in keys.items()}
    pooled = (np.concatenate([keys["t"], keys["h"]]), np.concatenate([total["t"], total["h"]]))
    # the masked columns per margin: no other record within k + 1 cells is one key per set of k + 1
    wide = {k: k + MARGIN_CELLS - 1 for k in strata}
    rare = {w: _rare_within(*pooled, w) for w in {*wide.values(), FAR_CELLS, 1}}
    # within k cells, once per k and only where a part at k is counted (wide tables skip k = 2)
    needed = {k for k in strata if rare[wide[k]] is not None} | (
        {1} & set(strata) if rare[1] is not None else set()
    )
    hits = {k: _within(keys, total, pooled, k) for k in needed}
    out: dict[str, Part] = {}
    for k in strata:
        if (r := rare[wide[k]]) is not None:
            out[f"cells_{k}"] = _cells_part(keys, total, r, hits[k], k, train.height)
    far = rare[FAR_CELLS]
    if far is not None and "cells_1" in out:
        out["cells_1_far"] = _cells_part(keys, total, far, hits[1], 1, train.height)
    if 1 in strata and rare[1] is not None:
        out["cells_1_wide"] = _cells_part(keys, total, rare[1], hits[1], 1, train.height)
    return {**out, **sole_parts(keys, total, pooled, train.height, strata)}


def _rare_within(pooled_keys: np.ndarray, pooled_total: np.ndarray, wide: int) -> np.ndarray | None:
    """Bool per pooled record: no other record agrees with it on all but ``wide`` columns (None: the
    masks are too many, ``_fits``, or every column would be masked)."""
    d = pooled_keys.shape[1]
    if not _fits(d, wide, pooled_total.size):
        return None
    rare = np.ones(pooled_total.size, dtype=bool)
    for m in itertools.combinations(range(d), wide):
        alive = np.flatnonzero(rare)  # a record seen within wide cells of another stays common
        if alive.size == 0:
            break
        rare[alive[_shared(_masked(pooled_keys, pooled_total, m), alive)]] = False
    return rare


def _fits(d: int, wide: int, records: int) -> bool:
    """Whether the masks of ``wide`` of ``d`` columns are affordable: within MAX_MASKS, or within
    MAX_MASK_WORK masks × records (and not every column masked)."""
    if wide >= d:
        return False
    masks = math.comb(d, wide)
    return masks <= MAX_MASKS or masks * records <= MAX_MASK_WORK


def _within(keys: dict[str, np.ndarray], total: dict[str, np.ndarray], pooled: tuple[np.ndarray, np.ndarray],
            k: int) -> np.ndarray:  # fmt: skip
    """Bool per pooled record: a synthetic row lies within k cells of it (shared by the parts at k)."""
    hit = np.zeros(pooled[1].size, dtype=bool)
    for m in itertools.combinations(range(keys["t"].shape[1]), k):
        hit |= _in_sorted(_masked(*pooled, m), np.sort(_masked(keys["s"], total["s"], m)))
    return hit


def _cells_part(
    keys: dict[str, np.ndarray],
    total: dict[str, np.ndarray],
    rare: np.ndarray,
    hit: np.ndarray,
    k: int,
    n_t: int,
) -> Part:
    """The records among ``rare`` a synthetic row lies within k cells of (``hit``), and those rows."""
    exposed = rare & hit
    exposing = np.zeros(keys["s"].shape[0], dtype=bool)
    for m in itertools.combinations(range(keys["t"].shape[1]), k):  # every synthetic row within k cells
        ref = np.sort(_masked(keys["t"], total["t"], m)[exposed[:n_t]])
        exposing |= _in_sorted(_masked(keys["s"], total["s"], m), ref)
    return Part(rare[:n_t], rare[n_t:], exposed[:n_t], exposed[n_t:], exposing)


def sole_parts(
    keys: dict[str, np.ndarray],
    total: dict[str, np.ndarray],
    pooled: tuple[np.ndarray, np.ndarray],
    n_t: int,
    strata: tuple[int, ...] = CELL_STRATA,
) -> dict[str, Part]:
    """Copies seen from the release's side (issue 55, "nearer than anyone else"): ``sole_k`` exposes a
    record when a synthetic row lies k cells from it (none nearer) and every other real record lies at
    least k + MARGIN_CELLS cells from that row. A copy with two cells altered is nearer to its person
    than to anyone else whatever the person's own spacing; a clean row is so singled out rarely. Which
    records are exposed depends on the pooled records and the release alone, never on the sides, so the
    two sides stay exchangeable. Rare: records with no equal record (a twin is never the sole nearest).
    A k whose masks are too many (``_fits``) is left out."""
    d = keys["t"].shape[1]
    rare = _counts_in(pooled[1], pooled[1]) == 1
    seen = _in_sorted(total["s"], np.sort(pooled[1]))  # verbatim rows are the verbatim parts'
    fits = [k for k in strata if _fits(d, k + MARGIN_CELLS - 1, pooled[1].size)]
    out: dict[str, Part] = {}
    for k in range(1, max(fits, default=0) + 1):  # a row k cells off is no row's at k + 1
        wide = k + MARGIN_CELLS - 1
        near = _nearest_at(keys["s"], total["s"], pooled, k, ~seen)
        seen |= near >= 0
        if k not in fits:
            continue
        alone = _alone_within(keys["s"], total["s"], pooled, near, wide, math.comb(d - k, wide - k))
        hit = np.zeros(pooled[1].size, dtype=bool)
        hit[near[alone]] = True
        hit &= rare
        exposing = alone & (near < n_t) & hit[np.maximum(near, 0)]
        out[f"sole_{k}"] = Part(rare[:n_t], rare[n_t:], hit[:n_t], hit[n_t:], exposing)
    return out


def _nearest_at(s_keys: np.ndarray, s_total: np.ndarray, pooled: tuple[np.ndarray, np.ndarray], k: int,
                todo: np.ndarray) -> np.ndarray:  # fmt: skip
    """Per synthetic row in ``todo``: a pooled record within k cells of it (index, or -1)."""
    out = np.full(s_total.size, -1, dtype=np.int64)
    rows = np.flatnonzero(todo)
    for m in itertools.combinations(range(s_keys.shape[1]), k):
        if rows.size == 0:
            break
        ref = _masked(*pooled, m)
        if ref.size == 0:  # no real record: none is near
            break
        order = np.argsort(ref)
        ref = ref[order]
        v = _masked(s_keys[rows], s_total[rows], m)
        at = np.minimum(np.searchsorted(ref, v), ref.size - 1)
        found = ref[at] == v
        out[rows[found]] = order[at[found]]
        rows = rows[~found]
    return out


def _alone_within(s_keys: np.ndarray, s_total: np.ndarray, pooled: tuple[np.ndarray, np.ndarray],
                  near: np.ndarray, wide: int, own: int) -> np.ndarray:  # fmt: skip
    """Bool per synthetic row with a record in ``near``: no other pooled record agrees with it on all but
    ``wide`` columns. Its own record (k cells off) agrees on ``own`` = d − k of the wide-column masks
    (those holding its k differing cells), so the row is alone when the masks' match counts sum to that."""
    rows = np.flatnonzero(near >= 0)
    matches = np.zeros(rows.size, dtype=np.int64)
    for m in itertools.combinations(range(s_keys.shape[1]), wide):
        ref = np.sort(_masked(*pooled, m))
        v = _masked(s_keys[rows], s_total[rows], m)
        matches += np.searchsorted(ref, v, side="right") - np.searchsorted(ref, v, side="left")
    ok = np.zeros(s_total.size, dtype=bool)
    ok[rows[matches == own]] = True
    return ok
