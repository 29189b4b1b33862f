"""Exact nearest-neighbour queries in fixed blocks.

    EvaluationContext.neighbors(space, query role, reference role, k)   (context.py: each once, largest k)
        │
        ├─ knn_euclidean(query, ref, k)          ├─ knn_mixed(query, ref, k)      (Hamming / Gower)
        │    query_tiles × reference tiles, handed to an Executor (executors.py: in-process or Ray)
        │    _euclidean_tile: ‖r‖² − 2 q·r       │    _mixed_tile: Σ w|q−r| + w_cat·(#differing codes)
        │    (float32 BLAS) per block            │    per block, mixed_plan once
        │          ▼                             │          ▼
        │    _select: k smallest per block row (argmin for k ≤ 4, blocked two-stage otherwise), their
        │    exact float64 distances, _merge: the running top-k across reference tiles
        │          ▼
        └─ _finish: the k neighbours ordered by (exact distance, index) ─▶ Neighbors

    euclidean_chunks / mixed_chunks yield the raw blocks for reductions that are not top-k
    (counts within a radius, all-pairs extremes).

Both sides are always whole: only a caller may choose to query fewer rows, never to search fewer
references. An identical row is at distance exactly 0 (float64 from the encoded rows). Ties: among
equal float32 scores the lowest reference index is taken; the k neighbours are returned by exact
distance, then index. Mixed spaces count matching categorical codes by a float32 product of one-hot
codes for common values (exact for integers below 2^24) and by scattering the few matching pairs of
rare values (MixedPlan).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .errors import MetricError
from .executors import IN_PROCESS, Executor

CHUNK_BYTES = 64 * 2**20  # one chunk's distance block
#: a categorical value shared by more than this fraction of all (query, reference) pairs is counted by
#: the one-hot product; rarer values by scattering their few matching pairs (MixedPlan)
DENSE_SHARE = 1.0 / 512
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


def _scaled_reference(ref: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(−2·refᵀ, ‖r‖²) padded to ``width`` columns: padding references are zero vectors of infinite
    norm, so they never score below a real reference."""
    ref_t2 = np.zeros((ref.shape[1], width), dtype=np.float32)
    ref_t2[:, : ref.shape[0]] = ref.T * np.float32(-2.0)
    norms = np.full(width, np.inf, dtype=np.float32)
    norms[: ref.shape[0]] = np.einsum("ij,ij->i", ref, ref, dtype=np.float32)
    return ref_t2, norms


def euclidean_chunks(
    query: np.ndarray, ref: np.ndarray, *, exclude_self: bool = False
) -> Iterator[tuple[int, np.ndarray]]:
    """Yields (start, scores) with scores = ‖r‖² − 2 q·r per chunk (float32; + ‖q‖² = squared distance)."""
    ref_t2, norms = _scaled_reference(ref, ref.shape[0])
    step = chunk_rows(ref.shape[0])
    buf = np.empty((step, ref.shape[0]), dtype=np.float32)
    for s in range(0, query.shape[0], step):
        q = query[s : s + step]
        b = buf[: q.shape[0]]
        np.matmul(q, ref_t2, out=b)
        b += norms
        if exclude_self:
            rows = np.arange(q.shape[0])
            b[rows, s + rows] = np.inf
        yield s, b


def mixed_chunks(
    query: MixedRows, ref: MixedRows, *, exclude_self: bool = False
) -> Iterator[tuple[int, np.ndarray]]:
    """Yields (start, distances) of the mixed space per chunk (float32)."""
    plan = mixed_plan(query, ref)
    step = chunk_rows(ref.n)
    buf = np.empty((step, ref.n), dtype=np.float32)
    tmp = np.empty((step, ref.n), dtype=np.float32)
    for s in range(0, query.n, step):
        e = min(s + step, query.n)
        b = buf[: e - s]
        mixed_block(query, ref, s, e, plan, b, tmp[: e - s])
        if exclude_self:
            rows = np.arange(e - s)
            b[rows, s + rows] = np.inf
        yield s, b


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
        for a, v in reversed(saved):  # reversed: an entry chosen twice (a row of +inf) gets its value back
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
    if not np.isfinite(dist).all():  # a NaN or inf distance would sort as nearest or farthest: no figure
        raise MetricError("a neighbour distance is not a finite number")
    order = np.lexsort((idx, dist), axis=1)  # by exact distance, then index
    return Neighbors(
        np.take_along_axis(dist, order, 1), np.take_along_axis(idx, order, 1), time.perf_counter() - t0
    )


#: reference rows per block of a k-NN query (a multiple of BLOCK): each query tile walks the reference in
#: tiles of this width, keeping a running top-k, so memory does not grow with the reference side
REF_TILE = 16384
#: bytes of one k-NN distance block; blocks run side by side (one per core), so each gets a share
KNN_BLOCK_BYTES = 32 * 2**20


def query_tiles(n_query: int, n_reference: int, *, ref_tile: int | None = None) -> list[tuple[int, int]]:
    """The fixed query tiles of a k-NN query: a function of the sizes only (never of the executor), so
    every executor computes the same blocks. Rows per tile: the distance block of one reference tile
    within KNN_BLOCK_BYTES (512 rows of a full reference tile: wide enough for an efficient GEMM)."""
    width = min(-(-max(1, n_reference) // BLOCK) * BLOCK, ref_tile or REF_TILE)
    step = chunk_rows(width, budget=KNN_BLOCK_BYTES)
    return [(s, min(s + step, n_query)) for s in range(0, n_query, step)]


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
    """What every tile of one query reads (put once in the executor's store): both encoded sides."""

    query: np.ndarray | MixedRows
    ref: np.ndarray | MixedRows
    k: int
    exclude_self: bool
    ref_tile: int
    ref_t2: np.ndarray | None = None  # euclidean: −2·refᵀ, padded to a multiple of BLOCK with zeros
    ref_norms: np.ndarray | None = None  # euclidean: ‖r‖², padding +inf
    plan: MixedPlan | None = None  # mixed: how categorical matches are counted


def _tile_candidates(
    block: np.ndarray, k: int, s: int, t0: int, exclude_self: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Local top-k indices of one (query tile × reference tile) block, self excluded, and which of them
    are real candidates: a finite score, not chosen twice (a tile with fewer than k finite entries —
    the last, short tile, or self excluded — makes ``argmin`` pick an entry again)."""
    if exclude_self:
        rows = np.arange(block.shape[0])
        cols = s + rows - t0
        inside = (cols >= 0) & (cols < block.shape[1])
        block[rows[inside], cols[inside]] = np.inf
    local = _select(block, min(k, block.shape[1]))
    ok = np.isfinite(np.take_along_axis(block, local, 1))
    for j in range(1, local.shape[1]):
        ok[:, j] &= ~(local[:, :j] == local[:, j : j + 1]).any(axis=1)
    return local, ok


def _euclidean_tile(sides: _Sides, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    s, e = rows
    q = sides.query[s:e]  # type: ignore[index]
    ref = sides.ref
    assert isinstance(ref, np.ndarray) and sides.ref_t2 is not None and sides.ref_norms is not None
    q64 = q.astype(np.float64)
    best = None
    width = sides.ref_t2.shape[1]
    for t0 in range(0, width, sides.ref_tile):
        t1 = min(t0 + sides.ref_tile, width)
        block = q @ sides.ref_t2[:, t0:t1]
        block += sides.ref_norms[t0:t1]
        local, finite = _tile_candidates(block, sides.k, s, t0, sides.exclude_self)
        idx = local + t0
        safe = np.minimum(idx, ref.shape[0] - 1)
        dist = np.empty(idx.shape, dtype=np.float64)
        for j in range(idx.shape[1]):  # exact distances of the candidates
            diff = q64 - ref[safe[:, j]].astype(np.float64)
            dist[:, j] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        dist[~finite] = np.inf  # padding and self: never a neighbour
        best = _merge(best, dist, np.where(finite, idx, -1), sides.k)
    assert best is not None
    return best


def _mixed_tile(sides: _Sides, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    s, e = rows
    q, ref, plan = sides.query, sides.ref, sides.plan
    assert isinstance(q, MixedRows) and isinstance(ref, MixedRows) and plan is not None
    best = None
    w = q.cat_weight
    q_num64 = q.num[s:e].astype(np.float64)
    for t0 in range(0, ref.n, sides.ref_tile):
        t1 = min(t0 + sides.ref_tile, ref.n)
        width = -(-(t1 - t0) // BLOCK) * BLOCK
        block = np.full((e - s, width), np.inf, dtype=np.float32)
        tmp = np.empty((e - s, t1 - t0), dtype=np.float32)
        mixed_block(q, ref, s, e, plan, block[:, : t1 - t0], tmp, refs=(t0, t1))
        local, finite = _tile_candidates(block, sides.k, s, t0, sides.exclude_self)
        idx = local + t0
        safe = np.minimum(idx, ref.n - 1)
        dist = np.empty(idx.shape, dtype=np.float64)
        for j in range(idx.shape[1]):  # exact distances of the candidates, in float64
            r = safe[:, j]
            d = w * (q.cat[s:e] != ref.cat[r]).sum(axis=1).astype(np.float64)
            if q.num.shape[1]:
                d += np.abs(q_num64 - ref.num[r].astype(np.float64)).sum(axis=1)
            dist[:, j] = d
        dist[~finite] = np.inf
        best = _merge(best, dist, np.where(finite, idx, -1), sides.k)
    assert best is not None
    return best


def _run(fn, sides: _Sides, n_query: int, n_ref: int, executor: Executor | None, t0: float) -> Neighbors:
    tiles = query_tiles(n_query, n_ref, ref_tile=sides.ref_tile)
    parts = (executor or IN_PROCESS).map(fn, sides, tiles)
    dist = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, sides.k))
    idx = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, sides.k), np.int64)
    return _finish(dist, idx.astype(np.int64), t0)


def knn_euclidean(
    query: np.ndarray,
    ref: np.ndarray,
    k: int,
    *,
    exclude_self: bool = False,
    executor: Executor | None = None,
    ref_tile: int | None = None,
) -> Neighbors:
    """Exact k nearest references of every query row in a euclidean space, tile by tile."""
    t0 = time.perf_counter()
    k = _check_k(k, ref.shape[0] - (1 if exclude_self else 0))
    _check_finite(query, ref)
    ref_tile = -(-(ref_tile or REF_TILE) // BLOCK) * BLOCK
    ref_t2, norms = _scaled_reference(ref, -(-ref.shape[0] // BLOCK) * BLOCK)
    sides = _Sides(query, ref, k, exclude_self, ref_tile, ref_t2=ref_t2, ref_norms=norms)
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
    ref_tile = -(-(ref_tile or REF_TILE) // BLOCK) * BLOCK
    sides = _Sides(query, ref, k, exclude_self, ref_tile, plan=mixed_plan(query, ref))
    return _run(_mixed_tile, sides, query.n, ref.n, executor, t0)


def _check_finite(*arrays: np.ndarray) -> None:
    """A NaN or inf coordinate has no distance: an error, never a row silently skipped or picked."""
    if not all(np.isfinite(a).all() for a in arrays):
        raise MetricError("a coordinate is not a finite number")


def _check_k(k: int, available: int) -> int:
    if k < 1:
        raise ValueError("k must be at least 1")
    if available < 1:
        raise ValueError("no reference row to search")
    return min(k, available)
