"""The k smallest (and the largest) entries per row of distance blocks, ties to the lowest reference row.

A k-NN query walks the reference in tiles and each tile in blocks small enough to stay in the core's
cache (neighbors.py). Each block updates a running top-k per query row: (float32 score, reference
row) pairs kept in (score, row) order. Most entries are above the row's current k-th score, so the
kernel tests 64 entries at a time with a vectorised comparison and looks at single entries only in
the rare runs that hold a candidate. The choice is the k smallest by (score, row) whatever the
blocking, so a tile gives the same candidates in one block or in many.

Compiled with numba (nogil: blocks run side by side on threads). Scores are never NaN (callers reject
non-finite coordinates), which is what the kernels' ``nnan`` flag assumes; no flag changes a sum.
"""

from __future__ import annotations

import numpy as np

from .compiled import kernel

#: entries per vectorised test: a run is looked at one by one only when one of its entries qualifies
RUN = 64
#: the row of an empty slot of a running top-k: above every reference row
NO_ROW = np.int64(2**62)
#: ``self_first`` when no query row is a reference row: no column is ever "the row itself"
NO_SELF = -(2**62)


def empty_top(rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """A running top-k with no candidate yet: (scores +inf, rows NO_ROW), each (rows, k)."""
    return np.full((rows, k), np.inf, dtype=np.float32), np.full((rows, k), NO_ROW, dtype=np.int64)


@kernel(fastmath={"nnan", "nsz"})
def _insert(values: np.ndarray, rows: np.ndarray, v: np.float32, r: np.int64) -> None:
    """Insert (v, r) into one row's sorted top-k, dropping its last entry."""
    j = values.shape[0] - 1
    while j > 0 and (values[j - 1] > v or (values[j - 1] == v and rows[j - 1] > r)):
        values[j] = values[j - 1]
        rows[j] = rows[j - 1]
        j -= 1
    values[j] = v
    rows[j] = r


@kernel(fastmath={"nnan", "nsz"})
def smallest_update(
    block: np.ndarray, first_ref: int, self_first: int, n_ref: int, values: np.ndarray, rows: np.ndarray
) -> None:
    """Fold a block into running top-ks. Column p is reference row ``first_ref + p`` (a column past
    ``n_ref`` is padding: never taken); block row i is query row ``self_first + i``, excluded from its
    own top-k (NO_SELF: nothing excluded). ``values`` / ``rows``: (block rows, k), ascending by (score,
    row)."""
    n_rows, width = block.shape
    k = values.shape[1]
    runs = width // RUN
    for i in range(n_rows):
        x = block[i]
        own = self_first + i - first_ref  # the column of the row itself, if it is in this block
        thr = values[i, k - 1]
        for c in range(runs + 1):
            c0 = c * RUN
            c1 = min(c0 + RUN, width)
            if c < runs:
                hit = 0
                for p in range(RUN):  # vectorised: any entry at or below the k-th score?
                    hit |= np.int32(x[c0 + p] <= thr)
                if hit == 0:
                    continue
            for p in range(c0, c1):
                v = x[p]
                r = first_ref + p
                if v > thr or p == own or r >= n_ref:
                    continue
                if v == thr and r >= rows[i, k - 1]:
                    continue
                _insert(values[i], rows[i], v, r)
                thr = values[i, k - 1]


@kernel(fastmath={"nnan", "nsz"})
def largest_update(
    block: np.ndarray, first_ref: int, n_ref: int, values: np.ndarray, rows: np.ndarray
) -> None:
    """Fold a block into each row's running largest entry, ties to the lowest reference row: column p is
    reference row ``first_ref + p`` (past ``n_ref``: padding, never taken); ``values`` / ``rows``:
    (block rows,)."""
    n_rows, width = block.shape
    runs = width // RUN
    for i in range(n_rows):
        x = block[i]
        best = values[i]
        for c in range(runs + 1):
            c0 = c * RUN
            c1 = min(c0 + RUN, width)
            if c < runs:
                hit = 0
                for p in range(RUN):
                    hit |= np.int32(x[c0 + p] >= best)
                if hit == 0:
                    continue
            for p in range(c0, c1):
                v = x[p]
                r = first_ref + p
                if r >= n_ref:
                    break
                if v > best or (v == best and r < rows[i]):
                    best = v
                    values[i] = v
                    rows[i] = r


@kernel(fastmath={"nnan", "nsz"})
def smallest_update_cols(
    block: np.ndarray,
    first_row: int,
    col_norms: np.ndarray,
    row_norms: np.ndarray,
    n_cols: int,
    values: np.ndarray,
    rows: np.ndarray,
) -> None:
    """Fold a block into running top-ks of its *columns*: the same pairs read the other way (each pair
    computed once, neighbors.py). Block entry (i, p) is the score ‖c_p‖² − 2 r_i·c_p of row
    ``first_row + i`` for column p; column p's own score for that row is entry − ‖c_p‖² + ‖r_i‖²
    (``col_norms[p]``, ``row_norms[i]``: float32, as the scores were computed). Columns from ``n_cols`` on
    are padding, never updated. ``values`` / ``rows``: (block columns, k), ascending by (score, row)."""
    n_rows, width = block.shape
    k = values.shape[1]
    width = min(width, n_cols)
    thr = np.empty(width, dtype=np.float32)  # each column's k-th score, contiguous for the vector test
    for p in range(width):
        thr[p] = values[p, k - 1]
    for i in range(n_rows):
        x = block[i]
        rn = row_norms[i]
        r = first_row + i
        runs = width // RUN
        for c in range(runs + 1):
            c0 = c * RUN
            c1 = min(c0 + RUN, width)
            if c < runs:
                hit = 0
                for p in range(RUN):  # vectorised (a fixed count): any column whose k-th this could beat?
                    hit |= np.int32((x[c0 + p] - col_norms[c0 + p]) + rn <= thr[c0 + p])
                if hit == 0:
                    continue
            for p in range(c0, c1):
                v = (x[p] - col_norms[p]) + rn
                if v > thr[p] or (v == thr[p] and r >= rows[p, k - 1]):
                    continue
                _insert(values[p], rows[p], v, r)
                thr[p] = values[p, k - 1]
