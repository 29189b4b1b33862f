"""Rows of a mixed (Hamming / Gower) space and how a block of their float32 distances is computed: common
categorical values by a one-hot product, rare ones by scattering their few matching pairs (neighbors.py
selects from these blocks; chunks.py reduces them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .compiled import kernel

#: a categorical value shared by more than this fraction of all (query, reference) pairs is counted by
#: the one-hot product; rarer values by scattering their few matching pairs (MixedPlan)
DENSE_SHARE = 1.0 / 512


@dataclass(frozen=True)
class MixedRows:
    """Rows of a mixed space: scaled numerical values and integer categorical codes."""

    num: np.ndarray  # (n, p) float32, already multiplied by its weight
    cat: np.ndarray  # (n, q) int32 codes (shared across the two sides)
    cat_weight: float = 1.0

    @property
    def n(self) -> int:
        return int(max(self.num.shape[0], self.cat.shape[0]))


@dataclass(frozen=True)
class MixedPlan:
    """How the categorical matches of two sides are counted, per *value*: a value shared by many
    (query, reference) pairs is one column of a float32 one-hot product (the reference side negated and
    scaled by the categorical weight, so the product gives −w·matches); a rare value (a near-unique
    code, most values of a wide column) adds its few matching pairs by a scatter. A wide column then
    costs its matches, not one product column per distinct value."""

    onehot_q: np.ndarray  # (n_query, width) float32
    onehot_r_t: np.ndarray  # (width, n_reference) float32
    #: per column with rare values: reference rows sorted by code, and per query row the [lo, hi)
    #: range of reference rows sharing its (rare) code; empty ranges elsewhere
    sparse: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    ref_num_t: np.ndarray  # (numerical columns, n_reference) float32: the reference's numbers by column


def mixed_plan(q: MixedRows, r: MixedRows) -> MixedPlan:
    n_q, n_r = q.cat.shape[0], r.cat.shape[0]
    dense: list[tuple[int, np.ndarray]] = []
    sparse: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for j in range(q.cat.shape[1]):
        cq, cr = q.cat[:, j], r.cat[:, j]
        width = int(max(cq.max(initial=0), cr.max(initial=0))) + 1
        pairs = np.bincount(cq, minlength=width).astype(np.int64) * np.bincount(cr, minlength=width)
        is_dense = pairs > DENSE_SHARE * n_q * n_r
        if is_dense.any():
            dense.append((j, np.nonzero(is_dense)[0]))
        rare = (pairs > 0) & ~is_dense
        if rare.any():
            order = np.argsort(cr, kind="stable")
            sorted_codes = cr[order]
            keep = rare[cq]
            lo = np.where(keep, np.searchsorted(sorted_codes, cq, side="left"), 0)
            hi = np.where(keep, np.searchsorted(sorted_codes, cq, side="right"), 0)
            sparse.append((order, lo, hi))
    width = sum(v.size for _, v in dense)
    oq = np.zeros((n_q, width), dtype=np.float32)
    orf = np.zeros((n_r, width), dtype=np.float32)
    off = 0
    for j, vals in dense:
        pos = np.full(int(max(q.cat[:, j].max(initial=0), r.cat[:, j].max(initial=0))) + 1, -1, np.int64)
        pos[vals] = np.arange(vals.size)
        for mat, codes in ((oq, q.cat[:, j]), (orf, r.cat[:, j])):
            p = pos[codes]
            hit = np.nonzero(p >= 0)[0]
            mat[hit, off + p[hit]] = 1.0
        off += vals.size
    onehot_r_t = np.ascontiguousarray(orf.T * np.float32(-q.cat_weight))
    return MixedPlan(oq, onehot_r_t, sparse, np.ascontiguousarray(r.num.T, dtype=np.float32))


def mixed_block(
    q: MixedRows,
    r: MixedRows,
    s: int,
    e: int,
    plan: MixedPlan,
    out: np.ndarray,
    *,
    terms: tuple[Sequence[int], np.ndarray] | None = None,
    refs: tuple[int, int] | None = None,
) -> None:
    """out = mixed distances of query rows s:e to reference rows ``refs`` = [t0, t1) (default: all),
    float32; ``terms`` = (numerical columns, (len, rows, refs) array): receives those columns' |Δ|
    (callers that need the distance without one column subtract it)."""
    t0, t1 = refs if refs is not None else (0, r.n)
    w = np.float32(q.cat_weight)
    if plan.onehot_q.shape[1]:
        np.matmul(plan.onehot_q[s:e], plan.onehot_r_t[:, t0:t1], out=out)  # −w·(matches on common values)
        out += w * q.cat.shape[1]
    else:
        out.fill(w * q.cat.shape[1])
    for order, lo, hi in plan.sparse:  # matches on rare values: their pairs, column by column
        _subtract_pairs(out, s, e, t0, t1, order, lo, hi, w)
    slot = np.full(q.num.shape[1], -1, dtype=np.int64)
    kept = np.empty((0, 0, 0), dtype=np.float32)
    if terms is not None:
        slot[list(terms[0])], kept = np.arange(len(terms[0])), terms[1]
    _add_numbers(out, q.num[s:e], plan.ref_num_t, t0, slot, kept)


@kernel
def _add_numbers(out, q, r_t, t0, slot, kept) -> None:  # noqa: ANN001
    """out[i, j] += |q[i, c] − r_t[c, t0 + j]| column by column, in float32 (each sum rounded as numpy's
    subtract, abs and add passes over the block rounded it, in one pass); ``kept[slot[c]]`` receives
    column c's terms where slot[c] ≥ 0."""
    for i in range(out.shape[0]):
        o = out[i]
        for c in range(q.shape[1]):
            qv, rc, at = q[i, c], r_t[c], slot[c]
            if at >= 0:
                k = kept[at, i]
                for j in range(o.shape[0]):
                    t = abs(qv - rc[t0 + j])
                    k[j] = t
                    o[j] += t
            else:
                for j in range(o.shape[0]):
                    o[j] += abs(qv - rc[t0 + j])


@kernel
def _subtract_pairs(out, s, e, t0, t1, order, lo, hi, w) -> None:  # noqa: ANN001, PLR0913
    """out[i, r − t0] −= w for each query row s + i and each reference row r in [t0, t1) that shares its
    rare code: ``order[lo[s + i]:hi[s + i]]`` (one categorical column, so a pair comes once)."""
    for i in range(e - s):
        for j in range(lo[s + i], hi[s + i]):
            r = order[j]
            if t0 <= r < t1:
                out[i, r - t0] -= w
