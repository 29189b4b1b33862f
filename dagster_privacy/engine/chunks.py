"""Chunked reductions over a whole reference that are not a top-k (ties, nearest sets, densities): fixed
chunks of query rows, each block against every reference row, handed to the same executor as the k-NN
blocks (neighbors.py) — in-process threads or Ray tasks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from . import neighbors as nb
from .executors import IN_PROCESS, Executor
from .neighbors import MixedPlan, MixedRows, mixed_block, mixed_plan
from .sparse_dims import SparseDims

T = TypeVar("T")


@dataclass(frozen=True)
class _Chunks:
    """What every chunk of a map_chunks call reads (put once in the executor's store)."""

    fn: Callable[[Any, int, np.ndarray], Any]
    extra: Any
    query: np.ndarray | MixedRows
    ref: np.ndarray | MixedRows
    ref_t2: np.ndarray | None = None  # euclidean: −2·refᵀ over the dense dimensions
    norms: np.ndarray | None = None  # euclidean: ‖r‖²
    sparse: SparseDims | None = None  # euclidean: the rare dimensions, added outside the product
    plan: MixedPlan | None = None  # mixed


def _chunk(job: _Chunks, rows: tuple[int, int]) -> Any:
    s, e = rows
    if isinstance(job.query, MixedRows):
        assert isinstance(job.ref, MixedRows) and job.plan is not None
        block = nb.scratch("chunk", (e - s, job.ref.n))
        mixed_block(job.query, job.ref, s, e, job.plan, block)
    else:
        assert job.ref_t2 is not None and job.norms is not None and job.sparse is not None
        q = job.query[s:e]
        if job.sparse.dense.size < q.shape[1]:
            q = q[:, job.sparse.dense]
        block = np.matmul(q, job.ref_t2, out=nb.scratch("chunk", (e - s, job.ref_t2.shape[1])))
        job.sparse.add_to(block, s, e, 0, block.shape[1])
        block += job.norms
    return job.fn(job.extra, s, block)


def map_chunks(
    fn: Callable[[Any, int, np.ndarray], T],
    extra: Any,
    query: np.ndarray | MixedRows,
    ref: np.ndarray | MixedRows,
    *,
    executor: Executor | None = None,
    sparse: bool = False,
) -> list[T]:
    """``[fn(extra, start, block) for each chunk of query rows]``, in row order, each block against the
    whole reference (float32): euclidean scores ‖r‖² − 2 q·r (+ ‖q‖² = squared distance), or mixed
    (Hamming / Gower) distances. For reductions that are not a top-k (counts, ties, densities). With
    ``sparse``, a one-hot space's rare dimensions are added outside the product, as in the k-NN blocks
    (sparse_dims.SparseDims): faster, but the scores round differently from one full product, so only for
    a reduction that allows for float32 rounding (a slack and an exact recomputation). The
    chunks (within KNN_BLOCK_BYTES each) depend on the sizes only and run on ``executor``, so ``fn``
    must be a module-level function and ``extra`` picklable; the block is scratch, ``fn`` may change it
    and must not keep it."""
    if isinstance(query, MixedRows):
        assert isinstance(ref, MixedRows)
        job = _Chunks(fn, extra, query, ref, plan=mixed_plan(query, ref))
        n_q, n_r = query.n, ref.n
    else:
        assert isinstance(ref, np.ndarray)
        dims = SparseDims.split(query, ref) if sparse else SparseDims.none(ref.shape[1])
        dense = ref if dims.dense.size == ref.shape[1] else ref[:, dims.dense]
        ref_t2 = np.ascontiguousarray(dense.T * np.float32(-2.0))
        norms = np.einsum("ij,ij->i", ref, ref, dtype=np.float32)
        job = _Chunks(fn, extra, query, ref, ref_t2=ref_t2, norms=norms, sparse=dims)
        n_q, n_r = query.shape[0], ref.shape[0]
    step = nb.chunk_rows(n_r, budget=nb.KNN_BLOCK_BYTES)
    tiles = [(s, min(s + step, n_q)) for s in range(0, n_q, step)]
    return (executor or IN_PROCESS).map(_chunk, job, tiles)
