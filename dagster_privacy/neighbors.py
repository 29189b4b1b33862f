"""Exact nearest-neighbour queries in fixed blocks.

    EvaluationContext.neighbors(space, query role, reference role, k)   (context.py: each once, largest k)
        │
        ├─ knn_euclidean(query, ref, k)          ├─ knn_mixed(query, ref, k)      (Hamming / Gower)
        │    query_tiles × reference tiles, handed to an Executor (executors.py: in-process or Ray)
        │    _euclidean_tile: [q, 1]·[−2r; ‖r‖²] │    _mixed_tile: Σ w|q−r| + w_cat·(#differing codes)
        │    (one float32 BLAS product over the  │    per block, mixed_plan once
        │    dense dimensions; the rare ones'    │
        │    few pairs added after: SparseDims)  │
        │          ▼                             │          ▼
        │    topk.select: k smallest per block row (group minima, the k best groups, the k best of
        │    their entries, ties to the lowest row), their exact float64 distances, _merge: the running
        │    top-k across reference tiles; optionally each row's farthest reference (the extreme pair)
        │          ▼
        └─ _finish: the k neighbours ordered by (exact distance, index) ─▶ Neighbors

    The reference side is laid out once per query (reference_order): within each tile, group g of
    GROUP consecutive rows sits at positions g, g + nb, …, so group minima are GROUP vector minima.
    chunks.map_chunks hands raw blocks (query rows × the whole reference, in row order) to a reduction that is
    not a top-k (ties, counts within a radius, densities), on the same executor.

Both sides are always whole: only a caller may choose to query fewer rows, never to search fewer
references. An identical row is at distance exactly 0 (float64 from the encoded rows). Ties: among
equal float32 scores the lowest reference index is taken; the k neighbours are returned by exact
distance, then index. Mixed spaces count matching categorical codes by a float32 product of one-hot
codes for common values (exact for integers below 2^24) and by scattering the few matching pairs of
rare values (MixedPlan).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from .errors import MetricError
from .executors import IN_PROCESS, Executor
from .topk import GROUP, group_layout, group_reduce, select

#: a categorical value shared by more than this fraction of all (query, reference) pairs is counted by
#: the one-hot product; rarer values by scattering their few matching pairs (MixedPlan)
DENSE_SHARE = 1.0 / 512
#: a euclidean dimension whose nonzero (query, reference) pairs are at most this share of all pairs (a
#: rare category's one-hot column) leaves the float32 product: its few pairs are added to the block
#: afterwards (SparseDims). Measured on Adult-shaped tables: 52 of 110 dimensions stay in the product,
#: the rare pairs are 0.3 % of a block, and product + additions cost 1.65 ns per cell against 2.8 ns
SPARSE_SHARE = 1.0 / 2048
#: reference rows per block of a k-NN query (a multiple of GROUP): each query tile walks the reference in
#: tiles of this width, keeping a running top-k, so memory does not grow with the reference side
REF_TILE = 16384
#: bytes of one k-NN distance block; blocks run side by side (one per core), so each gets a share
KNN_BLOCK_BYTES = 32 * 2**20


@dataclass(frozen=True)
class Neighbors:
    """k nearest references per query row, nearest first."""

    dist: np.ndarray  # (n_query, k) float64
    idx: np.ndarray  # (n_query, k) int64
    seconds: float = 0.0
    #: when asked (``farthest=True``): per query row the farthest reference, (float32 squared distance,
    #: index), read off the same blocks; the float32 choice is to be recomputed exactly by the caller
    farthest: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def k(self) -> int:
        return int(self.idx.shape[1])

    def first(self, k: int) -> Neighbors:
        return Neighbors(self.dist[:, :k], self.idx[:, :k], self.seconds, self.farthest)


def chunk_rows(n_reference: int, *, budget: int, bytes_per_cell: int = 4) -> int:
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
    return MixedPlan(oq, np.ascontiguousarray(orf.T * np.float32(-q.cat_weight)), sparse)


def mixed_block(
    q: MixedRows,
    r: MixedRows,
    s: int,
    e: int,
    plan: MixedPlan,
    out: np.ndarray,
    tmp: np.ndarray,
    *,
    terms: dict[int, np.ndarray] | None = None,
    refs: tuple[int, int] | None = None,
) -> None:
    """out = mixed distances of query rows s:e to reference rows ``refs`` = [t0, t1) (default: all),
    float32; ``tmp`` is scratch of the same shape; ``terms[j]``, when given, receives numerical column
    j's |Δ| (callers that need the distance without one column subtract it)."""
    t0, t1 = refs if refs is not None else (0, r.n)
    w = np.float32(q.cat_weight)
    if plan.onehot_q.shape[1]:
        np.matmul(plan.onehot_q[s:e], plan.onehot_r_t[:, t0:t1], out=out)  # −w·(matches on common values)
        out += w * q.cat.shape[1]
    else:
        out.fill(w * q.cat.shape[1])
    for order, lo, hi in plan.sparse:  # matches on rare values: scatter their pairs
        cnt = hi[s:e] - lo[s:e]
        total = int(cnt.sum())
        if total:
            rows = np.repeat(np.arange(e - s), cnt)
            first = np.repeat(np.cumsum(cnt) - cnt, cnt)
            cols = order[np.repeat(lo[s:e], cnt) + (np.arange(total) - first)]
            if refs is not None:
                inside = (cols >= t0) & (cols < t1)
                rows, cols = rows[inside], cols[inside] - t0
            out[rows, cols] -= w  # a pair once per column
    for j in range(q.num.shape[1]):
        t = terms[j] if terms is not None and j in terms else tmp
        np.subtract(q.num[s:e, j][:, None], r.num[None, t0:t1, j], out=t)
        np.abs(t, out=t)
        out += t


@dataclass(frozen=True)
class SparseDims:
    """A euclidean query's dimensions split in two: ``dense`` ones go into the float32 block product, each
    sparse one adds −2·q_j·r_j to the few (query row, reference position) pairs where both are nonzero.
    Per sparse dimension: the query rows and values where it is nonzero, and the laid-out reference
    positions and −2·values where it is nonzero (both ascending)."""

    dense: np.ndarray  # (d_dense,) int64 dimensions of the product
    query: tuple[tuple[np.ndarray, np.ndarray], ...]
    ref: tuple[tuple[np.ndarray, np.ndarray], ...]

    @classmethod
    def split(cls, query: np.ndarray, ref: np.ndarray, laid: np.ndarray, pad: np.ndarray) -> SparseDims:
        """Dimensions whose nonzero pairs are at most SPARSE_SHARE of all pairs leave the product; one
        that is zero on either side adds nothing and is dropped. ``laid``: ref in its laid-out order."""
        nz_q = np.count_nonzero(query, axis=0).astype(np.float64)
        nz_r = np.count_nonzero(ref, axis=0).astype(np.float64)
        pairs = nz_q * nz_r
        rare = pairs <= SPARSE_SHARE * max(1, query.shape[0]) * max(1, ref.shape[0])
        q_parts, r_parts = [], []
        for j in np.nonzero(rare & (pairs > 0))[0]:
            qi = np.nonzero(query[:, j])[0]
            ri = np.nonzero((laid[:, j] != 0) & ~pad)[0]
            q_parts.append((qi, query[qi, j].astype(np.float32)))  # the product's precision
            r_parts.append((ri, laid[ri, j].astype(np.float32) * np.float32(-2.0)))
        return cls(np.nonzero(~rare)[0], tuple(q_parts), tuple(r_parts))

    def add_to(self, block: np.ndarray, s: int, e: int, t0: int, t1: int) -> None:
        """Add the sparse dimensions' −2·q·r to the block of query rows [s, e) × positions [t0, t1)."""
        for (qi, qv), (ri, rv) in zip(self.query, self.ref, strict=True):
            qa, qb = np.searchsorted(qi, (s, e))
            ra, rb = np.searchsorted(ri, (t0, t1))
            if qa < qb and ra < rb:
                block[np.ix_(qi[qa:qb] - s, ri[ra:rb] - t0)] += np.outer(qv[qa:qb], rv[ra:rb])


def _finish(
    dist: np.ndarray, idx: np.ndarray, t0: float, farthest: tuple[np.ndarray, np.ndarray] | None = None
) -> Neighbors:
    if not np.isfinite(dist).all():  # a NaN or inf distance would sort as nearest or farthest: no figure
        raise MetricError("a neighbour distance is not a finite number")
    order = np.lexsort((idx, dist), axis=1)  # by exact distance, then index
    return Neighbors(
        np.take_along_axis(dist, order, 1),
        np.take_along_axis(idx, order, 1),
        time.perf_counter() - t0,
        farthest,
    )


#: the score of a padding position: finite (so the product never meets inf · 0), above any real score
_PAD_SCORE = np.float32(1e30)


def _padded(n: int) -> int:
    return -(-max(1, n) // GROUP) * GROUP


def query_tiles(n_query: int, n_reference: int, *, ref_tile: int | None = None) -> list[tuple[int, int]]:
    """The fixed query tiles of a k-NN query: a function of the sizes only (never of the executor), so
    every executor computes the same blocks. Rows per tile: the distance block of one reference tile
    within KNN_BLOCK_BYTES (512 rows of a full reference tile: wide enough for an efficient GEMM)."""
    width = min(_padded(n_reference), ref_tile or REF_TILE)
    step = chunk_rows(width, budget=KNN_BLOCK_BYTES)
    return [(s, min(s + step, n_query)) for s in range(0, n_query, step)]


def reference_tiles(n_reference: int, ref_tile: int) -> list[tuple[int, int]]:
    """[t0, t1) of each reference tile in padded positions (every width a multiple of GROUP)."""
    width = _padded(n_reference)
    return [(t0, min(t0 + ref_tile, width)) for t0 in range(0, width, ref_tile)]


def reference_order(n_reference: int, ref_tile: int) -> np.ndarray:
    """The reference row at each padded position, tile by tile in ``group_layout``; padding: n_reference."""
    out = np.concatenate([t0 + group_layout(t1 - t0) for t0, t1 in reference_tiles(n_reference, ref_tile)])
    return np.minimum(out, n_reference)


def _merge(best: tuple[np.ndarray, np.ndarray] | None, dist: np.ndarray, idx: np.ndarray, k: int):
    """The running top-k: the k smallest by (exact float64 distance, index) of both candidate sets."""
    if best is None:
        return dist, idx
    d = np.concatenate([best[0], dist], axis=1)
    i = np.concatenate([best[1], idx], axis=1)
    order = np.lexsort((i, d), axis=1)[:, :k]
    return np.take_along_axis(d, order, 1), np.take_along_axis(i, order, 1)


@dataclass(frozen=True)
class _Sides:
    """What every tile of one query reads (put once in the executor's store): both encoded sides, the
    reference laid out by ``reference_order``."""

    query: np.ndarray | MixedRows
    ref: np.ndarray | MixedRows
    k: int
    exclude_self: bool
    ref_tile: int
    #: euclidean, per reference tile: [−2·refᵀ; ‖r‖²] per position ((d_dense + 1) × tile width,
    #: contiguous), so [q, 1] · it is the score ‖r‖² − 2 q·r in one product (the sparse dimensions added
    #: afterwards); a padding column is [0; _PAD_SCORE]
    ref_scaled: tuple[np.ndarray, ...] | None = None
    sparse: SparseDims | None = None  # euclidean: which dimensions leave the product
    ref_laid: MixedRows | None = None  # mixed: the reference rows per position (padding: row 0)
    plan: MixedPlan | None = None  # mixed: how categorical matches are counted (query × ref_laid)
    farthest: bool = False  # euclidean: also each query row's farthest reference

    @property
    def n_ref(self) -> int:
        return self.ref.shape[0] if isinstance(self.ref, np.ndarray) else self.ref.n


_SCRATCH = threading.local()


def scratch(name: str, shape: tuple[int, int]) -> np.ndarray:
    """A float32 block buffer of this thread, reused across blocks: a fresh 32 MB block per product is
    a fresh mmap whose pages the kernel zeroes and faults in (measured: 16 % of a block's product)."""
    have = getattr(_SCRATCH, name, None)
    size = shape[0] * shape[1]
    if have is None or have.size < size:
        have = np.empty(size, dtype=np.float32)
        setattr(_SCRATCH, name, have)
    return have[:size].reshape(shape)


def _tile_top(sides: _Sides, block: np.ndarray, s: int, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidates of one (query tile × reference tile) block: the k best reference rows per query row
    (global indices) and whether each is a real candidate (a reference row, not the query row itself)."""
    width = t1 - t0
    if sides.exclude_self:  # the query row itself, where it falls in this tile
        rows = np.arange(block.shape[0])
        local = s + rows - t0
        inside = (local >= 0) & (local < min(width, sides.n_ref - t0))
        nb = width // GROUP
        block[rows[inside], (local[inside] % GROUP) * nb + local[inside] // GROUP] = np.inf
    local_rows, values = select(block, min(sides.k, width))
    idx = local_rows + t0
    ok = np.isfinite(values) & (idx < sides.n_ref)  # self is +inf; padding rows are past n_ref
    return idx, ok


def _euclidean_tile(sides: _Sides, rows: tuple[int, int]) -> tuple[np.ndarray, ...]:
    s, e = rows
    q = sides.query[s:e]  # type: ignore[index]
    ref, sparse = sides.ref, sides.sparse
    assert isinstance(ref, np.ndarray) and sides.ref_scaled is not None and sparse is not None
    q1 = np.empty((e - s, sparse.dense.size + 1), dtype=np.float32)
    q1[:, :-1] = q[:, sparse.dense]
    q1[:, -1] = 1.0
    q64 = q.astype(np.float64)
    best = None
    far = np.full(e - s, -np.inf, dtype=np.float32), np.zeros(e - s, dtype=np.int64)
    for (t0, t1), scaled in zip(reference_tiles(ref.shape[0], sides.ref_tile), sides.ref_scaled, strict=True):
        block = np.matmul(q1, scaled, out=scratch("block", (e - s, t1 - t0)))
        sparse.add_to(block, s, e, t0, t1)
        idx, ok = _tile_top(sides, block, s, t0, t1)
        if sides.farthest:
            _farthest(block, t0, t1, ref.shape[0], far)
        safe = np.minimum(idx, ref.shape[0] - 1)
        dist = np.empty(idx.shape, dtype=np.float64)
        for j in range(idx.shape[1]):  # exact distances of the candidates
            diff = q64 - ref[safe[:, j]].astype(np.float64)
            dist[:, j] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        dist[~ok] = np.inf  # padding and self: never a neighbour
        best = _merge(best, dist, np.where(ok, idx, -1), sides.k)
    assert best is not None
    if sides.farthest:  # squared distance = score + ‖q‖²
        return *best, far[0] + np.einsum("ij,ij->i", q, q, dtype=np.float32), far[1]
    return best


def _farthest(block: np.ndarray, t0: int, t1: int, n_ref: int, far: tuple[np.ndarray, np.ndarray]) -> None:
    """Update the running farthest reference of each row of a block: the largest score, the lowest
    reference row on ties (the first group holding the maximum, then its first row holding it; tiles
    come in row order, so an equal score of a later tile never replaces it)."""
    if t1 > n_ref:  # padding positions of the last tile never count
        block[:, group_layout(t1 - t0) + t0 >= n_ref] = -np.inf
    nb = (t1 - t0) // GROUP
    maxima = group_reduce(block, np.maximum)
    score = maxima.max(axis=1)
    group = (maxima == score[:, None]).argmax(axis=1)
    members = block[np.arange(block.shape[0])[:, None], np.arange(GROUP) * nb + group[:, None]]
    first = (members == score[:, None]).argmax(axis=1)
    better = score > far[0]
    far[0][better] = score[better]
    far[1][better] = (t0 + group * GROUP + first)[better]


def _mixed_tile(sides: _Sides, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    s, e = rows
    q, ref, laid, plan = sides.query, sides.ref, sides.ref_laid, sides.plan
    assert isinstance(q, MixedRows) and isinstance(ref, MixedRows) and laid is not None and plan is not None
    best = None
    w = q.cat_weight
    q_num64 = q.num[s:e].astype(np.float64)
    for t0, t1 in reference_tiles(ref.n, sides.ref_tile):
        block = scratch("block", (e - s, t1 - t0))
        tmp = scratch("tmp", (e - s, t1 - t0))
        mixed_block(q, laid, s, e, plan, block, tmp, refs=(t0, t1))
        if t1 > ref.n:  # padding positions of the last tile
            block[:, group_layout(t1 - t0) + t0 >= ref.n] = _PAD_SCORE
        idx, ok = _tile_top(sides, block, s, t0, t1)
        safe = np.minimum(idx, ref.n - 1)
        dist = np.empty(idx.shape, dtype=np.float64)
        for j in range(idx.shape[1]):  # exact distances of the candidates, in float64
            r = safe[:, j]
            d = w * (q.cat[s:e] != ref.cat[r]).sum(axis=1).astype(np.float64)
            if q.num.shape[1]:
                d += np.abs(q_num64 - ref.num[r].astype(np.float64)).sum(axis=1)
            dist[:, j] = d
        dist[~ok] = np.inf
        best = _merge(best, dist, np.where(ok, idx, -1), sides.k)
    assert best is not None
    return best


def _run(fn, sides: _Sides, n_query: int, n_ref: int, executor: Executor | None, t0: float) -> Neighbors:
    tiles = query_tiles(n_query, n_ref, ref_tile=sides.ref_tile)
    parts = (executor or IN_PROCESS).map(fn, sides, tiles)
    dist = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, sides.k))
    idx = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, sides.k), np.int64)
    far = None
    if sides.farthest:
        far = np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts])
    return _finish(dist, idx.astype(np.int64), t0, far)


def knn_euclidean(
    query: np.ndarray,
    ref: np.ndarray,
    k: int,
    *,
    exclude_self: bool = False,
    executor: Executor | None = None,
    ref_tile: int | None = None,
    farthest: bool = False,
) -> Neighbors:
    """Exact k nearest references of every query row in a euclidean space, tile by tile; with
    ``farthest``, also each row's farthest reference from the same blocks (Neighbors.farthest)."""
    t0 = time.perf_counter()
    if farthest and exclude_self:
        raise ValueError("the farthest reference is read only when no row is excluded")
    k = _check_k(k, ref.shape[0] - (1 if exclude_self else 0))
    _check_finite(query, ref)
    ref_tile = _padded(ref_tile or REF_TILE)
    order = reference_order(ref.shape[0], ref_tile)
    pad = order >= ref.shape[0]
    laid = ref[np.minimum(order, ref.shape[0] - 1)]
    sparse = SparseDims.split(query, ref, laid, pad)
    scaled = np.empty((sparse.dense.size + 1, order.size), dtype=np.float32)
    dense = laid if sparse.dense.size == laid.shape[1] else laid[:, sparse.dense]  # no copy when all are
    np.multiply(dense.T, np.float32(-2.0), out=scaled[:-1])
    scaled[-1] = np.einsum("ij,ij->i", laid, laid, dtype=np.float32)
    scaled[:, pad] = 0.0
    scaled[-1, pad] = _PAD_SCORE
    tiles = tuple(
        np.ascontiguousarray(scaled[:, t0:t1]) for t0, t1 in reference_tiles(ref.shape[0], ref_tile)
    )
    del scaled, laid
    sides = _Sides(query, ref, k, exclude_self, ref_tile, ref_scaled=tiles, sparse=sparse, farthest=farthest)
    return _run(_euclidean_tile, sides, query.shape[0], ref.shape[0], executor, t0)


def knn_mixed(
    query: MixedRows,
    ref: MixedRows,
    k: int,
    *,
    exclude_self: bool = False,
    executor: Executor | None = None,
    ref_tile: int | None = None,
) -> Neighbors:
    """Exact k nearest references of every query row in a mixed (Hamming / Gower) space, tile by tile."""
    t0 = time.perf_counter()
    k = _check_k(k, ref.n - (1 if exclude_self else 0))
    _check_finite(query.num, ref.num)
    ref_tile = _padded(ref_tile or REF_TILE)
    at = np.minimum(reference_order(ref.n, ref_tile), ref.n - 1)  # a padding position reads the last row
    laid = MixedRows(ref.num[at], ref.cat[at], ref.cat_weight)
    sides = _Sides(query, ref, k, exclude_self, ref_tile, ref_laid=laid, plan=mixed_plan(query, laid))
    return _run(_mixed_tile, sides, query.n, ref.n, executor, t0)


def _check_finite(*arrays: np.ndarray) -> None:
    """A NaN or inf coordinate has no distance: an error, never a row silently skipped or picked."""
    if not all(np.isfinite(a).all() for a in arrays):
        raise MetricError("a coordinate is not a finite number")
    # a square above float32's range makes a score inf − inf = NaN, which no selection can order
    if any(a.size and float(np.abs(a).max()) > 1e18 for a in arrays):
        raise MetricError("a coordinate is too large for the float32 product (above 1e18)")


def _check_k(k: int, available: int) -> int:
    if k < 1:
        raise ValueError("k must be at least 1")
    if available < 1:
        raise ValueError("no reference row to search")
    return min(k, available)
