"""Holdout-referenced indicators (seed 004 §4.2, seed 001, seed 003): a distance means nothing on its own.

Every figure here compares what the synthetic table does to the training (``real``) records with what
it does to records the generator never saw (``holdout``), or, for seed 003, to a second half of the
training table. Normalised as in seed 004 §6.2.1: ``value`` = 0 when no training record leaked, 1 when
all did; under the leaky risk model (seed 004 §5.1.1) ``ims`` and ``dcr_percentile`` track the leaked
fraction f.

Space: the euclidean one-hot + min-max space fitted on the real table (seed 004 §6.2.1 uses the
Euclidean distance in an embedding of all columns). Every neighbour query is the context's shared,
cached one, except the R1/R2 sub-queries of ``proximity_ratio_score``, which no table role covers.
Exact copies are decided on row hashes (the context pins a hashed copy at distance exactly 0).
Every open choice (quantiles, ties, signs, directions) is written in docs/metrics.md,
"Holdout-referenced indicators".
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..engine.context import EvaluationContext, Space
from ..engine.neighbors import Neighbors
from ..errors import MetricError
from ..results import Measurement, Risk
from .registration import Expect, metric
from .stats import bootstrap_ci, reported_order_statistic

#: knn_percentile's default k. The other indicators ask the context for this many neighbours too, so
#: the four holdout queries (syn→real, holdout→real, real→syn, holdout→syn) are each computed once for
#: the whole family whichever of its metrics runs first (the context caches the largest k asked).
SHARED_K = 5
#: distances are compared after rounding to this many decimals: a float64 distance recomputed from a
#: different column order can move in its last bit, and a tie must not depend on that.
DECIMALS = 9
RESAMPLES = 200
SPACE: Space = "euclidean"


def _clip(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def _round(d: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(d, dtype=np.float64), DECIMALS)


#: the shared euclidean queries of the indicators, declared to the registry so the evaluation computes
#: each once at SHARED_K even when another family asks for k = 1 first
QUERIES = tuple(
    (SPACE, q, r, SHARED_K)
    for q, r in (("synthetic", "real"), ("holdout", "real"), ("real", "synthetic"), ("holdout", "synthetic"))
)


def _nn(ctx: EvaluationContext, query: str, reference: str, k: int) -> Neighbors:
    """A shared query of the euclidean space, asked with at least SHARED_K neighbours (see above)."""
    return ctx.neighbors(SPACE, query, reference, max(k, SHARED_K)).first(k)


def _ci(
    value: float, stat: Callable[..., float], sizes: tuple[int, ...], rng: np.random.Generator
) -> tuple[float, float]:
    """95 % percentile bootstrap, every query side resampled on its own; widened to contain `value`.

    ``stat`` receives one array of resampled row indices per side (in the order of ``sizes``).
    """
    first, *others = sizes

    def one(idx: np.ndarray) -> float:
        return stat(idx, *(rng.integers(0, n, n) for n in others))

    lo, hi = bootstrap_ci(one, first, rng, resamples=RESAMPLES)
    return _clip(min(lo, value)), _clip(max(hi, value))


def _control_trials(
    p_train: float, d_train: np.ndarray, d_hold: np.ndarray, alpha: float, rng: np.random.Generator
) -> float:
    """The holdout side's effective trials for the decision rule. Its quantile's noise reaches the
    training share multiplied by the training-to-holdout density ratio at the quantile (noisy copies
    just below it; ties), which a binomial α·n_h of n_h misses (a second reading of the rule: passes up
    to 0.22 where 0.05 was meant). A bootstrap of the unclipped p_train − α measures the whole variance;
    the part the training rows' binomial does not explain is the control's, never less than binomial."""
    n_t, n_h = d_train.size, d_hold.size
    diffs = np.empty(RESAMPLES)
    for b in range(RESAMPLES):
        q, t = _tail(d_hold[rng.integers(0, n_h, n_h)], alpha)
        diffs[b] = _share(d_train[rng.integers(0, n_t, n_t)], q, t)
    var_c = max(float(np.var(diffs, ddof=1)) - p_train * (1 - p_train) / n_t, alpha * (1 - alpha) / n_h)
    return alpha * (1 - alpha) / var_c


# ------------------------------------------------------------------------- quantile with exact ties


def _tail(reference: np.ndarray, alpha: float) -> tuple[float, float]:
    """The α-quantile q of `reference` (inverted CDF) and the tie weight t at q.

    A row counts as below the quantile with weight 1 if d < q and t if d == q, where
    t = (α − P(d < q)) / P(d = q) makes the reference's own share exactly α. With continuous
    distances this is the plain share d < q; with the discrete distances of categorical data it
    keeps the no-leak level at α instead of anywhere between P(d < q) and P(d ≤ q).
    """
    s = np.sort(reference)
    n = s.size
    q = float(s[max(0, math.ceil(alpha * n) - 1)])
    below = int(np.searchsorted(s, q, side="left"))
    equal = int(np.searchsorted(s, q, side="right")) - below
    t = (alpha * n - below) / equal if equal else 0.0
    return q, float(min(1.0, max(0.0, t)))


def _share(d: np.ndarray, q: float, t: float) -> float:
    return float(np.mean(d < q) + t * np.mean(d == q)) if d.size else 0.0


def _percentile_value(train: np.ndarray, hold: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(value, p_train, q): share of training records below the holdout's α-quantile, normalised."""
    q, t = _tail(hold, alpha)
    p = _share(train, q, t)
    return _clip((p - alpha) / (1.0 - alpha)), p, q


# ------------------------------------------------------------------------------ seed 004 §4.2.1


@metric(
    "ims",
    family="holdout",
    source="seed 004 §4.2.1",
    risk=Risk.REIDENTIFICATION,
    needs=("real", "synthetic", "holdout"),
    # excess share; a 5 % copy leak: +0.05 (docs). Informs: exposed_records counts the people (issue 45)
    default={"threshold": 0.02, "severity": "WARN"},
    expect=Expect(copy_min=0.999, indep_max=0.02),
)
def ims(ctx: EvaluationContext) -> Measurement:
    """Identical match share against a holdout (seed 004 §4.2.1), normalised per training record.

    raw = IMS(D, D̂) = |D ∩ D̂| / |D̂|, the formula's reading: synthetic rows identical (row hash) to a
    training row, over |D̂|. The text's reading (a proportion of the real rows) is m_train = share of
    training rows with an identical synthetic row; m_hold = the same share for holdout rows (natural
    duplicates) is the baseline. value = clip((m_train − m_hold) / (1 − m_hold), 0, 1) (seed 004 eq. 8
    with e* = 1). CI: bootstrap over training and holdout rows. flagged = the synthetic copies.
    """
    syn_copy = ctx.copies_of("synthetic", "real")
    train_hit = ctx.copies_of("real", "synthetic").astype(np.float64)
    hold_hit = ctx.copies_of("holdout", "synthetic").astype(np.float64)

    def normalised(m_t: float, m_h: float) -> float:
        return 1.0 if m_h >= 1.0 else _clip((m_t - m_h) / (1.0 - m_h))

    m_t, m_h = float(train_hit.mean()), float(hold_hit.mean())
    value = normalised(m_t, m_h)
    ci = _ci(
        value,
        lambda i, j: normalised(float(train_hit[i].mean()), float(hold_hit[j].mean())),
        (train_hit.size, hold_hit.size),
        ctx.rng("ims"),
    )
    raw = float(syn_copy.mean())
    return Measurement(
        value=value,
        raw=raw,
        baseline=m_h,
        ci=ci,
        evidence=(
            {"k_t": train_hit.sum(), "n_t": train_hit.size, "k_c": hold_hit.sum(), "n_c": hold_hit.size},
        ),
        flagged=np.nonzero(syn_copy)[0],
        sizes=ctx.sizes_with(int(train_hit.size + hold_hit.size)),
        details={
            "ims_formula_synthetic_share": raw,
            "ims_text_real_share": m_t,
            "m_train": m_t,
            "m_holdout": m_h,
            "synthetic_copies": int(syn_copy.sum()),
            "training_rows_copied": int(train_hit.sum()),
            "holdout_rows_matched": int(hold_hit.sum()),
        },
    )


# ----------------------------------------------------------------------- seed 004 §4.2.2, §4.2.3


def _percentile_metric(ctx: EvaluationContext, mid: str, k: int, alpha: float) -> Measurement:
    """Eq. 4 (raw) and the per-training-record normalisation (value) with mean k-NN distances."""
    if not 0.0 < alpha < 1.0:
        raise MetricError("alpha must be in (0, 1)")
    if k < 1:
        raise MetricError("k must be at least 1")
    # raw, eq. 4: SRD = synthetic→train, RRD = holdout→train (D1 = holdout, D2 = train)
    srd_nn = _nn(ctx, "synthetic", "real", k)
    srd = _round(srd_nn.dist.mean(axis=1))
    rrd = _round(_nn(ctx, "holdout", "real", k).dist.mean(axis=1))
    rrd_alpha = float(np.quantile(rrd, alpha, method="inverted_cdf"))
    below = srd < rrd_alpha  # strict, as eq. 4
    raw = float(below.sum()) / (alpha * rrd.size)
    # value: per training record, train→synthetic against holdout→synthetic
    d_train = _round(_nn(ctx, "real", "synthetic", k).dist.mean(axis=1))
    d_hold = _round(_nn(ctx, "holdout", "synthetic", k).dist.mean(axis=1))
    value, p_train, q = _percentile_value(d_train, d_hold, alpha)
    n_c = min(float(d_hold.size), _control_trials(p_train, d_train, d_hold, alpha, ctx.rng(f"{mid}:control")))
    ci = _ci(
        value,
        lambda i, j: _percentile_value(d_train[i], d_hold[j], alpha)[0],
        (d_train.size, d_hold.size),
        ctx.rng(mid),
    )
    return Measurement(
        value=value,
        raw=raw,
        baseline=alpha,
        ci=ci,
        # the gate: training rows below the holdout's α-quantile against the α of holdout rows below it,
        # the control's trials from a bootstrap of the whole variance (_control_trials)
        evidence=(
            {
                "k_t": p_train * d_train.size,
                "n_t": d_train.size,
                "k_c": alpha * n_c,
                "n_c": max(1, int(n_c)),
            },
        ),
        flagged=np.nonzero(below)[0],
        sizes=ctx.sizes_with(int(d_train.size + d_hold.size + srd.size + rrd.size)),
        details={
            "alpha": alpha,
            "k": int(srd_nn.k),
            "space": SPACE,
            "p_train": p_train,
            "p_holdout": alpha,
            "quantile_holdout_to_synthetic": q,
            "rrd_alpha_holdout_to_train": rrd_alpha,
            "synthetic_below_rrd_alpha": int(below.sum()),
            "synthetic_share_below_rrd_alpha": float(below.mean()) / alpha,
        },
    )


@metric(
    "dcr_percentile",
    family="holdout",
    source="seed 004 §4.2.2",
    risk=Risk.REIDENTIFICATION,
    needs=("real", "synthetic", "holdout"),
    queries=QUERIES,
    default={"threshold": 0.02, "severity": "ERROR"},  # excess share; a 5 % copy leak: +0.05 (docs)
    expect=Expect(copy_min=0.999, indep_max=0.1),
)
def dcr_percentile(ctx: EvaluationContext, *, alpha: float = 0.02) -> Measurement:
    """DCR percentile against a holdout (seed 004 §4.2.2, eqs. 2–4, α = 2 %), normalised per record.

    raw = eq. 4: |{d̂ : SRD(d̂) < RRD_α}| / (α·|D1|), SRD synthetic→train (eq. 2), RRD holdout→train
    (eq. 3, D1 = holdout, D2 = train). value (seed 004 §6.2.1: 0 = nothing leaked, 1 = all leaked):
    p_train = share of training rows whose nearest synthetic row is closer than the α-quantile of the
    holdout rows' nearest-synthetic distance (exact ties weighted, docs/metrics.md);
    value = clip((p_train − α)/(1 − α), 0, 1); baseline = α. flagged = eq. 4's synthetic rows.
    """
    return _percentile_metric(ctx, "dcr_percentile", 1, alpha)


@metric(
    "knn_percentile",
    family="holdout",
    source="seed 004 §4.2.3",
    risk=Risk.REIDENTIFICATION,
    needs=("real", "synthetic", "holdout"),
    queries=QUERIES,
    default={"threshold": 0.02, "severity": "WARN", "optional": True},  # k = 5 reads low
    expect=Expect(copy_min=0.01, indep_max=0.1),
)  # k = 5 means dilute a copy (docs/metrics.md)
def knn_percentile(ctx: EvaluationContext, *, k: int = 5, alpha: float = 0.02) -> Measurement:
    """k-NN percentile against a holdout (seed 004 §4.2.3): dcr_percentile with mean k-NN distances.

    The neighbourhoods are taken in the training table D (the seed writes D̂ where D is meant). k = 1
    is dcr_percentile; seed 004 (§7.1, Appendix B) finds k = 1 the most stringent, so this indicator
    reads lower than dcr_percentile for the same release.
    """
    return _percentile_metric(ctx, "knn_percentile", int(k), alpha)


# -------------------------------------------------------------------------------------- seed 001


def _band(diff_percent: float) -> str:
    """Seed 001's table: D < 10 High, D > 10 Medium, D > 50 Low (D = 10 read as Medium)."""
    if diff_percent < 10.0:
        return "High"
    return "Medium" if diff_percent <= 50.0 else "Low"


def _diff_metric(
    ctx: EvaluationContext, mid: str, syn: np.ndarray, hold: np.ndarray, flagged: np.ndarray, what: str
) -> Measurement:
    """Diff % = (mean holdout figure − mean synthetic figure) / mean holdout figure × 100 (seed 001)."""
    mean_h, mean_s = float(hold.mean()), float(syn.mean())
    if mean_h <= 0.0:
        raise MetricError(
            f"every holdout row has an identical training row: the holdout {what} is 0 "
            "and Diff % is undefined"
        )
    diff = (mean_h - mean_s) / mean_h * 100.0
    value = _clip(diff / 100.0)

    def stat(i: np.ndarray, j: np.ndarray) -> float:
        h = float(hold[j].mean())
        return 1.0 if h <= 0.0 else _clip((h - float(syn[i].mean())) / h)

    ci = _ci(value, stat, (syn.size, hold.size), ctx.rng(mid))
    return Measurement(
        value=value,
        raw=diff,
        baseline=mean_h,
        ci=ci,
        flagged=flagged,
        sizes=ctx.sizes_with(int(syn.size + hold.size)),
        details={
            "diff_percent": diff,
            "privacy_score": 100.0 - diff,
            "band": _band(diff),
            f"mean_{what}_synthetic_to_train": mean_s,
            f"mean_{what}_holdout_to_train": mean_h,
            f"median_{what}_synthetic_to_train": reported_order_statistic(syn),
            f"median_{what}_holdout_to_train": reported_order_statistic(hold),
            "statistic": "mean",
            "space": SPACE,
            "exact_copies": int(flagged.size),
        },
    )


@metric(
    "dcr_holdout_diff",
    family="holdout",
    source="seed 001 (DCR test)",
    risk=Risk.REIDENTIFICATION,
    needs=("real", "synthetic", "holdout"),
    queries=QUERIES,
    default={"threshold": 0.1, "severity": "WARN", "optional": True},  # seed 001: D < 10 High
    expect=Expect(copy_min=0.999, indep_max=0.1),
)
def dcr_holdout_diff(ctx: EvaluationContext) -> Measurement:
    """Diff DCR % of seed 001: mean DCR synthetic→train against mean DCR holdout→train.

    raw = Diff % = (mean holdout DCR − mean synthetic DCR) / mean holdout DCR × 100, positive when
    synthetic rows sit closer to training rows than unseen rows do; privacy score = 100 − Diff % and
    the band (High / Medium / Low) in details; value = clip(Diff % / 100, 0, 1); baseline = mean
    holdout DCR. flagged = synthetic rows at DCR = 0 (exact copies by hash), which seed 001 advises
    removing before sharing.
    """
    copies = ctx.copies_of("synthetic", "real")
    syn = _round(_nn(ctx, "synthetic", "real", 1).dist[:, 0])
    hold = _round(_nn(ctx, "holdout", "real", 1).dist[:, 0])
    return _diff_metric(ctx, "dcr_holdout_diff", syn, hold, np.nonzero(copies)[0], "dcr")


def _nndr(ctx: EvaluationContext, query: str) -> np.ndarray:
    """d1/d2 of each query row against the training table; 0 for an exact copy (decided on hashes)."""
    nn = _nn(ctx, query, "real", 2)
    if nn.k < 2:
        raise MetricError("NNDR needs at least 2 training rows")
    d1, d2 = nn.dist[:, 0], nn.dist[:, 1]
    copy = ctx.copies_of(query, "real")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(copy | (d2 <= 0.0), 0.0, d1 / np.where(d2 > 0.0, d2, 1.0))
    return _round(ratio)


@metric(
    "nndr_holdout_diff",
    family="holdout",
    source="seed 001 (NNDR test)",
    risk=Risk.REIDENTIFICATION,
    needs=("real", "synthetic", "holdout"),
    queries=QUERIES,
    default={"threshold": 0.1, "severity": "WARN", "optional": True},
    expect=Expect(copy_min=0.999, indep_max=0.1),
)
def nndr_holdout_diff(ctx: EvaluationContext) -> Measurement:
    """Diff NNDR % of seed 001: mean NNDR synthetic→train against mean NNDR holdout→train.

    NNDR = d(nearest training row) / d(second nearest training row), seed 001's definition and its
    "Test" reading (its "Implementation" list divides by a synthetic→synthetic distance instead, which
    has no holdout counterpart); an exact copy (hash) scores 0. Diff %, privacy score, band and value
    as dcr_holdout_diff; flagged = the synthetic copies (NNDR = 0).
    """
    syn = _nndr(ctx, "synthetic")
    hold = _nndr(ctx, "holdout")
    flagged = np.nonzero(ctx.copies_of("synthetic", "real"))[0]
    return _diff_metric(ctx, "nndr_holdout_diff", syn, hold, flagged, "nndr")
