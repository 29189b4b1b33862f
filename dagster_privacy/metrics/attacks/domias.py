"""DOMIAS membership inference (seed 004 §4.3.1 eq. 6, §6.2.2): synthetic density over reference density.

Densities are Gaussian kernel density estimates on the Φ^k projection (PCA of the one-hot + min-max
encoding fitted on the real table, keeping 95 % of its variance): a KDE on raw one-hot columns is
singular. Each KDE uses Scott's rule with the full covariance of its own data (as scipy's
gaussian_kde): kernel covariance H = n^(−2/(k+4)) · Σ, Σ regularised by 1e-6 × its mean variance so
a degenerate table stays invertible. Log densities come from chunked squared distances in the
whitened space (never an n × m matrix in memory) and a log-sum-exp per row.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...engine.chunks import map_chunks
from ...engine.compiled import kernel
from ...engine.context import EvaluationContext
from ...errors import MetricError, NotApplicable
from ...results import Measurement, Risk
from ..registration import Expect, metric
from ..stats import z_score
from .targets import content_order, n_targets

_ROWS = 1 << 14  # rows whitened at once


class KDE:
    """Gaussian KDE with Scott's bandwidth (times ``scale``) and the data's own covariance."""

    def __init__(self, data: np.ndarray, *, scale: float = 1.0, executor: Any = None) -> None:
        self.executor = executor  # where the chunks of log_density run (chunks.map_chunks)
        x = np.asarray(data)
        n, k = x.shape
        cov = np.atleast_2d(np.cov(x, rowvar=False, dtype=np.float64)) if n > 1 else np.eye(k)
        ridge = 1e-6 * max(float(np.trace(cov)) / k, 1e-12)
        self.factor = n ** (-1.0 / (k + 4)) * scale
        h = cov * self.factor**2 + np.eye(k) * ridge
        chol = np.linalg.cholesky(h)
        self.whiten = np.linalg.inv(chol).T  # x @ whiten = L⁻¹ x
        self.data = _whitened(x, self.whiten)
        self.log_norm = -math.log(n) - 0.5 * k * math.log(2 * math.pi) - float(np.log(np.diag(chol)).sum())

    def log_density(self, points: np.ndarray) -> np.ndarray:
        q = _whitened(np.asarray(points), self.whiten)
        qn = np.einsum("ij,ij->i", q, q, dtype=np.float32)
        parts = map_chunks(_log_sum_exp, qn, q, self.data, executor=self.executor)
        return (np.concatenate(parts) if parts else np.empty(0)) + self.log_norm


def _whitened(x: np.ndarray, whiten: np.ndarray) -> np.ndarray:
    """float32(float64(x) @ whiten), a block of rows at a time: no float64 copy of x. A row's float64
    product may differ in its last bit at a block edge (as the whole product's does with the BLAS thread
    count); after the float32 rounding the rows were equal to the whole product's at 16k–256k rows."""
    out = np.empty((x.shape[0], whiten.shape[1]), dtype=np.float32)
    for a in range(0, x.shape[0], _ROWS):
        out[a : a + _ROWS] = np.asarray(x[a : a + _ROWS], dtype=np.float64) @ whiten
    return out


def _log_sum_exp(qn: np.ndarray, s: int, block: np.ndarray) -> np.ndarray:
    """log Σ exp(−d²/2) per row of a chunk, shifted by the nearest point (in place: the block is scratch)."""
    m = _exponents(block, qn[s : s + block.shape[0]])
    np.exp(block, out=block)  # numpy's vectorised exp
    return -0.5 * m.astype(np.float64) + np.log(block.sum(axis=1, dtype=np.float64))


@kernel
def _exponents(block: np.ndarray, qn: np.ndarray) -> np.ndarray:
    """In place, per row: d² = max(score + ‖q‖², 0), then (d² − min d²) · −0.5; returns the minima. Three
    vector passes over the row where numpy took five."""
    m = np.empty(block.shape[0], dtype=np.float32)
    for i in range(block.shape[0]):
        x, q = block[i], qn[i]
        for j in range(x.shape[0]):
            v = x[j] + q
            x[j] = v if v >= 0 else np.float32(0.0)
        # the minimum of non-negative floats is the minimum of their bits as integers (a vector pass,
        # where a float minimum is a scalar loop without fast-math); −0.0 reads lowest and equals 0
        bits = x.view(np.int32)
        low = bits[0]
        for j in range(1, bits.shape[0]):
            low = min(low, bits[j])
        m[i] = lowest = np.full(1, low, dtype=np.int32).view(np.float32)[0]
        for j in range(x.shape[0]):
            x[j] = (x[j] - lowest) * np.float32(-0.5)
    return m


BANDWIDTHS = tuple(2.0**-i for i in range(6))  # × Scott's factor
HELD_OUT = 4000  # rows that score each candidate bandwidth


def fitted_kde(x: np.ndarray, name: str, seed: int, executor: Any = None) -> tuple[KDE, float]:
    """A KDE whose bandwidth maximises the held-out likelihood: a seeded half of the rows fits, up to
    HELD_OUT of the other half score, over Scott's factor × BANDWIDTHS; then all rows fit at the chosen
    multiplier (the choice needs a likelihood estimate, not every row: the KDE itself keeps them all)."""
    order = np.random.default_rng([seed, len(name)]).permutation(x.shape[0])
    half = x.shape[0] // 2
    fit, held = x[order[:half]], x[order[half : half + HELD_OUT]]
    scores = [float(np.mean(KDE(fit, scale=m, executor=executor).log_density(held))) for m in BANDWIDTHS]
    best = BANDWIDTHS[int(np.argmax(scores))]
    return KDE(x, scale=best, executor=executor), best


def auc_delong(
    members: np.ndarray, others: np.ndarray, confidence: float = 0.95
) -> tuple[float, tuple[float, float]]:
    """ROC AUC (members scored higher = success; ties count half) with DeLong's interval."""
    from scipy.stats import rankdata  # here: scipy.stats costs a second to import

    n1, n0 = members.size, others.size
    ranks = rankdata(np.concatenate([members, others]))
    auc = (ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)
    v10 = (ranks[:n1] - rankdata(members)) / n0
    v01 = 1.0 - (ranks[n1:] - rankdata(others)) / n1
    var = (v10.var(ddof=1) / n1 if n1 > 1 else 0.0) + (v01.var(ddof=1) / n0 if n0 > 1 else 0.0)
    z = z_score(confidence)
    half = z * math.sqrt(max(var, 0.0))
    return float(auc), (max(0.0, auc - half), min(1.0, auc + half))


@metric(
    "domias",
    family="attacks",
    source="seed 004 §4.3.1 eq. 6, §6.2.2",
    risk=Risk.MEMBERSHIP,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.05, "severity": "WARN"},  # 0.00 vs 0.07
    expect=Expect(copy_min=0.3, indep_max=0.2),
)  # KDE on Φ^k: a copy is one kernel
def domias(ctx: EvaluationContext, *, n_attacks: int = 2000, bandwidth: str = "scott") -> Measurement:
    """DOMIAS (seed 004 §4.3.1 eq. 6, §6.2.2): score = p_synthetic(x) / p_reference(x), ROC AUC.

    The holdout is split in two seeded halves: the reference set (its KDE is p_reference) and the
    non-member targets. Members: as many training records. p_synthetic: KDE of the whole synthetic table.
    Both on Φ^k with Scott's bandwidth. raw = AUC (members vs non-members); value = max(0, 2·AUC − 1)
    with DeLong's 95 % interval mapped the same way.
    """
    n_hold = ctx.n("holdout")
    if n_hold < 4 or ctx.n("synthetic") < 2:
        raise NotApplicable("needs at least 4 holdout and 2 synthetic rows")
    order = content_order(ctx, "holdout", "domias")
    reference, pool = order[: n_hold // 2], order[n_hold // 2 :]
    n = n_targets(ctx, n_attacks, control_rows=pool.size)
    members = content_order(ctx, "real", "domias")[:n]
    others = pool[:n]
    if bandwidth not in ("held_out", "scott"):
        raise MetricError("domias: bandwidth must be held_out or scott")
    pr_syn, pr_ref = ctx.projected("synthetic"), ctx.projected("holdout")[reference]
    if bandwidth == "scott":
        p_syn, p_ref = KDE(pr_syn, executor=ctx.executor), KDE(pr_ref, executor=ctx.executor)
        h_syn = h_ref = 1.0
    else:
        (p_syn, h_syn), (p_ref, h_ref) = (
            fitted_kde(pr_syn, "synthetic", ctx.seed, ctx.executor),
            fitted_kde(pr_ref, "reference", ctx.seed, ctx.executor),
        )
    x_m = ctx.projected("real")[members]
    x_o = ctx.projected("holdout")[others]
    s_m = p_syn.log_density(x_m) - p_ref.log_density(x_m)
    s_o = p_syn.log_density(x_o) - p_ref.log_density(x_o)
    auc, (lo, hi) = auc_delong(s_m, s_o)
    details: dict[str, Any] = {
        "auc": auc,
        "auc_ci": [lo, hi],
        "n_members": int(n),
        "n_non_members": int(n),
        "n_reference": int(reference.size),
        "n_attacks": int(n),
        "estimator": "gaussian_kde (full covariance)",
        "bandwidth": bandwidth,
        "bandwidth_scale": {"synthetic": h_syn, "reference": h_ref},
        "space": "projected",
        "projection_k": ctx.projection.k,
        "bandwidth_factor": {"synthetic": p_syn.factor, "reference": p_ref.factor},
    }
    return Measurement(
        value=max(0.0, 2 * auc - 1),
        raw=auc,
        ci=(max(0.0, 2 * lo - 1), max(0.0, 2 * hi - 1)),
        sizes=ctx.sizes_with(2 * int(n)),
        details=details,
    )
