"""Linkability attack (seed 004 §4.3.2, §5.3.2): re-link the two halves of a record through the
synthetic table.

The columns are split into two disjoint sets A1, A2. For each target record, the k nearest synthetic
records (Gower distance, seed 004 §4.3.2) of its A1 half and of its A2 half are found; the attack
succeeds when the two neighbour sets intersect. Neighbour sets include every synthetic record tied
with the k-th nearest (docs/metrics.md, "Attacks"): a verbatim copy of the target is at distance 0 in
both halves and is therefore in both sets even when many other synthetic records tie with it on one
half — the reference implementation instead keeps one arbitrary record among the ties, so a verbatim
copy is found only by luck. Targets: the same number of training and control records (E of eq. 8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...engine.context import EvaluationContext
from ...engine.neighbors import MixedPlan, mixed_block, mixed_plan
from ...errors import NotApplicable
from ...results import Measurement, Risk
from ..registration import Expect, metric
from . import _gower
from .rates import Side, rate
from .targets import canonical_columns, hash_order, n_targets, sample_targets


def default_split(ctx: EvaluationContext) -> tuple[list[str], list[str]]:
    """Columns in name order, dealt alternately into A1 and A2 (order-free, both halves mixed)."""
    cols = canonical_columns(ctx)
    return cols[0::2], cols[1::2]


class Profiles:
    """The distinct synthetic profiles on one half's columns, and the synthetic rows of each.

    Rows with the same profile are at the same distance from any target, so distances are computed
    once per profile (on Adult, anonymeter's first half has far fewer profiles than rows)."""

    def __init__(self, ctx: EvaluationContext, columns: Sequence[str], syn_order: np.ndarray) -> None:
        names = ctx.schema.names
        codes = ctx.codes("synthetic")[syn_order][:, [names.index(c) for c in columns]]
        _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
        self.of_row = inverse.ravel()  # profile of each (content-ordered) synthetic row
        self.rows = _gower.rows(ctx, "synthetic", syn_order[first], columns)
        self.size = np.bincount(self.of_row, minlength=first.size)
        self.members = np.argsort(self.of_row, kind="stable")  # rows grouped by profile, in order
        self.start = np.cumsum(self.size) - self.size

    def within(self, block: np.ndarray, k: int) -> np.ndarray:
        """Profiles within the tie-inclusive k nearest rows: distance ≤ the k-th smallest row distance."""
        if k == 1:
            kth = block.min(axis=1)
        else:
            kk = min(k, block.shape[1])
            part = np.argpartition(block, kk - 1, axis=1)[:, :kk]
            vals = np.take_along_axis(block, part, axis=1)
            order = np.argsort(vals, axis=1, kind="stable")
            vals = np.take_along_axis(vals, order, axis=1)
            cum = np.cumsum(self.size[np.take_along_axis(part, order, axis=1)], axis=1)
            at = np.minimum((cum < k).sum(axis=1), kk - 1)  # first profile reaching k rows
            kth = vals[np.arange(vals.shape[0]), at]
        return block <= (kth + _gower.TIE)[:, None]

    def expand(self, targets: np.ndarray, profiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(target, synthetic row) pairs for (target, profile) pairs."""
        sizes = self.size[profiles]
        t = np.repeat(targets, sizes)
        pos = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes - self.start[profiles], sizes)
        return t, self.members[pos]


def _pairs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of the True cells: argmax for rows with one (the usual case), nonzero for the rest."""
    count = np.count_nonzero(mask, axis=1)
    single = np.nonzero(count == 1)[0]
    t, c = [single], [mask[single].argmax(axis=1)]
    multi = np.nonzero(count > 1)[0]
    if multi.size:
        mt, mc = np.nonzero(mask[multi])
        t.append(multi[mt])
        c.append(mc)
    return np.concatenate(t), np.concatenate(c)


def _stack(
    ctx: EvaluationContext, sides: Sequence[tuple[str, np.ndarray]], columns: Sequence[str]
) -> _gower.Rows:
    parts = [_gower.rows(ctx, role, index, columns) for role, index in sides]
    return _gower.Rows(
        np.concatenate([p.num for p in parts]),
        np.concatenate([p.cat for p in parts]),
        parts[0].num_cols,
        parts[0].cat_cols,
    )


def _linked(
    ctx: EvaluationContext,
    sides: Sequence[tuple[str, np.ndarray]],
    a1: Sequence[str],
    a2: Sequence[str],
    syn_order: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per target (the sides' targets stacked): whether the tie-inclusive k-NN sets of its two halves
    share a synthetic row; and one linking synthetic row (−1 when none). The intersection is found from
    the side whose tie sets cover fewer rows: its (target, row) pairs are checked against the other's."""
    h1, h2 = Profiles(ctx, a1, syn_order), Profiles(ctx, a2, syn_order)
    q1, q2 = _stack(ctx, sides, a1), _stack(ctx, sides, a2)
    success = np.zeros(q1.n, dtype=bool)
    link = np.full(q1.n, -1, dtype=np.int64)
    plans = mixed_plan(q1.mixed, h1.rows.mixed), mixed_plan(q2.mixed, h2.rows.mixed)
    job = _LinkJob(q1, q2, h1, h2, plans, k, syn_order)
    step = _gower._step(max(h1.rows.n, h2.rows.n))
    chunks = [(s, min(s + step, q1.n)) for s in range(0, q1.n, step)]
    # the chunks of targets are independent: side by side on the executor (each with one BLAS thread)
    for (s, _), (hit, rows) in zip(chunks, ctx.executor.map(_link_rows, job, chunks), strict=True):
        success[s + hit] = True
        link[s + hit] = rows
    return success, link


@dataclass(frozen=True)
class _LinkJob:
    """What every chunk of targets reads (put once in the executor's store)."""

    q1: _gower.Rows
    q2: _gower.Rows
    h1: Profiles
    h2: Profiles
    plans: tuple[MixedPlan, MixedPlan]
    k: int
    syn_order: np.ndarray


def _link_rows(job: _LinkJob, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """One chunk of targets: the chunk-local targets whose halves' tie sets meet, and a linking row of
    each. Buffers of this chunk only (a thread's own scratch would outlive the call)."""
    s, e = rows
    blocks = []
    for q, h, plan in ((job.q1, job.h1, job.plans[0]), (job.q2, job.h2, job.plans[1])):
        b = np.empty((e - s, h.rows.n), dtype=np.float32)
        mixed_block(q.mixed, h.rows.mixed, s, e, plan, b)
        blocks.append(b)
    return _link_chunk(blocks[0], blocks[1], job.h1, job.h2, job.k, job.syn_order)


def _link_chunk(
    d1: np.ndarray, d2: np.ndarray, h1: Profiles, h2: Profiles, k: int, syn_order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One chunk of targets: the targets where both halves' tie sets meet, and a linking row of each."""
    p1, p2 = h1.within(d1, k), h2.within(d2, k)
    # rows each side's tie sets cover (estimated with the mean profile size: it only picks the side)
    n1 = np.count_nonzero(p1) * h1.size.mean()
    n2 = np.count_nonzero(p2) * h2.size.mean()
    small, other, other_mask = (h1, h2, p2) if n1 <= n2 else (h2, h1, p1)
    t, prof = _pairs(p1 if small is h1 else p2)
    t_rows, syn_rows = small.expand(t, prof)
    ok = other_mask[t_rows, other.of_row[syn_rows]]
    # the last linking row of each target wins, as an assignment through repeated indices leaves it
    hit, last = np.unique(t_rows[ok][::-1], return_index=True)
    return hit, syn_order[syn_rows[ok][::-1][last]]


@metric(
    "linkability",
    family="attacks",
    source="seed 004 §4.3.2, §5.3.2",
    risk=Risk.LINKABILITY,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.1, "severity": "ERROR"},  # 0.00 vs 0.19
    expect=Expect(copy_min=0.9, indep_max=0.1),
)
def linkability(
    ctx: EvaluationContext, *, n_attacks: int = 2000, k: int = 1, columns: list[list[str]] | None = None
) -> Measurement:
    """Linkability (seed 004 §4.3.2): the two halves of a record share a synthetic Gower neighbour.

    ``columns`` = [A1, A2] (disjoint); default: the columns in name order dealt alternately. Neighbour
    sets are tie-inclusive (every synthetic record at the k-th smallest distance, within 1e-5). Targets:
    n_attacks training and n_attacks control records (fewer only when a side has fewer). e_naive: two
    random k-sets of synthetic records intersect (exact probability). value = E of eq. 8 (e* = 1).
    """
    a1, a2 = (list(columns[0]), list(columns[1])) if columns else default_split(ctx)
    names = set(ctx.schema.names)
    unknown = [c for c in (*a1, *a2) if c not in names]
    if unknown:
        raise NotApplicable(f"unknown column(s) in the split: {', '.join(unknown)}")
    if set(a1) & set(a2):
        raise NotApplicable("the two column sets overlap")
    if not a1 or not a2:
        raise NotApplicable("needs at least two columns (one per half)")
    if k < 1:
        raise NotApplicable("k must be at least 1")
    n = n_targets(ctx, n_attacks)
    sizes = {
        "real": ctx.n("real"),
        "synthetic": ctx.n("synthetic"),
        "holdout": ctx.n("holdout"),
        "queries": n,
    }
    if n == 0:
        raise NotApplicable("no target record", sizes=sizes)
    order = hash_order(ctx, "synthetic")
    t_idx = sample_targets(ctx, "real", n, "linkability")
    c_idx = sample_targets(ctx, "holdout", n, "linkability")
    ok, link = _linked(ctx, [("real", t_idx), ("holdout", c_idx)], a1, a2, order, k)
    ok_t, ok_c, link_t = ok[:n], ok[n:], link[:n]
    n_syn = ctx.n("synthetic")
    kk = min(k, n_syn)
    # two independent uniform k-subsets of the synthetic rows intersect with probability 1 − C(N−k, k)/C(N, k)
    p_naive = (
        1.0
        - float(
            np.exp(
                np.sum(
                    np.log(np.arange(n_syn - 2 * kk + 1, n_syn - kk + 1, dtype=np.float64))
                    - np.log(np.arange(n_syn - kk + 1, n_syn + 1, dtype=np.float64))
                )
            )
        )
        if 2 * kk <= n_syn
        else 1.0
    )
    side = Side(rate(int(ok_t.sum()), n), rate(int(ok_c.sum()), n), naive=rate(p_naive * n, n))
    E, ci = side.risk()
    details: dict[str, Any] = {
        **side.details(),
        "n_attacks": n,
        "k": k,
        "columns": [sorted(a1), sorted(a2)],
        "tie_tolerance": _gower.TIE,
    }
    return Measurement(
        value=E,
        ci=ci,
        raw=side.train.value,
        baseline=side.control.value,
        sizes=sizes,
        details=details,
        flagged=np.unique(link_t[ok_t]),
        evidence=(side.evidence(),),  # type: ignore[arg-type]
    )
