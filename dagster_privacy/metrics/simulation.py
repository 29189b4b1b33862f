"""Simulation-based metrics of seed 000 §2.1: an adversary guesses, an oracle scores the guesses."""

from __future__ import annotations

import numpy as np

from ..context import EvaluationContext
from ..registry import metric
from ..results import MetricResult


@metric("crp", family="simulation", source="seed 000 §2.1.4", risk="re-identification")
def crp(ctx: EvaluationContext) -> MetricResult:
    """Common Rows Proportion: synthetic rows identical to a real row, per real row (seed 000 §2.1.4).

    CRP = |C_CRP| / (|Y| + 1e-8) (eq. 12) with C_CRP the synthetic rows found in Y, decided on row
    hashes of all used columns. A synthetic table larger than Y can push the formula past 1:
    ``value`` = min(1, CRP), ``raw`` keeps eq. 12.
    """
    copies = ctx.copies_of("synthetic", "real")
    c = int(copies.sum())
    raw = c / (ctx.n("real") + 1e-8)
    return MetricResult(id="crp", value=min(1.0, raw), raw=raw, flagged=np.nonzero(copies)[0],
                        details={"common_rows": c})
