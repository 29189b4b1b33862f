"""Exact nearest-neighbour queries in fixed blocks.

    EvaluationContext.neighbors(space, query role, reference role, k)   (context.py: each once, largest k)
        │
        ├─ knn_euclidean(query, ref, k)          ├─ knn_mixed(query, ref, k)      (Hamming / Gower)
        │    query_tiles × reference tiles, handed to an Executor (executors.py: in-process or Ray)
        │    _euclidean_tile: [q, 1]·[−2r; ‖r‖²] │    _mixed_tile: Σ w|q−r| + w_cat·(#differing codes)
        │    (one float32 BLAS product over the  │    per tile, mixed_plan once
        │    dense dimensions; the rare ones'    │
        │    few pairs added after: SparseDims), │
        │    BLOCK_COLS columns at a time, so    │
        │    each block stays in the core's cache│
        │          ▼                             │          ▼
        │    topk.smallest_update: each block folded into a running top-(k + PAD) per row (float32
        │    score, then row); per reference tile the candidates' exact float64 distances, exact.merge: the
        │    running top-k across reference tiles; optionally each row's farthest reference
        │          ▼
        │    exact.settle: a (row, tile) whose last candidate's score is not beyond the k-th exact distance
        │    by the score's rounding bound is re-ranked against the whole tile in float64
        │          ▼
        └─ _finish: the k neighbours ordered by (exact distance, index) ─▶ Neighbors

    chunks.map_chunks hands raw blocks (query rows × the whole reference, in row order) to a reduction that is
    not a top-k (ties, counts within a radius, densities), on the same executor.

Both sides are always whole: only a caller may choose to query fewer rows, never to search fewer
references. The k neighbours are exactly the k nearest by (float64 distance of the encoded rows,
reference index): float32 scores only choose candidates, under a proven rounding bound, so the result
does not depend on the tiling, the executor or how the BLAS rounds. An identical row is at distance
exactly 0. Mixed spaces count matching categorical codes by a float32 product of one-hot codes for
common values (exact for integers below 2^24) and by scattering the few matching pairs of rare values
(MixedPlan).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from ..errors import MetricError
from . import exact as ex
from .executors import IN_PROCESS, Executor
from .mixed_space import MixedPlan, MixedRows, mixed_block, mixed_plan
from .sparse_dims import SparseDims
from .topk import NO_ROW, NO_SELF, empty_top, largest_update, smallest_update

#: reference rows per tile of a k-NN query: each query tile walks the reference in tiles of this width,
#: taking the k + PAD float32 candidates of each tile, re-ranking them exactly and keeping a running
#: top-k (exact.merge), so memory does not grow with the reference side
REF_TILE = 16384
#: bytes of a k-NN tile's rows × REF_TILE: sets the query rows per tile (512), wide for an efficient GEMM
KNN_BLOCK_BYTES = 32 * 2**20
#: reference columns per euclidean block: 512 query rows × 512 columns (1 MB) stay in the core's L2 cache
#: from the product through the additions and the selection. Measured (one core, 8,192 queries × 64k
#: references, k = 5): 1.02 s in 2048-column blocks, 0.97 s in 1024, 0.87 s in 512, 0.85 s in 256;
#: one 32 MB block per reference tile went to memory and back (product + selection 16–18 ms per 8M cells,
#: against 8–10 ms in 2048-column blocks)
BLOCK_COLS = 512
#: candidates kept per row and reference tile: k + PAD. A tile is settled when its last candidate's
#: float32 score is, by more than the rounding bound, above the k-th exact distance kept; otherwise that
#: row is re-ranked against the whole tile (exact.settle). Measured at 64k Adult-shaped rows, k = 1 in
#: the entropy-weighted space (the worst conditioned): (row, tile) pairs re-ranked 29,611 with 3
#: candidates, 14,539 with 5, 1,334 with 16, none in the one-hot space; the ten queries took 24.8–25.5 s
#: with PAD 2, 24.9–25.6 s with 4, 25.6 s with at least 16: more candidates cost the selection kernel
#: what they save in re-ranks
PAD = 2


@dataclass(frozen=True)
class Neighbors:
    """k nearest references per query row, nearest first."""

    dist: np.ndarray  # (n_query, k) float64
    idx: np.ndarray  # (n_query, k) int64
    seconds: float = 0.0
    #: when asked (``farthest=True``): per query row the farthest reference, (float32 squared distance,
    #: index), read off the same blocks; the float32 choice is to be recomputed exactly by the caller
    farthest: tuple[np.ndarray, np.ndarray] | None = None
    #: (query row, reference tile) pairs whose float32 candidates did not settle the k nearest: re-ranked
    #: against the whole tile in float64 (exact.settle)
    rechecked: int = 0

    @property
    def k(self) -> int:
        return int(self.idx.shape[1])

    def first(self, k: int) -> Neighbors:
        return Neighbors(self.dist[:, :k], self.idx[:, :k], self.seconds, self.farthest, self.rechecked)


def chunk_rows(n_reference: int, *, budget: int, bytes_per_cell: int = 4) -> int:
    return int(max(16, min(4096, budget // max(1, n_reference * bytes_per_cell))))


# ------------------------------------------------------------------------------------------ spaces


def _finish(
    dist: np.ndarray,
    idx: np.ndarray,
    t0: float,
    farthest: tuple[np.ndarray, np.ndarray] | None = None,
    rechecked: int = 0,
) -> Neighbors:
    if not np.isfinite(dist).all():  # a NaN or inf distance would sort as nearest or farthest: no figure
        raise MetricError("a neighbour distance is not a finite number")
    order = np.lexsort((idx, dist), axis=1)  # by exact distance, then index
    return Neighbors(
        np.take_along_axis(dist, order, 1),
        np.take_along_axis(idx, order, 1),
        time.perf_counter() - t0,
        farthest,
        rechecked,
    )


def query_tiles(n_query: int, n_reference: int, *, ref_tile: int | None = None) -> list[tuple[int, int]]:
    """The fixed query tiles of a k-NN query: a function of the sizes only (never of the executor), so
    every executor computes the same blocks. Rows per tile: one reference tile's rows × columns within
    KNN_BLOCK_BYTES (512 rows of a full reference tile: tall enough for an efficient GEMM)."""
    width = min(_padded(n_reference), _padded(ref_tile or REF_TILE))
    step = chunk_rows(width, budget=KNN_BLOCK_BYTES)
    return [(s, min(s + step, n_query)) for s in range(0, n_query, step)]


def reference_tiles(n_reference: int, ref_tile: int) -> list[tuple[int, int]]:
    """[t0, t1) of each reference tile: the candidates of a tile are chosen in float32, then re-ranked."""
    return [(t0, min(t0 + ref_tile, n_reference)) for t0 in range(0, n_reference, ref_tile)]


#: every block's width is a multiple of this: a column at the ragged edge of a GEMM is computed by an
#: edge kernel that rounds differently (a 1-column block is even a matrix-vector product), so the last
#: tile is padded and a score does not depend on where its column falls
PANEL = 32


def _padded(n: int) -> int:
    return -(-max(1, n) // PANEL) * PANEL


def _blocks(t0: int, t1: int) -> list[tuple[int, int]]:
    """The euclidean blocks of reference tile [t0, t1): BLOCK_COLS columns each, the tile padded to a
    multiple of PANEL (a padding column is past the last reference row: the kernels skip it)."""
    end = t0 + _padded(t1 - t0)
    return [(c0, min(c0 + BLOCK_COLS, end)) for c0 in range(t0, end, BLOCK_COLS)]


@dataclass(frozen=True)
class _Sides:
    """What every tile of one query reads (put once in the executor's store): both encoded sides."""

    query: np.ndarray | MixedRows
    ref: np.ndarray | MixedRows
    k: int
    exclude_self: bool
    ref_tile: int
    #: euclidean, per reference tile: [−2·refᵀ; ‖r‖²] ((d_dense + 1) × tile width, contiguous), so
    #: [q, 1] · it is the score ‖r‖² − 2 q·r in one product (the sparse dimensions added afterwards)
    ref_scaled: tuple[np.ndarray, ...] | None = None
    sparse: SparseDims | None = None  # euclidean: which dimensions leave the product
    bound: ex.ScoreBound | None = None  # euclidean: how far a score can round (the reference's norms)
    #: mixed: a float32 distance is within this of the exact one (γ of its terms times their largest sum)
    mixed_bound: float = 0.0
    ref_at: np.ndarray | None = None  # euclidean: SparseDims.positions of every block's first row, then n
    plan: MixedPlan | None = None  # mixed: how categorical matches are counted
    farthest: bool = False  # euclidean: also each query row's farthest reference
    pad: int = PAD  # candidates kept per row and tile beyond k

    @property
    def n_ref(self) -> int:
        return self.ref.shape[0] if isinstance(self.ref, np.ndarray) else self.ref.n

    def self_first(self, s: int) -> int:
        """topk's ``self_first`` for a query tile starting at row s."""
        return s if self.exclude_self else NO_SELF


_SCRATCH = threading.local()


def scratch(name: str, shape: tuple[int, int]) -> np.ndarray:
    """A float32 block buffer of this thread, reused across blocks: a fresh block per product is a fresh
    allocation whose pages the kernel zeroes and faults in (measured: 16 % of a 32 MB block's product)."""
    have = getattr(_SCRATCH, name, None)
    size = shape[0] * shape[1]
    if have is None or have.size < size:
        have = np.empty(size, dtype=np.float32)
        setattr(_SCRATCH, name, have)
    return have[:size].reshape(shape)


def _candidates(values: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A tile's running top-k as candidates: the reference rows (a valid index everywhere) and which
    are real (an empty slot, left when a tile has fewer than k other rows, or a seed's, is not)."""
    ok = np.isfinite(values) & (rows != NO_ROW)
    return np.where(ok, rows, 0), ok


def _mixed_keys(q: MixedRows, ref: MixedRows, q_rows: np.ndarray, ref_rows: np.ndarray) -> np.ndarray:
    """The exact mixed distances (float64) of the pairs (q_rows, ref_rows)."""
    d = q.cat_weight * (q.cat[q_rows] != ref.cat[ref_rows]).sum(axis=1).astype(np.float64)
    if q.num.shape[1]:
        d += np.abs(q.num[q_rows].astype(np.float64) - ref.num[ref_rows].astype(np.float64)).sum(axis=1)
    return d


def _euclidean_tile(sides: _Sides, rows: tuple[int, int]) -> tuple:
    s, e = rows
    q = sides.query[s:e]  # type: ignore[index]
    ref, sparse = sides.ref, sides.sparse
    assert isinstance(ref, np.ndarray) and sides.ref_scaled is not None and sparse is not None
    q1 = np.empty((e - s, sparse.dense.size + 1), dtype=np.float32)
    q1[:, :-1] = q[:, sparse.dense]
    q1[:, -1] = 1.0
    far = np.full(e - s, -np.inf, dtype=np.float32), np.zeros(e - s, dtype=np.int64)
    qa, qb = sparse.positions("query", np.array([s, e]))
    tiles = reference_tiles(ref.shape[0], sides.ref_tile)
    seed = np.full(e - s, np.inf, dtype=np.float32)  # rank_tiles lowers it after each tile

    def tops():  # per reference tile, its float32 candidates, computed as the ranking asks for them
        ref_at = iter(sides.ref_at)  # per block, where its first reference row falls in the sparse dims
        ra = next(ref_at)
        for (t0, t1), scaled in zip(tiles, sides.ref_scaled, strict=True):
            top = empty_top(e - s, sides.k + sides.pad)
            top[0][:] = seed[:, None]  # only a reference scoring at most the seed can be among the k
            for c0, c1 in _blocks(t0, t1):
                block = np.matmul(q1, scaled[:, c0 - t0 : c1 - t0], out=scratch("block", (e - s, c1 - c0)))
                rb = next(ref_at)
                sparse.add_between(block, s, c0, qa, qb, ra, rb)
                ra = rb
                smallest_update(block, c0, sides.self_first(s), ref.shape[0], *top)
                if sides.farthest:
                    largest_update(block, c0, ref.shape[0], *far)
            yield top

    assert sides.bound is not None
    norms = [t[-1] for t in sides.ref_scaled]
    dist, idx, count = rank_tiles(
        q, s, ref, tiles, norms, tops(), sides.bound, sides.k, sides.exclude_self, seed=seed
    )
    if sides.farthest:  # squared distance = score + ‖q‖²
        return dist, idx, count, far[0] + np.einsum("ij,ij->i", q, q, dtype=np.float32), far[1]
    return dist, idx, count


def rank_tiles(  # noqa: PLR0913
    q: np.ndarray,
    s: int,
    ref: np.ndarray,
    tiles: list[tuple[int, int]],
    norms: list[np.ndarray],
    tops,  # noqa: ANN001
    bound: ex.ScoreBound,
    k: int,
    exclude_self: bool,
    *,
    seed: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """The exact k nearest of query rows s… (``q``) among ``ref``, from each reference tile's float32
    candidates (``tops``: per tile, (scores, rows) ascending, every reference left out scoring at
    least the last): exact distances, except those the bound (exact d² ≥ score + lower) proves farther
    than the k-th kept; then the tiles the candidates cannot settle (exact.settle), under the bound of
    the references that could still matter (norm ≤ ‖q‖ + the k-th distance kept). ``norms``: per tile,
    the float32 ‖r‖² its scores added.

    ``seed``: set after each tile to the float32 score above which a reference of a later tile is
    surely farther than the k-th kept (its index is higher, so it does not win a tie either), for a
    ``tops`` that computes the next tile only when asked to seed its running top-k with it: a tile
    then keeps only references scoring at most the seed, in slots that held (seed, NO_ROW), and its
    last score is the seed where it kept fewer: still at most every reference it left out."""
    q64 = q.astype(np.float64)
    qn = np.einsum("ij,ij->i", q64, q64)
    lower = bound.lower(q, qn)
    best = None
    last = np.empty((q.shape[0], len(tiles)), dtype=np.float32)
    for t, top in enumerate(tops):
        last[:, t] = top[0][:, -1]  # the references left out of this tile score at least this
        idx, ok = _candidates(*top)
        if best is not None:  # surely farther than the k-th kept: it could not be kept, no exact distance
            ok &= ~(top[0] + lower[:, None] > best[0][:, -1:] ** 2)
        rows_ok, cols_ok = np.nonzero(ok)
        dist = np.full(idx.shape, np.inf)  # an empty slot or a skipped candidate: never a neighbour
        dist[rows_ok, cols_ok] = ex.euclidean_keys(q64[rows_ok], ref, idx[rows_ok, cols_ok])
        best = ex.merge(best, dist, np.where(ok, idx, -1), k)
        if seed is not None:  # exact d² ≥ score + lower > the k-th² for a score above it (a margin
            kth2 = best[0][:, -1] ** 2  # for this subtraction's rounding: a higher seed only keeps more)
            seed[:] = ex.above(kth2 - lower + 1e-9 * (kth2 + np.abs(lower)))
    assert best is not None
    # a reference that could still be among the k nearest lies within ‖q‖ + d_k of the origin (d_k only
    # falls while settling); the margin covers the float64 roundings of ‖q‖ and d_k
    lower = bound.lower(q, qn, reach=(np.sqrt(qn) + best[0][:, -1]) * (1.0 + 1e-9))
    floor = last + lower[:, None]  # the references left out of each tile: at least this far (squared)

    def recheck(local: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # one float32 product over all dimensions, its scores under the same bound: every reference that
        # could be among the k nearest is a candidate, re-ranked exactly
        t0, t1 = tiles[t]
        score = np.matmul(q[local], ref[t0:t1].T) * np.float32(-2.0)
        score += norms[t][: t1 - t0]
        a, c = np.nonzero(score <= ex.below(best[0][local, -1] ** 2 - lower[local])[:, None])
        a, j = ex.useful(lambda: ref[t0:t1], t0, k, exclude_self, s + local, a, t0 + c)
        return a, j, ex.chunked(lambda x: ex.euclidean_keys(q64[local[a[x]]], ref, j[x]), a.size)

    return ex.settle(best, floor, tiles, recheck, squared=True)


def _mixed_tile(sides: _Sides, rows: tuple[int, int]) -> tuple:
    s, e = rows
    q, ref, plan = sides.query, sides.ref, sides.plan
    assert isinstance(q, MixedRows) and isinstance(ref, MixedRows) and plan is not None
    best = None
    tiles = reference_tiles(ref.n, sides.ref_tile)
    floor = np.empty((e - s, len(tiles)))
    q_rows = np.arange(s, e)
    for t, (t0, t1) in enumerate(tiles):
        block = scratch("block", (e - s, t1 - t0))
        mixed_block(q, ref, s, e, plan, block, refs=(t0, t1))
        top = empty_top(e - s, sides.k + sides.pad)
        smallest_update(block, t0, sides.self_first(s), ref.n, *top)
        floor[:, t] = top[0][:, -1] - sides.mixed_bound  # the references left out: at least this far
        idx, ok = _candidates(*top)
        dist = np.empty(idx.shape, dtype=np.float64)
        for j in range(idx.shape[1]):  # exact distances of the candidates, in float64
            dist[:, j] = _mixed_keys(q, ref, q_rows, idx[:, j])
        dist[~ok] = np.inf
        best = ex.merge(best, dist, np.where(ok, idx, -1), sides.k)
    assert best is not None

    def recheck(local: np.ndarray, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # the tile's float32 distances again, every reference the bound cannot rule out re-ranked exactly
        t0, t1 = tiles[t]
        again = scratch("block", (e - s, t1 - t0))
        mixed_block(q, ref, s, e, plan, again, refs=(t0, t1))
        limit = best[0][local, -1] + sides.mixed_bound
        a, c = np.nonzero(again[local] <= ex.below(limit)[:, None])
        a, j = ex.useful(lambda: _bits(ref, t0, t1), t0, sides.k, sides.exclude_self, s + local, a, t0 + c)
        return a, j, ex.chunked(lambda x: _mixed_keys(q, ref, s + local[a[x]], j[x]), a.size)

    return ex.settle(best, floor, tiles, recheck, squared=False)


def _bits(rows: MixedRows, t0: int, t1: int) -> np.ndarray:
    """Rows t0:t1 of a mixed space as compared for identity: the numbers' bits and the codes."""
    return np.hstack([rows.num[t0:t1].view(np.int32), rows.cat[t0:t1]])


def _run(fn, sides: _Sides, n_query: int, n_ref: int, executor: Executor | None, t0: float) -> Neighbors:
    tiles = query_tiles(n_query, n_ref, ref_tile=sides.ref_tile)
    parts = (executor or IN_PROCESS).map(fn, sides, tiles)
    dist = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, sides.k))
    idx = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, sides.k), np.int64)
    far = None
    if sides.farthest:
        far = np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts])
    return _finish(dist, idx.astype(np.int64), t0, far, sum(int(p[2]) for p in parts))


def check_pad(pad: int | None) -> int:
    """Candidates per row and tile beyond k: PAD when None, else a non-negative integer."""
    if pad is None:
        return PAD
    if isinstance(pad, bool) or not isinstance(pad, (int, np.integer)) or pad < 0:
        raise ValueError(f"pad must be a non-negative integer, got {pad!r}")
    return int(pad)


def knn_euclidean(
    query: np.ndarray,
    ref: np.ndarray,
    k: int,
    *,
    exclude_self: bool = False,
    executor: Executor | None = None,
    ref_tile: int | None = None,
    farthest: bool = False,
    pad: int | None = None,
) -> Neighbors:
    """Exact k nearest references of every query row in a euclidean space, tile by tile; with
    ``farthest``, also each row's farthest reference from the same blocks (Neighbors.farthest).
    ``pad``: candidates kept per row and tile beyond k (default PAD; more where near-ties are many)."""
    t0 = time.perf_counter()
    if farthest and exclude_self:
        raise ValueError("the farthest reference is read only when no row is excluded")
    k = _check_k(k, ref.shape[0] - (1 if exclude_self else 0))
    check_finite(query, ref)
    ref_tile = _padded(ref_tile or REF_TILE)
    sparse = SparseDims.split(query, ref)
    norms = np.einsum("ij,ij->i", ref, ref, dtype=np.float32)
    tiles = scaled_tiles(ref, sparse, reference_tiles(ref.shape[0], ref_tile), norms)
    _, norm_max = check_norms(query, ref)
    norm2 = max((float(t[-1].max(initial=0.0)) for t in tiles), default=0.0)  # as the product adds it
    ref_nnz = int(np.count_nonzero(ref, axis=1).max(initial=0))
    starts = [c0 for a, b in reference_tiles(ref.shape[0], ref_tile) for c0, _ in _blocks(a, b)]
    ref_at = sparse.positions("ref", np.array([*starts, ref.shape[0]], dtype=np.int64))
    sides = _Sides(
        query,
        ref,
        k,
        exclude_self,
        ref_tile,
        ref_scaled=tuple(tiles),
        sparse=sparse,
        bound=ex.ScoreBound(float(np.sqrt(norm_max)), norm2, ref_nnz),
        ref_at=ref_at,
        farthest=farthest,
        pad=check_pad(pad),
    )
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
    check_finite(query.num, ref.num)
    ref_tile = _padded(ref_tile or REF_TILE)
    # a float32 distance sums w·(#codes) − w per match and p numbers' |Δ| (each a rounded difference)
    n_cat, p = query.cat.shape[1], query.num.shape[1]
    span = 0.0
    if p and query.n and ref.n:
        both = np.vstack([query.num, ref.num]).astype(np.float64)
        span = float((both.max(axis=0) - both.min(axis=0)).sum())
    terms = 2.0 * query.cat_weight * n_cat + span
    bound = (
        ex.SCORE_SLACK * (float(ex.gamma(n_cat + p + 2)) * terms + (n_cat + p + 2) * ex.TINY32)
        + 1e-12 * terms
    )
    sides = _Sides(
        query,
        ref,
        k,
        exclude_self,
        ref_tile,
        plan=mixed_plan(query, ref),
        mixed_bound=bound,
    )
    return _run(_mixed_tile, sides, query.n, ref.n, executor, t0)


def check_finite(*arrays: np.ndarray) -> None:
    """A NaN or inf coordinate has no distance: an error, never a row silently skipped or picked."""
    if not all(np.isfinite(a).all() for a in arrays):
        raise MetricError("a coordinate is not a finite number")
    # a square above float32's range makes a score inf − inf = NaN, which no selection can order
    if any(a.size and float(np.abs(a).max()) > 1e18 for a in arrays):
        raise MetricError("a coordinate is too large for the float32 product (above 1e18)")


def check_norms(query: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """The largest squared norm of each side (float64); an error where a float32 ‖r‖² or score of the
    two would overflow to inf (its score NaN: never a candidate, silently skipped)."""
    q_max, r_max = (
        float(np.einsum("ij,ij->i", a, a, dtype=np.float64).max(initial=0.0)) for a in (query, ref)
    )
    if (np.sqrt(q_max) + np.sqrt(r_max)) ** 2 > 1e37:
        raise MetricError("a row is too large for the float32 product (squared norm above 1e37)")
    return q_max, r_max


def scaled_tiles(
    ref: np.ndarray, sparse: SparseDims, tiles: list[tuple[int, int]], norms: np.ndarray
) -> list[np.ndarray]:
    """Per reference tile, [−2·refᵀ; ‖r‖²] over the dense dimensions ((d_dense + 1) × the tile padded to
    PANEL, contiguous; a padding column scores 0), so [q, 1] · it is the score ‖r‖² − 2 q·r in one
    product. ``norms``: the float32 ‖r‖² of every row."""
    dense = ref if sparse.dense.size == ref.shape[1] else ref[:, sparse.dense]  # no copy when all are
    out = []
    for a, b in tiles:
        scaled = np.zeros((sparse.dense.size + 1, _padded(b - a)), dtype=np.float32)
        np.multiply(dense[a:b].T, np.float32(-2.0), out=scaled[:-1, : b - a])
        scaled[-1, : b - a] = norms[a:b]
        out.append(scaled)
    return out


def _check_k(k: int, available: int) -> int:
    if k < 1:
        raise ValueError("k must be at least 1")
    if available < 1:
        raise ValueError("no reference row to search")
    return min(k, available)
