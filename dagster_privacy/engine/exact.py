"""What makes the k nearest exact (neighbors.py): the rounding bound of a float32 score, the re-rank of a
(row, tile) that bound cannot settle, and the exact distances, in bounded chunks.

``ScoreBound``: how far below a float32 score + ‖q‖² the exact d² can be. A float32 score only chooses
candidates; the k nearest are decided on exact float64 distances, then the reference index. ``settle``
re-ranks against the whole tile every (row, tile) whose left-out references the bound cannot prove
farther than the k-th kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: unit roundoff of float32, and the absolute error of one operation in its subnormal range (γ's
#: relative bound assumes no underflow: each rounded product or sum adds at most this much more)
U32 = 2.0**-24
TINY32 = 2.0**-149


def gamma(m: np.ndarray | float) -> np.ndarray:
    """γ_m = m·u / (1 − m·u): a float32 sum of m rounded terms is within γ_m · Σ|terms| of the exact."""
    mu = np.asarray(m, dtype=np.float64) * U32
    return mu / (1.0 - mu)


#: a float32 score ‖r‖² − 2 q·r is a sum of the m nonzero terms q_j·(−2r_j) and ‖r‖² (a zero term adds
#: exactly nothing), in whatever order and blocking the BLAS takes: it is within γ_m · Σ|terms| of the
#: exact one (γ_m = m·u / (1 − m·u), u = 2⁻²⁴; Higham, Accuracy and Stability of Numerical Algorithms,
#: §3.1), Σ|terms| ≤ 2‖q‖·max‖r‖ + max‖r‖², and the float32 ‖r‖² is itself within γ of the exact. The
#: bound (times this margin) decides which references a row could still have among its k nearest
SCORE_SLACK = 2.0


@dataclass(frozen=True)
class ScoreBound:
    """How far a float32 score ‖r‖² − 2 q·r can be from the exact one, for references of norm ≤ r_max
    whose float32 ‖r‖² (as the product adds it) is ≤ norm2 and who have ≤ other_nnz nonzero terms."""

    r_max: float
    norm2: float
    other_nnz: int
    #: more roundings of a score read along a block's columns (pairs.py: − ‖q‖², which the score holds,
    #: then + ‖r‖²), each within u · (2‖q‖·r_max + ‖q‖² + r_max²)
    extra: int = 0

    def lower(self, q: np.ndarray, qn: np.ndarray, reach: np.ndarray | None = None) -> np.ndarray:
        """Per query row, ``qn`` (‖q‖², float64) less how far below its float32 score + ‖q‖² its exact d²
        can be (with SCORE_SLACK and float64's own roundings): exact d² ≥ score + this. ``reach``: per
        row, only references of norm ≤ reach count (a reference nearer than d is within ‖q‖ + d of the
        origin): their scores round less than those of the largest norm."""
        r, norm2, extra = self.r_max, self.norm2, self.extra
        if reach is not None:  # a float32 ‖r‖² is within γ of the exact
            r = np.minimum(r, reach)
            norm2 = np.minimum(norm2, r * r * (1.0 + gamma(self.other_nnz)))
        terms = 2.0 * np.sqrt(qn) * r + norm2 + (qn if extra else 0.0)
        nnz = np.count_nonzero(q, axis=1)
        bound = SCORE_SLACK * (
            gamma(nnz + 1 + extra) * terms
            + gamma(self.other_nnz) * r**2
            + (nnz + self.other_nnz + 3 + extra) * TINY32
        )
        return qn - (bound + 1e-12 * (qn + r**2))


def squared(q64: np.ndarray, ref_rows: np.ndarray) -> np.ndarray:
    """The exact squared distances (float64 from the encoded rows) of query rows ``q64`` to the float32
    rows ``ref_rows``, pair by pair: the one definition the k nearest and the nearest sets are decided on."""
    diff = q64 - ref_rows.astype(np.float64)
    return np.einsum("ij,ij->i", diff, diff)


def euclidean_keys(q64: np.ndarray, ref: np.ndarray, ref_rows: np.ndarray) -> np.ndarray:
    """The exact distances of query rows ``q64`` to ``ref[ref_rows]``, pair by pair: the one order of the
    k nearest (with the reference index)."""
    return np.sqrt(squared(q64, ref[ref_rows]))


def settle(
    best: tuple[np.ndarray, np.ndarray],
    floor: np.ndarray,
    tiles: list[tuple[int, int]],
    recheck: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray, np.ndarray]],
    *,
    squared: bool,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Make the k nearest exact. ``floor[i, t]``: every reference of tile t that row i did not keep as a
    candidate is at least this far (squared for a euclidean query): its last candidate's float32 score less
    the rounding bound. Where that is not beyond the k-th exact distance kept, a left-out reference could
    still be among the k nearest, or tie the k-th with a lower index: ``recheck(rows, t)`` gives,
    for those rows, every reference of the tile that the bound cannot rule out, as (position in rows,
    reference, exact distance), the row itself left out; the k nearest by (distance, index) are taken
    again. Returns the k nearest and the (row, tile) pairs re-ranked."""
    dist, idx = best
    count = 0
    for t, (t0, _) in enumerate(tiles):
        kth = dist[:, -1] ** 2 if squared else dist[:, -1]
        low = np.maximum(floor[:, t], 0.0)  # a distance is never negative
        # a reference left out could be nearer than the k-th, or tie it with a lower index
        rows = np.nonzero((low < kth) | ((low <= kth) & (t0 < idx[:, -1])))[0]
        if rows.size == 0:
            continue
        count += rows.size
        a, j, d = recheck(rows, t)
        new = ~(idx[rows[a]] == j[:, None]).any(axis=1)  # kept already: once only
        a, j, d = a[new], j[new], d[new]
        if a.size == 0:
            continue
        order = np.lexsort((j, a))
        a, j, d = a[order], j[order], d[order]
        start = np.searchsorted(a, np.arange(rows.size))
        width = int(np.bincount(a, minlength=rows.size).max())
        slot = np.arange(a.size) - start[a]
        cand_d = np.full((rows.size, width), np.inf)
        cand_i = np.full((rows.size, width), -1, dtype=np.int64)
        cand_d[a, slot], cand_i[a, slot] = d, j
        dist[rows], idx[rows] = merge((dist[rows], idx[rows]), cand_d, cand_i, dist.shape[1])
    return dist, idx, count


def above(x: np.ndarray) -> np.ndarray:
    """float32 values x' ≥ x: x rounded up (inf stays inf)."""
    x32 = x.astype(np.float32)
    return np.where(x32 < x, np.nextafter(x32, np.float32(np.inf)), x32)


def below(threshold: np.ndarray) -> np.ndarray:
    """float32 thresholds t' with (x ≤ t' ⟺ x ≤ t) for every float32 x: t rounded down."""
    t32 = threshold.astype(np.float32)
    return np.where(t32 > threshold, np.nextafter(t32, np.float32(-np.inf)), t32)


#: candidates per re-ranked row above which a re-rank looks for identical references (a tile of many
#: copies: a collapsed synthetic table); below it, the few exact distances cost less than the search
MANY = 64


def useful(
    tile_rows: Callable[[], np.ndarray],
    t0: int,
    k: int,
    exclude_self: bool,
    query_rows: np.ndarray,
    a: np.ndarray,
    j: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidates (a: position in query_rows, j: reference) of a re-rank of the tile starting at t0,
    without a self-query's row meeting itself. When they are many, without a reference that k (k + 1 in
    a self-query) identical rows of lower index in the same tile precede: they tie with it and win on
    index, so it is never among the k nearest. ``tile_rows()``: the tile's rows, as compared."""
    keep = np.ones(a.size, dtype=bool)
    if a.size > MANY * max(1, query_rows.size):
        keep = dup_rank(tile_rows())[j - t0] < k + (1 if exclude_self else 0)
    if exclude_self:
        keep &= query_rows[a] != j
    return a[keep], j[keep]


#: pairs whose exact distance is computed at once: memory stays bounded however many a re-rank takes
KEY_CHUNK = 1 << 16


def chunked(keys: Callable[[slice], np.ndarray], n: int) -> np.ndarray:
    """keys(slice) over [0, n) in chunks of KEY_CHUNK pairs, concatenated."""
    out = np.empty(n)
    for c in range(0, n, KEY_CHUNK):
        part = slice(c, min(c + KEY_CHUNK, n))
        out[part] = keys(part)
    return out


def dup_rank(rows: np.ndarray) -> np.ndarray:
    """Per row, how many rows of identical bits come before it (0 for a unique row or the first of its
    kind). Rows are grouped on a hash of their 32-bit words and compared bit for bit within a group: a
    row of a colliding hash that differs from its group's first gets 0 (never skipped)."""
    n = rows.shape[0]
    if rows.size == 0:  # no column: every row is the same
        return np.arange(n, dtype=np.int64)
    if rows.dtype.itemsize % 4:  # whole 32-bit words (an exact widening keeps equality)
        rows = rows.astype(np.float64)
    words = np.ascontiguousarray(rows).view(np.uint32).reshape(n, -1)
    mult = np.random.default_rng(0).integers(1, 2**63, words.shape[1], dtype=np.uint64) | np.uint64(1)
    h = np.empty(n, dtype=np.uint64)
    for c in range(0, n, 8192):  # uint64 products wrap: a hash, memory bounded by the chunk
        h[c : c + 8192] = (words[c : c + 8192].astype(np.uint64) * mult).sum(axis=1, dtype=np.uint64)
    order = np.lexsort((np.arange(n), h))  # by hash, then row
    start = np.searchsorted(h[order], h[order], side="left")
    same = np.ones(n, dtype=bool)
    for c in range(0, n, 8192):
        part = order[c : c + 8192]
        same[c : c + 8192] = (words[part] == words[order[start[c : c + 8192]]]).all(axis=1)
    count = np.cumsum(same)
    rank = np.zeros(n, dtype=np.int64)
    rank[order] = np.where(same, count - count[start], 0)
    return rank


def merge(best: tuple[np.ndarray, np.ndarray] | None, dist: np.ndarray, idx: np.ndarray, k: int):
    """The running top-k: the k smallest by (exact float64 distance, index) of both candidate sets."""
    d = dist if best is None else np.concatenate([best[0], dist], axis=1)
    i = idx if best is None else np.concatenate([best[1], idx], axis=1)
    order = np.lexsort((i, d), axis=1)[:, :k]
    return np.take_along_axis(d, order, 1), np.take_along_axis(i, order, 1)
