"""The k smallest entries per row of a distance block, ties to the lowest reference row.

A block's columns are reference rows laid out in groups (``group_layout``): group g — GROUP consecutive
reference rows — sits at every nb-th position, so the minimum of every group is GROUP vector minima of
contiguous slices, not one short reduction per group. The k groups with the smallest (minimum, group)
hold the k smallest entries; ``first_k`` picks the groups and then the entries (a float partition
for the k-th value, ties to the first position, which is the lowest row), neighbors.py per block.
"""

from __future__ import annotations

import numpy as np

GROUP = 32  # reference rows per group


def group_layout(width: int) -> np.ndarray:
    """For a reference tile of ``width`` positions (a multiple of GROUP): the tile-local reference row at
    each position. Position j·nb + g (nb = width / GROUP) holds row g·GROUP + j, so group g — rows
    g·GROUP … g·GROUP + GROUP − 1, contiguous in index order — sits at positions g, g + nb, g + 2·nb, …
    and its minimum over a block is GROUP element-wise minima of contiguous slices (a vector pass, where
    a minimum over each run of GROUP columns is a slow short reduction)."""
    nb = width // GROUP
    p = np.arange(width)
    return (p % nb) * GROUP + p // nb


def order_keys(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """int64 keys that sort as (float32 value, index): the value's bits made monotone (negative floats
    flipped, −0 read as +0) in the high half, the index (< 2³¹) in the low half: a sort or partition of
    them orders by value with ties to the lowest index, with no tie handling of its own."""
    bits = np.add(values, np.float32(0.0), dtype=np.float32).view(np.int32)  # a copy; −0.0 + 0.0 = +0.0
    bits ^= (bits >> 31) & np.int32(0x7FFFFFFF)
    keys = bits.astype(np.int64)
    keys <<= 32
    keys |= index
    return keys


def _smallest_keys(keys: np.ndarray, k: int) -> np.ndarray:
    """The k smallest keys per row, ascending."""
    if keys.shape[1] > k:
        keys = np.partition(keys, k - 1, axis=1)[:, :k]
    return np.sort(keys, axis=1)


def group_reduce(block: np.ndarray, op: np.ufunc = np.minimum) -> np.ndarray:
    """``op`` (np.minimum or np.maximum) over every group of each row of a block laid out by
    ``group_layout``: (rows, nb), GROUP element-wise passes over contiguous slices."""
    nb = block.shape[1] // GROUP
    out = block[:, :nb].copy()
    for j in range(1, GROUP):
        op(out, block[:, j * nb : (j + 1) * nb], out=out)
    return out


def first_k(values: np.ndarray, k: int) -> np.ndarray:
    """Per row, the positions of the k smallest values, ties to the lowest position, in position order.

    A float partition finds each row's k-th smallest value and every value up to it is taken; in the
    few rows where values equal to it are more than needed, only the first of them are kept (a running
    count). The choice is the k smallest by (value, position) without building (value, position) keys.
    Values must not be NaN."""
    kth = np.partition(values, k - 1, axis=1)[:, k - 1 : k]
    chosen = values <= kth
    over = np.nonzero(np.count_nonzero(chosen, axis=1) > k)[0]
    if over.size:  # ties at the k-th value: the first ones fill the room the smaller values leave
        v, t = values[over], kth[over]
        tied = v == t
        room = k - np.count_nonzero(v < t, axis=1, keepdims=True)
        chosen[over] = (v < t) | (tied & (np.cumsum(tied, axis=1, dtype=np.int32) <= room))
    return np.nonzero(chosen)[1].reshape(values.shape[0], k)


def select(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k smallest entries per row of a block laid out by ``group_layout``, in (value, row) order:
    (tile-local reference rows, float32 values). Ties go to the lowest reference row.

    One pass takes each group's minimum; the k groups with the smallest (minimum, group) are kept, and
    the k smallest are chosen among their k·GROUP entries. Exact: a group holding one of the k smallest
    entries has its minimum before that entry, and groups are contiguous in row order, so it is among
    the first k groups. The chosen groups come in ascending order, so their entries are in reference
    row order and "ties to the lowest row" is "ties to the first candidate" (``first_k``)."""
    rows, width = block.shape
    nb = width // GROUP
    if nb <= k:  # a narrow tile: every entry is a candidate
        keys = order_keys(block, group_layout(width).astype(np.int64))
        local = _smallest_keys(keys, k) & 0xFFFFFFFF
        return local, _value_at(block, local, nb)
    groups = first_k(group_reduce(block), k)  # (rows, k), ascending
    spread = np.arange(GROUP, dtype=np.int64)
    flat = np.arange(rows, dtype=np.int64)[:, None, None] * width + groups[:, :, None] + spread * nb
    cand = np.take(block.reshape(-1), flat.reshape(rows, k * GROUP))  # one flat gather
    cand_rows = (groups[:, :, None] * GROUP + spread).reshape(rows, k * GROUP)
    pick = first_k(cand, k)
    local = np.take_along_axis(cand_rows, pick, axis=1)
    values = np.take_along_axis(cand, pick, axis=1)
    order = np.argsort(order_keys(values, local), axis=1)  # by (value, row), as the contract says
    return np.take_along_axis(local, order, axis=1), np.take_along_axis(values, order, axis=1)


def _value_at(block: np.ndarray, local: np.ndarray, nb: int) -> np.ndarray:
    """The block's values at tile-local reference rows (positions by ``group_layout``)."""
    return np.take_along_axis(block, (local % GROUP) * nb + local // GROUP, axis=1)
