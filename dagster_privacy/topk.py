"""The k smallest entries per row of a distance block, ties to the lowest reference row.

A block's columns are reference rows laid out in groups (``group_layout``): group g — GROUP consecutive
reference rows — sits at every nb-th position, so the minimum of every group is GROUP vector minima of
contiguous slices, not one short reduction per group. The k groups with the smallest (minimum, group)
hold the k smallest entries; one integer partition of (value bits, row) keys picks them among their
entries, which settles ties without a pass of its own (neighbors.py runs this per block).
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
    flipped, −0 read as +0) in the high half, the index (< 2³¹) in the low half. One integer partition
    then selects by value with ties to the lowest index, with no tie handling of its own."""
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


def select(block: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k smallest entries per row of a block laid out by ``group_layout``, in (value, row) order:
    (tile-local reference rows, float32 values). Ties go to the lowest reference row.

    One pass takes each group's minimum; the k groups with the smallest (minimum, group) are kept, and
    the k smallest are chosen among their k·GROUP entries. Exact: a group holding one of the k smallest
    entries has its minimum before that entry, and groups are contiguous in row order, so it is among
    the first k groups."""
    rows, width = block.shape
    nb = width // GROUP
    if nb <= k:  # a narrow tile: every entry is a candidate
        keys = order_keys(block, group_layout(width).astype(np.int64))
    else:
        minima = block[:, :nb].copy()
        for j in range(1, GROUP):
            np.minimum(minima, block[:, j * nb : (j + 1) * nb], out=minima)
        best = _smallest_keys(order_keys(minima, np.arange(nb, dtype=np.int64)), k) & 0xFFFFFFFF
        cand = block[np.arange(rows)[:, None, None], best[:, :, None] + np.arange(GROUP) * nb]
        cand_rows = (best[:, :, None] * GROUP + np.arange(GROUP)).reshape(rows, k * GROUP)
        keys = order_keys(cand.reshape(rows, k * GROUP), cand_rows)
    chosen = _smallest_keys(keys, k)
    local = chosen & 0xFFFFFFFF
    return local, _value_at(block, local, nb)


def _value_at(block: np.ndarray, local: np.ndarray, nb: int) -> np.ndarray:
    """The block's values at tile-local reference rows (positions by ``group_layout``)."""
    return np.take_along_axis(block, (local % GROUP) * nb + local // GROUP, axis=1)
