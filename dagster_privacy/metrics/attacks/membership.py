"""Membership inference as a battery of no-box attacks, scored at low false-positive rates (issue 20).

Members are training records, non-members holdout records the attacks never see; each attack scores
every target from the synthetic table and a *reference* half of the holdout only (split by content
order, as ``domias`` splits it). Four attacks, higher score = "member":

- ``dcr_diff``: distance to the reference minus distance to the synthetic table (k = 1, euclidean);
- ``density_ratio``: log r₁(reference) − log r₁(synthetic), the nearest-neighbour density ratio of
  GenLRA-style local likelihood-ratio attacks (euclidean; the k-NN density is ∝ r_k^−d, and the
  dimension's factor does not change the ranking; k = 1 keeps the scale of memorisation, where a copy
  sits at r = 0);
- ``domias``: log p_synthetic − log p_reference with Gaussian KDEs on Φ^k whose bandwidths are chosen by
  held-out likelihood (a grid of Scott's factor × 2⁰…2⁻⁵, half of each table fits, the other half scores);
- ``classifier``: LightGBM trained on synthetic (1) against reference (0) rows on Φ^k, its logit.

Per attack: ROC AUC with DeLong's interval, the TPR at FPR 0.1 % and 1 % (threshold: the non-member
score with that many non-members strictly above it; exact Clopper–Pearson intervals for TPR and FPR),
and the DP-auditing lower bound ε ≥ ln(TPR/FPR) from the Clopper–Pearson TPR lower and FPR upper
bounds at the better of the two thresholds. ``value`` = the worst attack's advantage at 1 % FPR,
(TPR − p₀)/(1 − p₀) clipped to [0, 1], with p₀ = (⌊0.01·n⌋ + 1)/(n + 1) the TPR the threshold gives when
members and non-members are exchangeable (0: members are flagged no more often than non-members); its
interval from the Clopper–Pearson TPR bounds at a Bonferroni level over the attacks. Fewer than 100
non-members: not_applicable (the 1 % operating point does not exist).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...engine.context import EvaluationContext
from ...engine.neighbors import knn_euclidean
from ...errors import NotApplicable
from ...results import Measurement, Risk
from ..registration import Expect, metric
from ..stats import bonferroni, clopper_pearson
from ._models import _lgbm_params
from .domias import auc_delong, fitted_kde
from .targets import content_order

FPRS = (0.001, 0.01)
MIN_NON_MEMBERS = 100  # below, ⌊1 % · n⌋ = 0 false positives: the 1 % operating point does not exist


def _threshold(others_desc: np.ndarray, allowed: int) -> float:
    """The score with ``allowed`` non-members strictly above it (non-member scores sorted descending):
    the one threshold rule of the operating points and the ROC."""
    return float(others_desc[allowed]) if allowed < others_desc.size else -np.inf


def at_fpr(members: np.ndarray, others: np.ndarray, fpr: float, confidence: float) -> dict[str, Any]:
    """TPR and FPR at the threshold that lets at most ⌊fpr · n⌋ non-members score strictly above it."""
    allowed = int(math.floor(fpr * others.size))
    t = _threshold(np.sort(others)[::-1], allowed)
    tp, fp = int((members > t).sum()), int((others > t).sum())
    tpr, fpr_real = tp / members.size, fp / others.size
    tpr_ci, fpr_ci = (
        clopper_pearson(tp, members.size, confidence),
        clopper_pearson(fp, others.size, confidence),
    )
    eps = math.log(tpr_ci[0] / fpr_ci[1]) if tpr_ci[0] > 0 else 0.0
    return {
        "tpr": tpr,
        "tpr_ci": list(tpr_ci),
        "fpr": fpr_real,
        "fpr_ci": list(fpr_ci),
        "true_positives": tp,
        "false_positives": fp,
        "epsilon_lb": max(0.0, eps),
        # a member's chance to score above the threshold when members and non-members are exchangeable:
        # t is the (allowed + 1)-th largest of n non-member scores (the realised FPR understates it)
        "null_tpr": (allowed + 1) / (others.size + 1),
        # the gate's counts: members above t against the exchangeable share (allowed + 1)/(n + 1), whose
        # noise (t is an order statistic of n non-member scores) is that of a rate on n + 1 trials
        "evidence": {"k_t": tp, "n_t": members.size, "k_c": allowed + 1, "n_c": others.size + 1},
        "_threshold": float(t),
    }


def roc_points(members: np.ndarray, others: np.ndarray, points: int = 40) -> dict[str, list[float]]:
    """The ROC on a log-spaced grid of false-positive rates from 1/n to 1, each point with the same
    threshold rule as ``at_fpr`` (figures only: the report draws it on log axes)."""
    desc = np.sort(others)[::-1]
    mem = np.sort(members)
    allowed = np.unique(np.floor(np.geomspace(1.0 / others.size, 1.0, points) * others.size).astype(int))
    fpr, tpr = [], []
    for a in allowed:
        t = _threshold(desc, int(a))
        fpr.append(float((others > t).mean()))
        tpr.append(float((mem.size - np.searchsorted(mem, t, side="right")) / mem.size))
    return {"fpr": fpr, "tpr": tpr}


def _classifier(ctx: EvaluationContext, syn: np.ndarray, ref: np.ndarray, targets: np.ndarray) -> np.ndarray:
    import lightgbm as lgb

    x = np.vstack([syn, ref])
    y = np.concatenate([np.ones(syn.shape[0]), np.zeros(ref.shape[0])])
    model = lgb.LGBMClassifier(**_lgbm_params(ctx.seed, 100))
    model.fit(x, y)
    return np.asarray(model.predict(targets, raw_score=True))


@metric(
    "membership_inference",
    family="attacks",
    source="seed 004 §4.3.1 eq. 6 (DOMIAS); Synth-MIA, MIDST: TPR at low FPR (docs/sources.md)",
    risk=Risk.MEMBERSHIP,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.05, "severity": "ERROR"},  # clean Adult releases: 20/20 ≤ 0.0072
    expect=Expect(copy_min=0.9, indep_max=0.1),
    queries=(("euclidean", "real", "synthetic", 5), ("euclidean", "holdout", "synthetic", 5)),
)
def membership_inference(ctx: EvaluationContext, *, n_targets: int | None = None) -> Measurement:
    """Membership inference: the worst of four no-box attacks, advantage at 1 % FPR (module docstring).

    Targets: every holdout row outside the reference half as non-members (or n_targets of them) and as
    many training rows (content order). value = (TPR − p₀)/(1 − p₀) at 1 % FPR of the strongest attack.
    """
    reference, members, others = _targets(ctx, n_targets)
    n = int(members.size)
    scores, bandwidths = _scores(ctx, reference, members, others)
    conf = bonferroni(0.95, len(scores))
    attacks = {name: _attack(name, s, conf) for name, s in scores.items()}
    worst = max(attacks, key=lambda a: (attacks[a]["advantage_at_1pct"], attacks[a]["advantage_ci"][1], a))
    w = attacks[worst]
    # flagged: the synthetic rows nearest to the members the strongest attack flags at 1 % FPR
    hit = members[scores[worst]["m"] > w.pop("_threshold")]
    evidence = tuple(a.pop("_evidence") for a in attacks.values())
    for a in attacks.values():
        a.pop("_threshold", None)
    nearest = ctx.neighbors("euclidean", "real", "synthetic", 5).idx[hit, 0] if hit.size else np.empty(0, int)
    roc = {"attack": worst, **roc_points(scores[worst]["m"], scores[worst]["o"])}
    clip = lambda v: float(min(1.0, max(0.0, v)))  # noqa: E731
    return Measurement(
        evidence=evidence,  # every attack's counts at 1 % FPR: the worst is corrected for the selection
        value=clip(w["advantage_at_1pct"]),
        raw=w["auc"],
        ci=(clip(w["advantage_ci"][0]), clip(w["advantage_ci"][1])),
        flagged=np.unique(nearest),
        sizes=ctx.sizes_with(2 * n),
        details={
            "attack": worst,
            "attacks": attacks,
            "roc": roc,
            "n_members": n,
            "n_non_members": n,
            "n_reference": int(reference.size),
            "confidence_per_attack": conf,
            "bandwidth_scale": bandwidths,
            "space": {"dcr_diff": "euclidean", "density_ratio": "euclidean", "domias": "projected",
                      "classifier": "projected"},
        },
    )  # fmt: skip


def _targets(ctx: EvaluationContext, n_targets: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the holdout's reference half, the member targets, the non-member targets), n of each."""
    n_hold = ctx.n("holdout")
    if n_hold < 4 or ctx.n("synthetic") < 6:
        raise NotApplicable("needs at least 4 holdout and 6 synthetic rows")
    order = content_order(ctx, "holdout", "membership_inference")
    reference, pool = order[: n_hold // 2], order[n_hold // 2 :]
    n = min(pool.size, ctx.n("real"), pool.size if n_targets is None else int(n_targets))
    if n < MIN_NON_MEMBERS:
        raise NotApplicable(
            f"not enough evidence: needs ≥ {2 * MIN_NON_MEMBERS} holdout rows ({MIN_NON_MEMBERS} non-member "
            f"targets to read the TPR at 1 % FPR; has {n})",
            status="inconclusive",
        )
    return reference, content_order(ctx, "real", "membership_inference")[:n], pool[:n]


def _scores(
    ctx: EvaluationContext, reference: np.ndarray, members: np.ndarray, others: np.ndarray
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, float]]:
    """Each attack's scores of the members ("m") and the non-members ("o"); the densities' bandwidths."""
    eu_real, eu_hold = ctx.euclidean("real"), ctx.euclidean("holdout")
    eu_ref = np.ascontiguousarray(eu_hold[reference])
    # distances to the synthetic table from the context's shared queries (real→syn, holdout→syn, k = 5)
    to_syn = {
        "m": ctx.neighbors("euclidean", "real", "synthetic", 5).dist[members],
        "o": ctx.neighbors("euclidean", "holdout", "synthetic", 5).dist[others],
    }
    to_ref = {
        "m": knn_euclidean(np.ascontiguousarray(eu_real[members]), eu_ref, 5, executor=ctx.executor).dist,
        # a non-member target is never in the reference half, so no self to exclude
        "o": knn_euclidean(np.ascontiguousarray(eu_hold[others]), eu_ref, 5, executor=ctx.executor).dist,
    }
    tiny = 1e-12
    scores: dict[str, dict[str, np.ndarray]] = {
        "dcr_diff": {s: to_ref[s][:, 0] - to_syn[s][:, 0] for s in ("m", "o")},
        "density_ratio": {
            s: np.log(to_ref[s][:, 0] + tiny) - np.log(to_syn[s][:, 0] + tiny) for s in ("m", "o")
        },
    }
    pr_syn, pr_ref = ctx.projected("synthetic"), ctx.projected("holdout")[reference]
    x_m, x_o = ctx.projected("real")[members], ctx.projected("holdout")[others]
    p_syn, h_syn = fitted_kde(pr_syn, "synthetic", ctx.seed, ctx.executor)
    p_ref, h_ref = fitted_kde(pr_ref, "reference", ctx.seed, ctx.executor)
    scores["domias"] = {
        "m": p_syn.log_density(x_m) - p_ref.log_density(x_m),
        "o": p_syn.log_density(x_o) - p_ref.log_density(x_o),
    }
    del p_syn, p_ref
    # the classifier (one LightGBM thread, deterministic) after the densities: beside them, its
    # training data and the densities' blocks added up to the evaluation's peak at 256k rows
    logits = _classifier(ctx, pr_syn, pr_ref, np.vstack([x_m, x_o]))
    scores["classifier"] = {"m": logits[: members.size], "o": logits[members.size :]}
    return scores, {"synthetic": h_syn, "reference": h_ref}


def _attack(name: str, s: dict[str, np.ndarray], conf: float) -> dict[str, Any]:
    """One attack's figures: AUC, advantage at 1 % FPR with its interval, TPR at each FPR, the ε lower
    bound; ``_threshold`` and ``_evidence`` are taken out by the caller."""
    if not (np.isfinite(s["m"]).all() and np.isfinite(s["o"]).all()):
        raise ValueError(f"attack {name} produced a non-finite score")
    auc, auc_ci = auc_delong(s["m"], s["o"])
    points = {f"{f:g}": at_fpr(s["m"], s["o"], f, conf) for f in FPRS}
    p1 = points["0.01"]
    p0 = p1["null_tpr"]
    return {
        "auc": auc,
        "auc_ci": list(auc_ci),
        "advantage_at_1pct": (p1["tpr"] - p0) / (1.0 - p0),
        "advantage_ci": [(b - p0) / (1.0 - p0) for b in p1["tpr_ci"]],
        "tpr_at_fpr": {
            k: {kk: v for kk, v in p.items() if not kk.startswith("_")} for k, p in points.items()
        },
        "epsilon_lb": max(p["epsilon_lb"] for p in points.values()),
        "_threshold": p1["_threshold"],
        "_evidence": p1["evidence"],
    }
