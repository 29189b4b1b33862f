"""Distance-based metrics of seed 000 §2.2: nearest-neighbour distances between real and synthetic rows.

Every distance comes from the evaluation context's shared, cached neighbour queries. Spaces: d_E is
the one-hot + min-max ``euclidean`` space; Φ^k (eq. 25) is the ``projected`` space (PCA keeping 95 %
of the real table's variance). Choices the seed leaves open are in docs/metrics.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engine.context import EvaluationContext
from ..errors import MetricError
from ..results import Measurement, Risk
from .registration import Expect, metric
from .stats import clustered_se, reported_order_statistic


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


@metric(
    "dcr",
    family="distance",
    source="seed 000 §2.2.8",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 0.9, "severity": "WARN"},
    expect=Expect(copy_min=0.999, indep_max=0.95),
    queries=(("projected", "real", "synthetic", 1),),  # declared: paired with nndr's mirror (pairs.py)
)  # 1/(1+DCR) cannot reach 0 (docs/metrics.md)
def dcr(ctx: EvaluationContext) -> Measurement:
    """Distance to Closest Record: mean distance from each real row to its nearest synthetic row in Φ^k.

    raw = DCR (seed 000 §2.2.8), in units of the projected one-hot + min-max space (a numerical
    column spans 1, two different categories are √2 apart). value = DCR' = 1 − σ(log DCR) = 1/(1 + DCR).
    """
    nn = ctx.neighbors("projected", "real", "synthetic", 1)
    d = nn.dist[:, 0]
    raw = float(d.mean())
    return Measurement(
        value=1.0 / (1.0 + raw),
        raw=raw,
        details={
            "median": reported_order_statistic(d),
            "projection_k": ctx.projection.k,
            "explained_variance": ctx.projection.explained,
        },
    )


@metric(
    "mdcr",
    family="distance",
    source="seed 000 §2.2.9",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 0.5, "severity": "WARN"},
    expect=Expect(copy_min=0.999, indep_max=0.2),
    queries=(("euclidean", "real", "synthetic", 1), ("euclidean", "real", "real", 1)),
)
def mdcr(ctx: EvaluationContext) -> Measurement:
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
    details = {
        "median_real_to_synthetic": reported_order_statistic(rs),
        "median_real_to_real": reported_order_statistic(rr),
        "mdcr_sigmoid": None if raw is None else 1.0 / (1.0 + math.exp(-min(raw, 700.0))),
    }
    return Measurement(value=value, raw=raw if raw is None or math.isfinite(raw) else None, details=details)


@metric(
    "nndr",
    family="distance",
    source="seed 000 §2.2.7",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 0.9, "severity": "WARN"},
    expect=Expect(copy_min=0.999, indep_max=0.95),
    queries=(("projected", "synthetic", "real", 2),),  # declared: paired with dcr's mirror (pairs.py)
    monotone=False,  # an independent row scores d1/d2 ≈ 0.6–0.9, a near copy ≈ 0, a copy 1
)
def nndr(ctx: EvaluationContext) -> Measurement:
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
    return Measurement(
        value=_clip(raw),
        raw=raw,
        flagged=np.nonzero(copies)[0],
        details={
            "exact_copies": int(copies.sum()),
            "median_ratio": reported_order_statistic(score),
            "projection_k": ctx.projection.k,
        },
    )


@metric(
    "authenticity",
    family="distance",
    source="seed 000 §2.2.4",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 0.7, "severity": "WARN"},
    expect=Expect(copy_min=0.999, indep_max=0.65),
    queries=(("euclidean", "real", "real", 1), ("euclidean", "real", "synthetic", 1)),
)  # ≈ 0.5 for a same-size sample
def authenticity(ctx: EvaluationContext) -> Measurement:
    """Authenticity: share of real rows whose nearest real neighbour is closer than their nearest synthetic.

    raw = Auth (eq. 19, grows with privacy); value = Auth' = 1 − Auth (seed 000 §2.2.4). Strict
    inequality as in eq. 19: a real row with both a real duplicate and a synthetic copy is not authentic.
    """
    rr = ctx.neighbors("euclidean", "real", "real", 1).dist[:, 0]
    rs = ctx.neighbors("euclidean", "real", "synthetic", 1).dist[:, 0]
    auth = float(np.mean(rr < rs))
    return Measurement(
        value=_clip(1.0 - auth), raw=auth, details={"authentic_real_rows": int(np.sum(rr < rs))}
    )


@metric(
    "nnaa",
    family="distance",
    source="seed 000 §2.2.10",
    risk=Risk.MEMBERSHIP,
    default={"threshold": 0.3, "severity": "WARN"},
    expect=Expect(copy_min=0.999, indep_max=0.2),
    queries=(
        ("euclidean", "real", "synthetic", 1),
        ("euclidean", "real", "real", 1),
        ("euclidean", "synthetic", "real", 1),
        ("euclidean", "synthetic", "synthetic", 1),
    ),
)
def nnaa(ctx: EvaluationContext) -> Measurement:
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
    se = clustered_se((rs > rr, ctx.row_hashes("real")), (sr > ss, ctx.row_hashes("synthetic")))
    return Measurement(
        value=_clip(1.0 - raw),
        raw=raw,
        details={"term_real": term_real, "term_synthetic": term_syn, "nnaa_prime": 1.0 - raw, "se": se},
    )


# ------------------------------------------------------------- CVP, DVP, NSND: the extreme pair


@dataclass(frozen=True)
class Extremes:
    """d_min and d_max over every (real, synthetic) pair in d_E (seed 000 eqs. 14–15)."""

    d_min: float
    d_max: float

    def normalise(self, d: np.ndarray) -> np.ndarray:
        """(d − d_min) / (d_max − d_min); 0 everywhere when every pair is equally far (no spread)."""
        span = self.d_max - self.d_min
        if span <= 0.0:
            return np.zeros_like(d)
        return np.clip((d - self.d_min) / span, 0.0, 1.0)


def extremes(ctx: EvaluationContext) -> Extremes:
    """Exact d_min and d_max over all |Y|·|Z| pairs, never the full matrix.

    The real→synthetic query reads each real row's farthest synthetic row off the same float32 blocks
    as its nearest ones (``EvaluationContext.neighbors``: FARTHEST); the farthest of those is recomputed
    exactly in float64 (the float32 choice is exact up to rounding, ~1e-6 relative). d_min is the
    smallest exact nearest-neighbour distance of that query.
    """
    nn = ctx.neighbors("euclidean", "real", "synthetic", 1)
    if nn.farthest is None:  # a context that does not read it (never the evaluation's own)
        raise MetricError("the real→synthetic query did not read the farthest pair")
    score, idx = nn.farthest
    i = int(np.argmax(score))
    q, r = ctx.euclidean("real")[i].astype(np.float64), ctx.euclidean("synthetic")[idx[i]].astype(np.float64)
    diff = q - r
    return Extremes(d_min=float(nn.dist[:, 0].min()), d_max=float(np.sqrt(diff @ diff)))


def _normalised_nn(ctx: EvaluationContext) -> tuple[np.ndarray, Extremes]:
    """C_CVP of eq. 13 (each real row's nearest synthetic row in d_E), normalised by eqs. 14–15."""
    d = ctx.neighbors("euclidean", "real", "synthetic", 1).dist[:, 0]
    ext = extremes(ctx)
    return ext.normalise(d), ext


def _extreme_details(norm: np.ndarray, ext: Extremes) -> dict:
    return {
        "d_min": ext.d_min,
        "d_max": ext.d_max,
        "median_normalised_distance": reported_order_statistic(norm),
        "max_normalised_distance": float(norm.max()),
    }


@metric(
    "cvp",
    family="distance",
    source="seed 000 §2.2.1",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 0.8, "severity": "WARN"},  # 0.77 vs 0.67
    expect=Expect(copy_min=0.999, indep_max=0.15),
    queries=(("euclidean", "real", "synthetic", 1),),
)
def cvp(ctx: EvaluationContext, *, threshold: float = 0.2) -> Measurement:
    """Close Value Probability: share of real rows whose nearest synthetic row is close (eq. 16).

    Seed 000 §2.2.1: the nearest synthetic row of each real row in d_E (all attributes), its distance
    normalised by the extreme pair over all real × synthetic pairs (eqs. 14–15), counted when ≤ 0.2.
    raw = value = eq. 16. It saturates on real data: d_max is set by the two most different records,
    so almost every nearest distance normalises below 0.2 (docs/metrics.md, measured figures).
    """
    norm, ext = _normalised_nn(ctx)
    close = norm <= threshold
    raw = float(close.mean())
    return Measurement(
        value=_clip(raw),
        raw=raw,
        details={**_extreme_details(norm, ext), "close_real_rows": int(close.sum())},
    )


@metric(
    "dvp",
    family="distance",
    source="seed 000 §2.2.2",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 1.0, "severity": "WARN"},  # saturates at 1: never fails
    expect=Expect(copy_min=0.999, indep_max=1.0),
    queries=(("euclidean", "real", "synthetic", 1),),
)  # saturates at 1 on real data (d_max normalisation)
def dvp(ctx: EvaluationContext, *, threshold: float = 0.8) -> Measurement:
    """Distant Value Probability: share of real rows whose nearest synthetic row is far (eq. 17).

    Seed 000 §2.2.2: C_DVP = C_CVP, distances normalised by eqs. 14–15; raw = DVP (eq. 17, the share
    with normalised distance ≥ 0.8, grows with privacy); value = DVP' = 1 − DVP. Saturates at 1 on real
    data like CVP (docs/metrics.md).
    """
    norm, ext = _normalised_nn(ctx)
    far = norm >= threshold
    raw = float(far.mean())
    return Measurement(
        value=_clip(1.0 - raw),
        raw=raw,
        details={**_extreme_details(norm, ext), "far_real_rows": int(far.sum())},
    )


@metric(
    "nsnd",
    family="distance",
    source="seed 000 §2.2.6",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 0.95, "severity": "WARN"},  # 0.91 vs 0.87
    expect=Expect(copy_min=0.999, indep_max=0.75),
    queries=(("euclidean", "real", "synthetic", 1),),
)  # normalised NN distance ≈ 0.36 → value ≈ 0.64
def nsnd(ctx: EvaluationContext) -> Measurement:
    """Nearest Synthetic Neighbour Distance: mean normalised real→synthetic nearest distance (eq. 24).

    Seed 000 §2.2.6: raw = NSND = mean over real rows of (d − d_min)/(d_max − d_min) with C_NSND = C_CVP;
    it grows with privacy, so value = 1 − NSND. Like CVP it sits near 1 on real data (docs/metrics.md).
    """
    norm, ext = _normalised_nn(ctx)
    raw = float(norm.mean())
    return Measurement(value=_clip(1.0 - raw), raw=raw, details=_extreme_details(norm, ext))
