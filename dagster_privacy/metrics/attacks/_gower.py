"""Gower rows of target records and of the whole synthetic table, and the chunked reductions the
linkability and inference attacks need (seed 004 §4.3.2–4.3.3).

Gower distance (unnormalised, the 1/m factor changes no order): Σ_numerical |Δ| / real range +
Σ_categorical [codes differ], computed by the engine's mixed-space kernel (``neighbors.mixed_block``:
one float32 product of one-hot codes for the categorical part, numerical parts column by column).
Query rows are processed in chunks against the *whole* synthetic table (memory O(chunk × n_synthetic)).
The synthetic rows are searched in row-hash order, so "lowest index among equal distances" is a
content-defined tie rule that does not depend on the input's row order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...engine.context import EvaluationContext
from ...engine.executors import IN_PROCESS, Executor
from ...engine.neighbors import MixedPlan, MixedRows, mixed_block, mixed_plan


@dataclass(frozen=True)
class Rows:
    """Selected rows of one table on selected columns: scaled numbers and integer codes."""

    num: np.ndarray  # (n, p) float32, min-max scaled with the real range (missing at the real median)
    cat: np.ndarray  # (n, q) int32 codes shared by all tables
    num_cols: tuple[str, ...]
    cat_cols: tuple[str, ...]

    @property
    def n(self) -> int:
        return int(max(self.num.shape[0], self.cat.shape[0]))

    @property
    def mixed(self) -> MixedRows:
        """The same rows for the engine's mixed-space kernel (unnormalised Gower: weight 1)."""
        return MixedRows(self.num, self.cat, 1.0)


def rows(ctx: EvaluationContext, role: str, index: np.ndarray | None, columns: Sequence[str]) -> Rows:
    names = ctx.schema.names
    num_cols = tuple(c for c in columns if ctx.schema.kind(c) == "numerical")
    cat_cols = tuple(c for c in columns if ctx.schema.kind(c) != "numerical")
    table = ctx.table(role)
    codes = ctx.codes(role)
    sel = slice(None) if index is None else index
    n = table.height if index is None else len(index)
    num = (
        np.column_stack([ctx.encoder.scaled(table, c)[sel] for c in num_cols]).astype(np.float32)
        if num_cols
        else np.empty((n, 0), np.float32)
    )
    cat = (
        np.ascontiguousarray(codes[sel][:, [names.index(c) for c in cat_cols]])
        if cat_cols
        else np.empty((n, 0), np.int32)
    )
    return Rows(num, cat, num_cols, cat_cols)


def _step(n_ref: int, budget: int = 8 * 2**20) -> int:
    """Query rows per chunk: one float32 block of ~8 MB (stays in cache far better than a huge one)."""
    return int(max(8, min(2048, budget // max(1, n_ref * 4))))


def leave_one_out_nearest(
    q: Rows, r: Rows, drop: Sequence[str], executor: Executor | None = None
) -> np.ndarray:
    """For each query row and each column c of ``drop``: the nearest reference row on all the other
    columns (first among equal distances). One full block per chunk of query rows, its numerical terms
    kept; each dropped column's term is then subtracted (numbers) or its match added back (categories:
    argmin of full − 1 + [equal] is argmin of full + [equal]) before an argmin. The chunks (a function
    of the sizes only) run side by side on ``executor``."""
    job = _LeaveOneOut(q, r, tuple(drop), mixed_plan(q.mixed, r.mixed), _step(r.n))
    chunks = [(s, min(s + job.step, q.n)) for s in range(0, q.n, job.step)]
    parts = (executor or IN_PROCESS).map(_loo_chunk, job, chunks)
    return np.concatenate(parts) if parts else np.empty((0, len(drop)), dtype=np.int64)


#: Gower distances (unnormalised) within this of each other tie: float32 noise, far below any real
#: difference; among ties the first in content order wins, not whichever rounding happened to favour
TIE = 1e-5


def _first_nearest(d: np.ndarray) -> np.ndarray:
    """Per row, the lowest reference index within TIE of the row's minimum distance."""
    return (d <= d.min(axis=1, keepdims=True) + TIE).argmax(axis=1)


@dataclass(frozen=True)
class _LeaveOneOut:
    """What every chunk of leave_one_out_nearest reads (put once in the executor's store)."""

    q: Rows
    r: Rows
    drop: tuple[str, ...]
    plan: MixedPlan
    step: int


def _loo_chunk(job: _LeaveOneOut, rows: tuple[int, int]) -> np.ndarray:
    s, e = rows
    q, r = job.q, job.r
    shape = (e - s, r.n)  # buffers of this chunk only: a thread's own scratch would outlive the call
    b, t = np.empty(shape, dtype=np.float32), np.empty(shape, dtype=np.float32)
    num = list(dict.fromkeys(q.num_cols.index(c) for c in job.drop if c in q.num_cols))  # a column once
    terms = np.empty((len(num), *shape), dtype=np.float32)
    mixed_block(q.mixed, r.mixed, s, e, job.plan, b, terms=(num, terms))
    out = np.empty((e - s, len(job.drop)), dtype=np.int64)
    for i, c in enumerate(job.drop):
        if c in q.num_cols:
            np.subtract(b, terms[num.index(q.num_cols.index(c))], out=t)
        else:
            j = q.cat_cols.index(c)
            np.equal(q.cat[s:e, j][:, None], r.cat[None, :, j], out=t, casting="unsafe")
            t += b
        out[:, i] = _first_nearest(t)
    return out
