"""Exact, chunked nearest-neighbour queries.

Query rows are processed in chunks so memory stays O(chunk × reference + rows × k). Both sides are
always whole: only a caller may choose to query fewer rows, never to search fewer references.

Euclidean: per chunk one float32 BLAS product gives ‖r‖² − 2 q·r (the row constant ‖q‖² does not change
the order); the k smallest are selected by repeated ``argmin`` (k ≤ 4) or a blocked two-stage selection; the chosen
neighbours' distances are then recomputed exactly in float64 from the encoded rows, so an identical
row is at distance exactly 0. Ties: among equal float32 scores the lowest reference index is taken;
the k neighbours are returned by exact distance, then index.

Mixed (Hamming, Gower): Σ_num w·|q − r| + w_cat · (number of differing categorical codes); the
matching categorical codes are counted by a float32 product of one-hot codes (exact for integers
below 2^24), or by equality for a column with many distinct values.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

CHUNK_BYTES = 64 * 2**20  # one chunk's distance block
ONEHOT_MAX_CODES = 512  # wider categorical columns are compared by equality instead
BLOCK = 128  # columns per block in the k ≥ 5 selection


@dataclass(frozen=True)
class Neighbors:
    """k nearest references per query row, nearest first."""

    dist: np.ndarray  # (n_query, k) float64
    idx: np.ndarray  # (n_query, k) int64
    seconds: float = 0.0

    @property
    def k(self) -> int:
        return int(self.idx.shape[1])

    def first(self, k: int) -> Neighbors:
        return Neighbors(self.dist[:, :k], self.idx[:, :k], self.seconds)


def chunk_rows(n_reference: int, *, bytes_per_cell: int = 4, budget: int = CHUNK_BYTES) -> int:
    return int(max(16, min(4096, budget // max(1, n_reference * bytes_per_cell))))


# ------------------------------------------------------------------------------------------ spaces


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
    """One-hot codes of the narrow categorical columns (the reference side negated and scaled by the
    categorical weight, so one product gives −w·(matching categories)) and the indices of the wide ones."""

    onehot_q: np.ndarray  # (n_query, width) float32
    onehot_r_t: np.ndarray  # (width, n_reference) float32
    wide: list[int]


def mixed_plan(q: MixedRows, r: MixedRows) -> MixedPlan:
    narrow, wide, offsets, width = [], [], [], 0
    for j in range(q.cat.shape[1]):
        hi = int(max(q.cat[:, j].max(initial=0), r.cat[:, j].max(initial=0))) + 1
        if hi <= ONEHOT_MAX_CODES:
            narrow.append(j)
            offsets.append(width)
            width += hi
        else:
            wide.append(j)

    def onehot(rows: MixedRows) -> np.ndarray:
        m = np.zeros((rows.cat.shape[0], width), dtype=np.float32)
        for j, off in zip(narrow, offsets, strict=True):
            m[np.arange(rows.cat.shape[0]), off + rows.cat[:, j]] = 1.0
        return m

    return MixedPlan(onehot(q), np.ascontiguousarray(onehot(r).T * np.float32(-q.cat_weight)), wide)


def mixed_block(q: MixedRows, r: MixedRows, s: int, e: int, plan: MixedPlan, out: np.ndarray,
                tmp: np.ndarray, *, terms: dict[int, np.ndarray] | None = None) -> None:
    """out = mixed distances of query rows s:e to every reference row (float32); ``tmp`` is scratch of
    the same shape; ``terms[j]``, when given, receives numerical column j's |Δ| (callers that need the
    distance without one column subtract it)."""
    w = np.float32(q.cat_weight)
    if plan.onehot_q.shape[1]:
        np.matmul(plan.onehot_q[s:e], plan.onehot_r_t, out=out)  # −w·(matching categories)
        out += w * q.cat.shape[1]
    else:
        out.fill(w * q.cat.shape[1])
    for j in plan.wide:
        np.equal(q.cat[s:e, j][:, None], r.cat[None, :, j], out=tmp, casting="unsafe")
        if w != 1:
            tmp *= w
        out -= tmp
    for j in range(q.num.shape[1]):
        t = terms[j] if terms is not None and j in terms else tmp
        np.subtract(q.num[s:e, j][:, None], r.num[None, :, j], out=t)
        np.abs(t, out=t)
        out += t


def _euclidean_blocks(query: np.ndarray, ref: np.ndarray, *, exclude_self: bool = False, pad: int = 1
                      ) -> Iterator[tuple[int, np.ndarray]]:
    """(start, scores) per chunk, scores = ‖r‖² − 2 q·r in float32, width rounded up to a multiple of
    ``pad`` with +inf columns (padding references: zero vectors of infinite norm)."""
    n_ref = ref.shape[0]
    width = -(-n_ref // pad) * pad
    ref_t2 = np.zeros((ref.shape[1], width), dtype=np.float32)
    ref_t2[:, :n_ref] = ref.T * np.float32(-2.0)
    rn = np.full(width, np.inf, dtype=np.float32)
    rn[:n_ref] = np.einsum("ij,ij->i", ref, ref, dtype=np.float32)
    step = chunk_rows(width)
    buf = np.empty((step, width), dtype=np.float32)
    for s in range(0, query.shape[0], step):
        q = query[s : s + step]
        b = buf[: q.shape[0]]
        np.matmul(q, ref_t2, out=b)
        b += rn
        if exclude_self:
            rows = np.arange(q.shape[0])
            b[rows, s + rows] = np.inf
        yield s, b


def euclidean_chunks(query: np.ndarray, ref: np.ndarray, *, exclude_self: bool = False
                     ) -> Iterator[tuple[int, np.ndarray]]:
    """Yields (start, scores) with scores = ‖r‖² − 2 q·r per chunk (float32; + ‖q‖² = squared distance)."""
    n_ref = ref.shape[0]
    for s, b in _euclidean_blocks(query, ref, exclude_self=exclude_self):
        yield s, b[:, :n_ref]


def _mixed_blocks(query: MixedRows, ref: MixedRows, *, exclude_self: bool = False, pad: int = 1
                  ) -> Iterator[tuple[int, np.ndarray]]:
    """(start, distances) of the mixed space per chunk (float32), width padded with +inf as above."""
    plan = mixed_plan(query, ref)
    n_ref = ref.n
    width = -(-n_ref // pad) * pad
    step = chunk_rows(width)
    full = np.empty((step, width), dtype=np.float32)
    full[:, n_ref:] = np.inf
    tmp = np.empty((step, n_ref), dtype=np.float32)
    for s in range(0, query.n, step):
        e = min(s + step, query.n)
        b = full[: e - s, :n_ref]
        mixed_block(query, ref, s, e, plan, b, tmp[: e - s])
        if exclude_self:
            rows = np.arange(e - s)
            b[rows, s + rows] = np.inf
        yield s, full[: e - s]


def mixed_chunks(query: MixedRows, ref: MixedRows, *, exclude_self: bool = False
                 ) -> Iterator[tuple[int, np.ndarray]]:
    """Yields (start, distances) of the mixed space per chunk (float32)."""
    for s, b in _mixed_blocks(query, ref, exclude_self=exclude_self):
        yield s, b[:, : ref.n]


def _select(block: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest per row, in (value, index) order: ties go to the lowest index.

    k ≤ 4: repeated ``argmin`` (each pass takes the first, i.e. lowest-index, minimum; the chosen entry
    is masked and restored afterwards). k ≥ 5: the row is cut into blocks of BLOCK columns (the width
    is a multiple of BLOCK, padded with +inf); one pass takes each block's minimum, the k blocks with
    the smallest (minimum, block index) are kept, and the k smallest are chosen among their k·BLOCK
    entries. Exact: a block holding one of the k smallest entries has its minimum before that entry,
    so it is among the first k blocks. Either way selection costs a few passes over the scores, not a
    full ``argpartition`` or sort.
    """
    rows = block.shape[0]
    if k <= 4:
        out = np.empty((rows, k), dtype=np.int64)
        r = np.arange(rows)
        saved = []
        for j in range(k):
            a = block.argmin(axis=1)
            out[:, j] = a
            if j < k - 1:
                saved.append((a, block[r, a].copy()))
                block[r, a] = np.inf
        for a, v in saved:
            block[r, a] = v
        return out
    n_blocks = block.shape[1] // BLOCK
    if block.shape[1] % BLOCK or n_blocks <= k:
        return _lex_smallest(block, np.broadcast_to(np.arange(block.shape[1]), block.shape), k)
    cube = block.reshape(rows, n_blocks, BLOCK)
    minima = cube.min(axis=2)
    best = np.argsort(minima, axis=1, kind="stable")[:, :k]  # (min, block index) order
    best.sort(axis=1)  # candidates in index order
    cand = cube[np.arange(rows)[:, None], best].reshape(rows, k * BLOCK)
    cand_idx = (best[:, :, None] * BLOCK + np.arange(BLOCK)).reshape(rows, k * BLOCK)
    return _lex_smallest(cand, cand_idx, k)


def _lex_smallest(values: np.ndarray, index: np.ndarray, k: int) -> np.ndarray:
    """The k smallest entries per row by (value, index); ``index`` ascends along each row.

    A partition finds the k-th value; everything below it is taken, and of the entries equal to it
    the first ones (lowest index) until k are taken; only those k are then sorted."""
    rows = values.shape[0]
    kth = np.partition(values, k - 1, axis=1)[:, k - 1 : k]
    lt = values < kth
    eq = values == kth
    need = k - lt.sum(axis=1, keepdims=True)
    sel = lt | (eq & (np.cumsum(eq, axis=1) <= need))
    cols = np.nonzero(sel)[1].reshape(rows, k)
    vals = np.take_along_axis(values, cols, axis=1)
    idx = np.take_along_axis(np.asarray(index), cols, axis=1)
    order = np.lexsort((idx, vals), axis=1)
    return np.take_along_axis(idx, order, axis=1).astype(np.int64)


def _finish(dist: np.ndarray, idx: np.ndarray, t0: float) -> Neighbors:
    order = np.lexsort((idx, dist), axis=1)  # by exact distance, then index
    return Neighbors(np.take_along_axis(dist, order, 1), np.take_along_axis(idx, order, 1),
                     time.perf_counter() - t0)


def knn_euclidean(query: np.ndarray, ref: np.ndarray, k: int, *, exclude_self: bool = False) -> Neighbors:
    """Exact k nearest references of every query row in a euclidean space."""
    t0 = time.perf_counter()
    k = _check_k(k, ref.shape[0] - (1 if exclude_self else 0))
    idx = np.empty((query.shape[0], k), dtype=np.int64)
    for s, block in _euclidean_blocks(query, ref, exclude_self=exclude_self, pad=BLOCK):
        idx[s : s + block.shape[0]] = _select(block, k)
    q64 = query.astype(np.float64)
    dist = np.empty(idx.shape, dtype=np.float64)
    for j in range(k):  # exact distances of the chosen neighbours
        diff = q64 - ref[idx[:, j]].astype(np.float64)
        dist[:, j] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    return _finish(dist, idx, t0)


def knn_mixed(query: MixedRows, ref: MixedRows, k: int, *, exclude_self: bool = False) -> Neighbors:
    """Exact k nearest references of every query row in a mixed (Hamming / Gower) space."""
    t0 = time.perf_counter()
    k = _check_k(k, ref.n - (1 if exclude_self else 0))
    idx = np.empty((query.n, k), dtype=np.int64)
    for s, block in _mixed_blocks(query, ref, exclude_self=exclude_self, pad=BLOCK):
        idx[s : s + block.shape[0]] = _select(block, k)
    dist = np.empty(idx.shape, dtype=np.float64)
    w = query.cat_weight
    for j in range(k):  # exact distances of the chosen neighbours, in float64
        r = idx[:, j]
        d = w * (query.cat != ref.cat[r]).sum(axis=1).astype(np.float64)
        if query.num.shape[1]:
            d += np.abs(query.num.astype(np.float64) - ref.num[r].astype(np.float64)).sum(axis=1)
        dist[:, j] = d
    return _finish(dist, idx, t0)


def _check_k(k: int, available: int) -> int:
    if k < 1:
        raise ValueError("k must be at least 1")
    if available < 1:
        raise ValueError("no reference row to search")
    return min(k, available)
