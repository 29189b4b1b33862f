"""k-NN queries that compute each pair once: a self-query (real→real) and a query with its mirror
(real→synthetic with synthetic→real) read both directions off one float32 block.

    knn_self(x, k) / knn_pair(x, y, kx, ky)
        │  cells: an x tile × a y tile (REF_TILE rows; a pair's x tiles are whole query tiles of
        │  knn_euclidean, so x's scores round as there; a self-query only the tiles a ≤ b), a task each.
        │  Per 512 × 512 block: the product [x, 1]·[−2y; ‖y‖²] and the rare dimensions (as
        │  neighbors.py), then topk.smallest_update along its rows (x's candidates in this y tile) and
        │  topk.smallest_update_cols along its columns (y's candidates in this x tile: the same pair's
        │  score, less ‖y‖², plus ‖x‖²). A self-query's diagonal block is read along its rows only.
        ▼
        every row's float32 candidates per tile of the other side → neighbors.rank_tiles (exact distances,
        the rounding bound, exact.settle), one task per 512 query rows ─▶ Neighbors

The neighbours are the exact k nearest by (float64 distance, index), the same as neighbors.knn_euclidean's
(tests/engine/test_pairs.py): a score read along the columns is another rounding of the same sum, within the
bound ``ScoreBound(..., extra=3)`` allows for. The candidates wait between the two steps: (rows × tiles ×
(k + PAD)) per side, so a query whose candidates would pass CANDIDATE_BYTES runs unpaired.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import neighbors as nb
from .exact import ScoreBound
from .executors import IN_PROCESS, Executor, results
from .neighbors import (
    Neighbors,
    _blocks,
    _check_k,
    _finish,
    _padded,
    check_finite,
    check_norms,
    check_pad,
    knn_euclidean,
    query_tiles,
    rank_tiles,
    reference_tiles,
    scaled_tiles,
    scratch,
)
from .sparse_dims import SparseDims
from .topk import NO_SELF, empty_top, largest_update, smallest_update, smallest_update_cols

#: the waiting candidates of a paired query (both sides; a cell's are copied in as it is done, then
#: dropped): above this, the two directions run unpaired
CANDIDATE_BYTES = 384 * 2**20
#: query rows per block (and per task of the second step)
ROWS = 512
#: more roundings of a score read along the columns: − ‖y‖², + ‖x‖² (and a margin of one)
EXTRA = 3


@dataclass(frozen=True)
class _Job:
    x: np.ndarray
    y: np.ndarray
    kept_x: int  # candidates per row and tile: k + PAD
    kept_y: int
    same: bool
    tile: int  # y's tiles
    x_tiles: list[tuple[int, int]]  # x's tiles: the cells' rows
    step: int  # rows per product: a self-query's aligned with its columns, a pair's as knn_euclidean's
    y_scaled: tuple[np.ndarray, ...]  # per y tile: [−2·y_denseᵀ; ‖y‖²] (float32, padded)
    x_norms: np.ndarray  # float32 ‖x‖², as the product would add them
    y_norms: np.ndarray
    sparse: SparseDims
    y_at: dict[int, np.ndarray]  # per block start of y: where it falls in the sparse dimensions
    x_at: dict[int, np.ndarray]  # per step start of x (and x's end): the same for x
    farthest: bool


#: candidates: (scores, rows) arrays
_Tops = tuple[np.ndarray, np.ndarray]


def _cell(job: _Job, cell: tuple[int, int]) -> tuple:
    """x tile a × y tile b: x's candidates in tile b (and the farthest), y's candidates in tile a."""
    a, b = cell
    xt = job.x_tiles[a]
    yt = reference_tiles(job.y.shape[0], job.tile)[b]
    diagonal = job.same and a == b
    top_x = empty_top(xt[1] - xt[0], job.kept_x)
    top_y = top_x if diagonal else empty_top(yt[1] - yt[0], job.kept_y)
    far = np.full(xt[1] - xt[0], -np.inf, np.float32), np.zeros(xt[1] - xt[0], np.int64)
    scaled, sparse, n_y = job.y_scaled[b], job.sparse, job.y.shape[0]
    blocks = _blocks(*yt)
    for s in range(xt[0], xt[1], job.step):  # x tiles start at multiples of step: blocks as in the query
        e = min(s + job.step, xt[1])
        q1 = np.empty((e - s, sparse.dense.size + 1), dtype=np.float32)
        q1[:, :-1] = job.x[s:e][:, sparse.dense]
        q1[:, -1] = 1.0
        qa, qb = job.x_at[s], job.x_at[e]
        rx = slice(s - xt[0], e - xt[0])
        for c0, c1 in blocks:
            if diagonal and c0 < s:  # read along the columns of the block (c0, s) already
                continue
            block = np.matmul(q1, scaled[:, c0 - yt[0] : c1 - yt[0]], out=scratch("block", (e - s, c1 - c0)))
            sparse.add_between(block, s, c0, qa, qb, job.y_at[c0], job.y_at[c1])
            self_first = s if job.same else NO_SELF
            smallest_update(block, c0, self_first, n_y, top_x[0][rx], top_x[1][rx])
            if job.farthest:
                largest_update(block, c0, n_y, far[0][rx], far[1][rx])
            if not (diagonal and c0 == s):
                ry = slice(c0 - yt[0], min(c1, yt[1]) - yt[0])
                smallest_update_cols(
                    block,
                    s,
                    job.y_norms[c0:c1],
                    job.x_norms[s:e],
                    min(c1, n_y) - c0,
                    top_y[0][ry],
                    top_y[1][ry],
                )
    return _small(top_x), (None if diagonal else _small(top_y)), far


@dataclass(frozen=True)
class _Rank:
    q: np.ndarray
    ref: np.ndarray
    k: int
    exclude_self: bool
    tiles: list[tuple[int, int]]  # the reference side's tiles, as the cells cut it
    tops: tuple[np.ndarray, np.ndarray]  # (rows, ref tiles, k + PAD): float32 scores, int32 reference rows
    norms: list[np.ndarray]  # per reference tile, the float32 ‖r‖²
    bound: ScoreBound  # extra roundings where a score was read along the columns


def _rank(job: _Rank, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, int]:
    s, e = rows
    q = job.q[s:e]
    tops = ((job.tops[0][s:e, t], job.tops[1][s:e, t]) for t in range(len(job.tiles)))
    return rank_tiles(q, s, job.ref, job.tiles, job.norms, tops, job.bound, job.k, job.exclude_self)


def knn_self(
    x: np.ndarray,
    k: int,
    *,
    executor: Executor | None = None,
    ref_tile: int | None = None,
    pad: int | None = None,
) -> Neighbors:
    """The exact k nearest other rows of every row (as knn_euclidean(x, x, k, exclude_self=True)), each
    pair's score computed once. ``pad``: as knn_euclidean's."""
    return _paired(x, x, k, k, same=True, executor=executor, ref_tile=ref_tile, pad=pad)[0]


def knn_pair(
    x: np.ndarray,
    y: np.ndarray,
    kx: int,
    ky: int,
    *,
    executor: Executor | None = None,
    ref_tile: int | None = None,
    farthest: bool = False,
) -> tuple[Neighbors, Neighbors]:
    """The exact kx nearest y rows of every x row and the ky nearest x rows of every y row (as two
    knn_euclidean queries; ``farthest``: x's farthest y row, Neighbors.farthest), each pair's score
    computed once."""
    return _paired(x, y, kx, ky, same=False, executor=executor, ref_tile=ref_tile, farthest=farthest)


def _paired(  # noqa: PLR0913
    x: np.ndarray,
    y: np.ndarray,
    kx: int,
    ky: int,
    *,
    same: bool,
    executor: Executor | None,
    ref_tile: int | None,
    farthest: bool = False,
    pad: int | None = None,
) -> tuple[Neighbors, Neighbors]:
    t0 = time.perf_counter()
    pad = check_pad(pad)
    tile, x_tiles, y_tiles, step = _layout(x, y, same, ref_tile)
    # 8 bytes a candidate (float32 score, int32 row); a cell's own are dropped once copied in
    kept_x, kept_y = kx + pad, ky + pad
    waiting = 8 * (x.shape[0] * len(y_tiles) * kept_x + (0 if same else y.shape[0] * len(x_tiles) * kept_y))
    if waiting > CANDIDATE_BYTES or min(x.shape[0], y.shape[0]) == 0:  # unpaired: each pair twice
        one = knn_euclidean(
            x, y, kx, exclude_self=same, executor=executor, ref_tile=ref_tile, farthest=farthest, pad=pad
        )
        if same:
            return one, one
        two = knn_euclidean(y, x, ky, executor=executor, ref_tile=ref_tile, pad=pad)
        return one, Neighbors(two.dist, two.idx, time.perf_counter() - t0, None, two.rechecked)  # both
    kept_x = _check_k(kx, y.shape[0] - same) + pad
    kept_y = _check_k(ky, x.shape[0] - same) + pad
    kx, ky = kept_x - pad, kept_y - pad
    check_finite(x, y)
    job, r_max = _job(x, y, (kept_x, kept_y), same, (tile, x_tiles, y_tiles, step), farthest)
    tops_x, tops_y, far_tiles = _gather(job, executor, y_tiles, farthest)
    x_norms, y_norms = job.x_norms, job.y_norms
    far = _farthest(far_tiles, x_norms) if far_tiles is not None else None
    norm2 = float(max(x_norms.max(initial=0.0), y_norms.max(initial=0.0)))
    nnz = int(max(np.count_nonzero(x, axis=1).max(initial=0), np.count_nonzero(y, axis=1).max(initial=0)))
    y_norm_tiles = [y_norms[a:b] for a, b in y_tiles]
    x_norm_tiles = [x_norms[a:b] for a, b in x_tiles]
    # a self-query's candidates mix scores read along rows and columns; a pair's x reads rows only
    fore_bound = ScoreBound(r_max, norm2, nnz, EXTRA if same else 0)
    nx = _ranked(_Rank(x, y, kx, same, y_tiles, tops_x, y_norm_tiles, fore_bound), executor, t0, far)
    if same:
        return nx, nx
    back = _Rank(y, x, ky, False, x_tiles, tops_y, x_norm_tiles, ScoreBound(r_max, norm2, nnz, EXTRA))
    return nx, _ranked(back, executor, t0, None)


def _layout(
    x: np.ndarray, y: np.ndarray, same: bool, ref_tile: int | None
) -> tuple[int, list[tuple[int, int]], list[tuple[int, int]], int]:
    """(the reference tile, x's tiles, y's tiles, x's row block)."""
    tile = _padded(ref_tile or nb.REF_TILE)
    y_tiles = reference_tiles(y.shape[0], tile)
    if same:  # rows in blocks aligned with the columns: the diagonal blocks are whole
        return tile, y_tiles, y_tiles, ROWS
    # rows as knn_euclidean's query tiles, so that x's scores (its farthest) round as there
    step = query_tiles(x.shape[0], y.shape[0], ref_tile=tile)[0][1] if x.shape[0] else ROWS
    per = step * max(1, round(tile / step))
    return tile, [(a, min(a + per, x.shape[0])) for a in range(0, x.shape[0], per)], y_tiles, step


def _job(
    x: np.ndarray, y: np.ndarray, kept: tuple[int, int], same: bool,
    layout: tuple[int, list[tuple[int, int]], list[tuple[int, int]], int], farthest: bool,
) -> tuple[_Job, float]:  # fmt: skip
    """What every cell reads: the tiles scaled, the norms, the sparse dimensions' positions; and the
    largest norm (the scores' bound)."""
    tile, x_tiles, y_tiles, step = layout
    sparse = SparseDims.split(x, y)
    x_norms = np.einsum("ij,ij->i", x, x, dtype=np.float32)
    y_norms = np.einsum("ij,ij->i", y, y, dtype=np.float32)
    r_max = float(np.sqrt(max(check_norms(x, y))))
    y_scaled = scaled_tiles(y, sparse, y_tiles, y_norms)
    y_norms = np.concatenate([y_norms, np.zeros(_padded(y.shape[0]) - y.shape[0] + 1, np.float32)])
    starts = sorted({c for a, b in y_tiles for c0, c1 in _blocks(a, b) for c in (c0, c1)})
    pos = sparse.positions("ref", np.minimum(np.array(starts, dtype=np.int64), y.shape[0]))
    y_at = {c: pos[i] for i, c in enumerate(starts)}
    x_starts = sorted({c for a, b in x_tiles for c in (*range(a, b, step), b)})
    x_pos = sparse.positions("query", np.array(x_starts, dtype=np.int64))
    x_at = {c: x_pos[i] for i, c in enumerate(x_starts)}
    job = _Job(x, y, kept[0], kept[1], same, tile, x_tiles, step, tuple(y_scaled), x_norms, y_norms, sparse,
               y_at, x_at, farthest)  # fmt: skip
    return job, r_max


def _gather(
    job: _Job, executor: Executor | None, y_tiles: list[tuple[int, int]], farthest: bool
) -> tuple[
    tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray] | None
]:
    """Every row's candidates per tile of the other side, each cell's copied in as it is done."""
    x_tiles, same = job.x_tiles, job.same
    cells = [(a, b) for a in range(len(x_tiles)) for b in range(len(y_tiles)) if not same or a <= b]
    tops_x = _empty(job.x.shape[0], len(y_tiles), job.kept_x)
    tops_y = tops_x if same else _empty(job.y.shape[0], len(x_tiles), job.kept_y)
    far_tiles = _empty_far(job.x.shape[0], len(y_tiles)) if farthest else None
    for (a, b), (top_x, top_y, far_ab) in zip(
        cells, results(executor or IN_PROCESS, _cell, job, cells), strict=True
    ):
        _put(tops_x, slice(*x_tiles[a]), b, top_x)
        if not (same and a == b):  # a diagonal cell's columns were folded into its rows' candidates
            _put(tops_y, slice(*y_tiles[b]), a, top_y)
        if far_tiles is not None:
            _put(far_tiles, slice(*x_tiles[a]), b, far_ab)
    return tops_x, tops_y, far_tiles


def _empty(n: int, tiles: int, kept: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, tiles of the other side, kept) candidates: float32 scores and int32 rows (a row past 2³¹
    never comes: the candidates of 2³¹ rows would not fit CANDIDATE_BYTES). Untouched until filled."""
    return np.empty((n, tiles, kept), dtype=np.float32), np.empty((n, tiles, kept), dtype=np.int32)


def _small(top: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A cell's candidates as they wait: int32 rows, an empty slot's any valid one (its score is inf)."""
    return top[0], np.where(np.isfinite(top[0]), top[1], 0).astype(np.int32)


def _put(
    tops: tuple[np.ndarray, np.ndarray], rows: slice, tile: int, top: tuple[np.ndarray, np.ndarray]
) -> None:
    tops[0][rows, tile] = top[0]
    tops[1][rows, tile] = top[1]


def _empty_far(n: int, tiles: int) -> tuple[np.ndarray, np.ndarray]:
    """x's farthest y row per y tile: float32 scores and rows, every (row, tile) filled by its cell."""
    return np.empty((n, tiles), dtype=np.float32), np.empty((n, tiles), dtype=np.int64)


def _farthest(tiles: tuple[np.ndarray, np.ndarray], x_norms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x's farthest y row over the tiles (ties: the lowest row), as squared float32 distances."""
    vals, rows = tiles
    t = np.argmax(vals, axis=1)  # the first tile of the largest: its rows are the lowest
    pick = np.arange(vals.shape[0])
    return vals[pick, t] + x_norms, rows[pick, t]


def _ranked(
    job: _Rank, executor: Executor | None, t0: float, far: tuple[np.ndarray, np.ndarray] | None
) -> Neighbors:
    chunks = [(s, min(s + ROWS, job.q.shape[0])) for s in range(0, job.q.shape[0], ROWS)]
    parts = (executor or IN_PROCESS).map(_rank, job, chunks)
    dist = np.concatenate([p[0] for p in parts]) if parts else np.empty((0, job.k))
    idx = np.concatenate([p[1] for p in parts]) if parts else np.empty((0, job.k), np.int64)
    return _finish(dist, idx.astype(np.int64), t0, far, sum(int(p[2]) for p in parts))
