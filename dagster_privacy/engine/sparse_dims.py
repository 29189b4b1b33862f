"""The rare dimensions of a euclidean space, added to a block outside its float32 product.

A one-hot column of a rare category is zero for most rows, so most of its products are 0 · 0. A
dimension whose nonzero (query, reference) pairs are few leaves the BLAS product (neighbors.py,
chunks.py); its pairs' −2·q·r are added to the block afterwards by a compiled kernel, dimension by
dimension, so a score is the same sum whatever the blocking.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .compiled import kernel

#: a euclidean dimension whose nonzero (query, reference) pairs are at most this share of all pairs (a
#: rare category's one-hot column) leaves the float32 product: its few pairs are added to the block
#: afterwards (SparseDims). Measured on Adult-shaped tables: 52 of 110 dimensions stay in the product,
#: the rare pairs are 0.3 % of a block, and product + additions cost 1.65 ns per cell against 2.8 ns
SPARSE_SHARE = 1.0 / 2048


@dataclass(frozen=True)
class SparseDims:
    """A euclidean query's dimensions split in two: ``dense`` ones go into the float32 block product, each
    sparse one adds −2·q_j·r_j to the few (query row, reference row) pairs where both are nonzero.
    Sparse dimension j's nonzeros, ascending by row: query rows ``q_rows[q_ptr[j]:q_ptr[j + 1]]`` with
    their values, reference rows ``r_rows[r_ptr[j]:r_ptr[j + 1]]`` with −2·their values."""

    dense: np.ndarray  # (d_dense,) int64 dimensions of the product
    q_ptr: np.ndarray
    q_rows: np.ndarray
    q_vals: np.ndarray
    r_ptr: np.ndarray
    r_rows: np.ndarray
    r_vals: np.ndarray

    @classmethod
    def split(cls, query: np.ndarray, ref: np.ndarray) -> SparseDims:
        """Dimensions whose nonzero pairs are at most SPARSE_SHARE of all pairs leave the product; one
        that is zero on either side adds nothing and is dropped."""
        nz_q = np.count_nonzero(query, axis=0).astype(np.float64)
        nz_r = np.count_nonzero(ref, axis=0).astype(np.float64)
        pairs = nz_q * nz_r
        rare = pairs <= SPARSE_SHARE * max(1, query.shape[0]) * max(1, ref.shape[0])
        dims = np.nonzero(rare & (pairs > 0))[0]
        sides = []
        for rows in (query, ref):
            idx = [np.nonzero(rows[:, j])[0] for j in dims]
            vals = [rows[i, j].astype(np.float32) for i, j in zip(idx, dims, strict=True)]  # as multiplied
            ptr = np.cumsum([0] + [i.size for i in idx], dtype=np.int64)
            cat_idx = np.concatenate([np.empty(0, np.int64), *idx])
            sides.append((ptr, cat_idx, np.concatenate([np.empty(0, np.float32), *vals])))
        (q_ptr, q_rows, q_vals), (r_ptr, r_rows, r_vals) = sides
        return cls(np.nonzero(~rare)[0], q_ptr, q_rows, q_vals, r_ptr, r_rows, r_vals * np.float32(-2.0))

    @classmethod
    def none(cls, d: int) -> SparseDims:
        """Every one of d dimensions in the product (one full product, as one BLAS call rounds it)."""
        empty, ptr = np.empty(0, np.int64), np.zeros(1, np.int64)
        return cls(np.arange(d), ptr, empty, np.empty(0, np.float32), ptr, empty, np.empty(0, np.float32))

    def positions(self, side: str, at: np.ndarray) -> np.ndarray:
        """(len(at), sparse dims): per dimension, where each row number of ``at`` falls in its sorted
        nonzero rows of ``side`` ("query" or "ref"), as a position in the concatenated arrays."""
        ptr, rows = (self.q_ptr, self.q_rows) if side == "query" else (self.r_ptr, self.r_rows)
        out = np.empty((len(at), ptr.size - 1), dtype=np.int64)
        for j in range(ptr.size - 1):
            out[:, j] = ptr[j] + np.searchsorted(rows[ptr[j] : ptr[j + 1]], at)
        return out

    def add_to(self, block: np.ndarray, s: int, e: int, c0: int, c1: int) -> None:
        """Add the sparse dimensions' −2·q·r to the block of query rows [s, e) × reference rows [c0, c1)."""
        q, r = self.positions("query", np.array([s, e])), self.positions("ref", np.array([c0, c1]))
        self.add_between(block, s, c0, q[0], q[1], r[0], r[1])

    def add_between(
        self,
        block: np.ndarray,
        s: int,
        c0: int,
        qa: np.ndarray,
        qb: np.ndarray,
        ra: np.ndarray,
        rb: np.ndarray,
    ) -> None:
        """``add_to`` with the nonzeros' ranges per dimension already found (``positions``): a k-NN query
        finds them once per tile and block, not by searches in every block, whose cache misses cost
        more than the additions (measured: 118 against 9 µs per block after a product)."""
        _add_pairs(block, s, c0, qa, qb, self.q_rows, self.q_vals, ra, rb, self.r_rows, self.r_vals)


@kernel
def _add_pairs(block, s, c0, qa, qb, q_rows, q_vals, ra, rb, r_rows, r_vals) -> None:  # noqa: ANN001, PLR0913
    # dimension by dimension, each pair's float32 product added once: the sums of an np.outer per
    # dimension, in the same order (no fused multiply-add: the kernel has no fastmath flag)
    for j in range(qa.shape[0]):
        for a in range(qa[j], qb[j]):
            for b in range(ra[j], rb[j]):
                block[q_rows[a] - s, r_rows[b] - c0] += q_vals[a] * r_vals[b]
