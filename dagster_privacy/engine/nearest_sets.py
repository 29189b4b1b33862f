"""Nearest sets: per query row, every reference row at the minimum Euclidean distance (ties as a set).

`air` (seed 000 §2.1.3) guesses from G_y, all synthetic rows at the minimum distance from a real row.
The set is decided on exact float64 squared distances from the encoded rows: every reference within
``TIE_TOL`` of the row's exact minimum belongs to it, whatever the row order.

Two routes give the same sets:

- **k-NN** (ties rare, as on tables with a continuous key): the exact ``TIE_K`` nearest of every row
  from the k-NN engine (neighbors.knn_euclidean: blocks that stay in cache, a fused selection). A row
  whose ``TIE_K``-th nearest is farther than its minimum + ``TIE_TOL`` has its whole set among them;
  the few other rows take the scan.
- **scan** (ties common, as on a table of few distinct keys): each chunk of query rows against the
  whole reference in float32 (chunks.map_chunks); the candidates within twice the score's proven
  rounding bound (exact.ScoreBound, as the k-NN engine's) + ``TIE_TOL`` of the row's float32 minimum
  are recomputed in float64 and the ones within ``TIE_TOL`` of the exact minimum kept. A score is within
  B of its exact value, so the true nearest scores at most B above its exact d² − ‖q‖², which is at
  most the float32 minimum's exact value, itself at most B below that minimum.

Which route runs is decided on an evenly spaced sample of query rows (the scan on ``SAMPLE`` rows):
it changes the time, not the sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .chunks import map_chunks
from .exact import ScoreBound, squared
from .neighbors import check_finite, check_norms, knn_euclidean

#: a row's set of references at its minimum distance; the reduction's per-row integer arrays by name
Reduce = Callable[[Any, np.ndarray, np.ndarray, np.ndarray], dict[str, np.ndarray]]

#: exact squared-distance slack under which two reference rows count as equally near (float64 rounding)
TIE_TOL = 1e-9
#: (query, reference) candidate pairs recomputed in float64 at once
PAIR_BATCH = 1 << 20
#: nearest references the k-NN route asks for: a row with fewer ties than this is settled by them
TIE_K = 2
#: query rows that choose the route; the k-NN route is taken when at most TIED_SHARE of them tie
SAMPLE = 512
TIED_SHARE = 0.05


def nearest_sets(
    query: np.ndarray, ref: np.ndarray, reduce: Reduce, extra: Any, executor: Any = None
) -> dict[str, np.ndarray]:
    """``reduce(extra, ids, rows, refs)`` per chunk of query rows ``ids``, (rows, refs) the pairs of
    every reference row at the minimum Euclidean distance of query row ``ids[rows]``, rows sorted; its
    per-row arrays are put together in query-row order. The pairs are never all held at once."""
    check_finite(query, ref)  # on either route, before any work: a NaN has no distance
    _, rn_max = check_norms(query, ref)
    n = query.shape[0]
    out: dict[str, np.ndarray] = {}

    def put(ids: np.ndarray, part: dict[str, np.ndarray]) -> None:
        for name, values in part.items():
            if name not in out:
                out[name] = np.zeros(n, dtype=values.dtype)
            out[name][ids] = values

    empty = np.zeros(0, dtype=np.int64)
    put(empty, reduce(extra, empty, empty, empty))  # the names, also for an empty query
    rest = np.arange(n)
    k = min(TIE_K, ref.shape[0])
    bound = ScoreBound(
        float(np.sqrt(rn_max)),
        float(np.einsum("ij,ij->i", ref, ref, dtype=np.float32).max(initial=0.0)),  # as the scan adds it
        int(np.count_nonzero(ref, axis=1).max(initial=0)),
    )
    if k and n > SAMPLE and _ties_rare(query, ref, k, bound, executor):
        rest = _by_knn(query, ref, k, reduce, extra, executor, put)
    if rest.size:
        sub = query if rest.size == n else np.ascontiguousarray(query[rest])
        job = (sub, rest, ref, bound, reduce, extra)
        for ids, part in map_chunks(_scan_chunk, job, sub, ref, executor=executor, sparse=True):
            put(ids, part)
    return out


def _ties_rare(query: np.ndarray, ref: np.ndarray, k: int, bound: ScoreBound, executor: Any) -> bool:
    """Whether at most TIED_SHARE of an evenly spaced sample of rows have k or more references tied."""
    sample = np.ascontiguousarray(query[np.linspace(0, query.shape[0] - 1, SAMPLE).astype(np.int64)])
    ids = np.arange(SAMPLE)
    job = (sample, ids, ref, bound, _tie_counts, None)
    tied = sum(
        int((part["ties"] >= k).sum())
        for _, part in map_chunks(_scan_chunk, job, sample, ref, executor=executor, sparse=True)
    )
    return tied <= TIED_SHARE * SAMPLE


def _tie_counts(extra: Any, ids: np.ndarray, rows: np.ndarray, refs: np.ndarray) -> dict[str, np.ndarray]:
    return {"ties": np.bincount(rows, minlength=ids.size)[: ids.size]}


def _by_knn(
    query: np.ndarray,
    ref: np.ndarray,
    k: int,
    reduce: Reduce,
    extra: Any,
    executor: Any,
    put: Callable[[np.ndarray, dict[str, np.ndarray]], None],
) -> np.ndarray:
    """The rows whose set lies within their exact k nearest, reduced; returns the other rows."""
    idx = knn_euclidean(query, ref, k, executor=executor).idx
    d2 = np.empty(idx.shape, dtype=np.float64)
    step = max(1, PAIR_BATCH // max(1, query.shape[1]))
    for a in range(0, query.shape[0], step):
        q = query[a : a + step].astype(np.float64)
        for j in range(k):
            d2[a : a + step, j] = squared(q, ref[idx[a : a + step, j]])
    best = d2.min(axis=1)
    # the engine orders by the square root of the same exact.squared: a reference left out is at least as far
    # as the k-th kept up to one rounding of that root; with the whole reference kept nothing is left out
    whole = k == ref.shape[0]
    settled = np.full(idx.shape[0], True) if whole else d2[:, -1] * (1.0 - 1e-15) > best + TIE_TOL
    done = np.nonzero(settled)[0]
    for a in range(0, done.size, step):
        ids = done[a : a + step]
        rows, cols = np.nonzero(d2[ids] <= best[ids, None] + TIE_TOL)
        put(ids, reduce(extra, ids, rows, idx[ids[rows], cols]))
    return np.nonzero(~settled)[0]


def _scan_chunk(extra: tuple, start: int, block: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    query, ids, ref, bound, reduce, reduce_extra = extra
    stop = start + block.shape[0]
    q64 = query[start:stop].astype(np.float64)
    qn = np.einsum("ij,ij->i", q64, q64)
    local = np.arange(stop - start)
    first = block.argmin(axis=1)
    low = block[local, first]
    thr = low + 2.0 * (qn - bound.lower(q64, qn)) + TIE_TOL
    block[local, first] = np.inf  # the runner-up decides whether a row needs a closer look
    second = block.min(axis=1)
    block[local, first] = low
    multi = np.nonzero(second <= thr)[0]
    single = np.ones(stop - start, dtype=bool)
    single[multi] = False
    sub_rows, refs_multi = np.nonzero(block[multi] <= thr[multi, None])
    rows = np.concatenate([local[single], multi[sub_rows]])
    refs = np.concatenate([first[single], refs_multi])
    order = np.argsort(rows, kind="stable")
    rows, refs = rows[order], refs[order]
    d2 = np.empty(rows.size, dtype=np.float64)
    step = max(1, PAIR_BATCH // max(1, query.shape[1]))
    for a in range(0, rows.size, step):
        d2[a : a + step] = squared(q64[rows[a : a + step]], ref[refs[a : a + step]])
    best = np.full(stop - start, np.inf)
    np.minimum.at(best, rows, d2)
    keep = d2 <= best[rows] + TIE_TOL
    chunk_ids = ids[start:stop]
    return chunk_ids, reduce(reduce_extra, chunk_ids, rows[keep], refs[keep])
