"""Distance-based metrics of seed 000 §2.2: nearest-neighbour distances between real and synthetic rows.

Every distance comes from the evaluation context's shared, cached neighbour queries. Spaces: d_E is
the one-hot + min-max ``euclidean`` space; Φ^k (eq. 25) is the ``projected`` space (PCA keeping 95 %
of the real table's variance). Choices the seed leaves open are in docs/metrics.md.
"""

from __future__ import annotations

import math

import numpy as np

from ..context import EvaluationContext
from ..registry import metric
from ..results import MetricResult


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


@metric("dcr", family="distance", source="seed 000 §2.2.8", risk="re-identification")
def dcr(ctx: EvaluationContext) -> MetricResult:
    """Distance to Closest Record: mean distance from each real row to its nearest synthetic row in Φ^k.

    raw = DCR (seed 000 §2.2.8), in units of the projected one-hot + min-max space (a numerical
    column spans 1, two different categories are √2 apart). value = DCR' = 1 − σ(log DCR) = 1/(1 + DCR).
    """
    nn = ctx.neighbors("projected", "real", "synthetic", 1)
    d = nn.dist[:, 0]
    raw = float(d.mean())
    return MetricResult(id="dcr", value=1.0 / (1.0 + raw), raw=raw,
                        details={"median": float(np.median(d)), "projection_k": ctx.projection.k,
                                 "explained_variance": ctx.projection.explained})


@metric("mdcr", family="distance", source="seed 000 §2.2.9", risk="re-identification")
def mdcr(ctx: EvaluationContext) -> MetricResult:
    """Median Distance to Closest Record: median real→synthetic over median real→real NN distance.

    raw = MDCR (seed 000 §2.2.9) in the euclidean space; the seed's MDCR' = σ(MDCR) grows with privacy
    and is kept in details. value = clip(1 − MDCR, 0, 1): 1 when synthetic rows sit on real rows,
    0 once they are as far from real rows as real rows are from each other.
    """
    rs = ctx.neighbors("euclidean", "real", "synthetic", 1).dist[:, 0]
    rr = ctx.neighbors("euclidean", "real", "real", 1).dist[:, 0]
    num, den = float(np.median(rs)), float(np.median(rr))
    if den == 0.0:
        raw = None if num == 0.0 else math.inf
        value = 1.0 if num == 0.0 else 0.0
    else:
        raw = num / den
        value = _clip(1.0 - raw)
    details = {"median_real_to_synthetic": num, "median_real_to_real": den,
               "mdcr_sigmoid": None if raw is None else 1.0 / (1.0 + math.exp(-min(raw, 700.0)))}
    return MetricResult(id="mdcr", value=value, raw=raw if raw is None or math.isfinite(raw) else None,
                        details=details)


@metric("nndr", family="distance", source="seed 000 §2.2.7", risk="re-identification")
def nndr(ctx: EvaluationContext) -> MetricResult:
    """Nearest Neighbour Distance Ratio: per synthetic row, 1 for an exact copy, else d1/d2 in Φ^k.

    raw = value = eq. 27 (seed 000 §2.2.7), the mean over synthetic rows. A copy is decided on row
    hashes (not on a float distance of 0). The formula scores a copy 1 but a near-copy close to 0,
    so it is not monotone in closeness: docs/metrics.md.
    """
    nn = ctx.neighbors("projected", "synthetic", "real", 2)
    copies = ctx.copies_of("synthetic", "real")
    d1, d2 = nn.dist[:, 0], nn.dist[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d2 > 0, d1 / d2, 1.0)
    score = np.where(copies, 1.0, ratio)
    raw = float(score.mean())
    return MetricResult(id="nndr", value=_clip(raw), raw=raw, flagged=np.nonzero(copies)[0],
                        details={"exact_copies": int(copies.sum()), "median_ratio": float(np.median(score)),
                                 "projection_k": ctx.projection.k})


@metric("authenticity", family="distance", source="seed 000 §2.2.4", risk="re-identification")
def authenticity(ctx: EvaluationContext) -> MetricResult:
    """Authenticity: share of real rows whose nearest real neighbour is closer than their nearest synthetic.

    raw = Auth (eq. 19, grows with privacy); value = Auth' = 1 − Auth (seed 000 §2.2.4). Strict
    inequality as in eq. 19: a real row with both a real duplicate and a synthetic copy is not authentic.
    """
    rr = ctx.neighbors("euclidean", "real", "real", 1).dist[:, 0]
    rs = ctx.neighbors("euclidean", "real", "synthetic", 1).dist[:, 0]
    auth = float(np.mean(rr < rs))
    return MetricResult(id="authenticity", value=_clip(1.0 - auth), raw=auth,
                        details={"authentic_real_rows": int(np.sum(rr < rs))})


@metric("nnaa", family="distance", source="seed 000 §2.2.10", risk="membership")
def nnaa(ctx: EvaluationContext) -> MetricResult:
    """Nearest Neighbour Adversarial Accuracy (seed 000 §2.2.10, eq. 30).

    raw = NNAA = P_y[d(y, z) > d(y, y')] + P_z[d(y, z) > d(z, z')], a sum of two probabilities in [0, 2];
    the seed's NNAA' = 1 − NNAA lies in [−1, 1]; value = clip(NNAA', 0, 1): 1 for copies, ≈ 0 for an
    independent sample of the same size.
    """
    rs = ctx.neighbors("euclidean", "real", "synthetic", 1).dist[:, 0]
    rr = ctx.neighbors("euclidean", "real", "real", 1).dist[:, 0]
    sr = ctx.neighbors("euclidean", "synthetic", "real", 1).dist[:, 0]
    ss = ctx.neighbors("euclidean", "synthetic", "synthetic", 1).dist[:, 0]
    term_real = float(np.mean(rs > rr))
    term_syn = float(np.mean(sr > ss))
    raw = term_real + term_syn
    return MetricResult(id="nnaa", value=_clip(1.0 - raw), raw=raw,
                        details={"term_real": term_real, "term_synthetic": term_syn, "nnaa_prime": 1.0 - raw})
