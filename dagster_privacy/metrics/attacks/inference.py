"""Attribute-inference attacks (seed 004 §4.3.3, §6.2.3, §5.3.2): distance-based, ML-based, GTCAP.

The attacker knows every column of a target record but one secret and uses the synthetic table to
guess it; each attack runs on the same number of training and control targets and reports E (eq. 8)
per secret column; ``value`` = the worst column, its interval Bonferroni-adjusted over the columns.
Secret columns: the threat model's sensitive columns, else every column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...engine.compiled import kernel
from ...engine.context import EvaluationContext
from ...errors import MetricError, NotApplicable
from ...results import Measurement, Risk
from ..registration import Expect, metric
from . import _gower
from ._models import Features, _fit_predict, _lgbm_params, _secret_job, _values
from .rates import Side, family_confidence, rate, worst_of
from .targets import canonical_columns, hash_order, n_targets, sample_targets


def _secrets(ctx: EvaluationContext) -> list[str]:
    return canonical_columns(ctx, ctx.sensitive_columns)


def _targets(ctx: EvaluationContext, n: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    return sample_targets(ctx, "real", n, name), sample_targets(ctx, "holdout", n, name)


def _sizes(ctx: EvaluationContext, n: int) -> dict[str, int]:
    return {"real": ctx.n("real"), "synthetic": ctx.n("synthetic"), "holdout": ctx.n("holdout"), "queries": n}


def _correct(
    ctx: EvaluationContext,
    column: str,
    guess_role: str,
    guess_idx: np.ndarray,
    role: str,
    idx: np.ndarray,
    tolerance: float,
) -> np.ndarray:
    """Whether each guess (a synthetic record's value) equals the target's secret: categories and, with
    tolerance 0, numbers by their shared integer codes; numbers otherwise within tolerance × real range
    (missing equals missing only)."""
    j = ctx.schema.names.index(column)
    g_code = ctx.codes(guess_role)[guess_idx, j]
    t_code = ctx.codes(role)[idx, j]
    if ctx.schema.kind(column) != "numerical" or tolerance <= 0:
        return g_code == t_code
    g = _values(ctx, guess_role, column)[guess_idx]
    t = _values(ctx, role, column)[idx]
    both_missing = np.isnan(g) & np.isnan(t)
    with np.errstate(invalid="ignore"):
        close = np.abs(g - t) <= tolerance * ctx.encoder.num_range[column] * (1 + 1e-12)
    return both_missing | close


def _naive_rate(ctx: EvaluationContext, column: str, idx: np.ndarray, tolerance: float) -> float:
    """Expected accuracy of guessing a uniformly random synthetic record's value (exact, no draw)."""
    j = ctx.schema.names.index(column)
    syn_codes = ctx.codes("synthetic")[:, j]
    t_codes = ctx.codes("real")[idx, j]
    n_syn = syn_codes.size
    if ctx.schema.kind(column) != "numerical" or tolerance <= 0:
        counts = np.bincount(syn_codes, minlength=int(max(syn_codes.max(), t_codes.max())) + 1)
        return float(counts[t_codes].sum() / n_syn / max(1, t_codes.size))
    s = np.sort(_values(ctx, "synthetic", column))
    s_present = s[~np.isnan(s)]
    t = _values(ctx, "real", column)[idx]
    tol = tolerance * ctx.encoder.num_range[column] * (1 + 1e-12)
    hits = np.searchsorted(s_present, t + tol, side="right") - np.searchsorted(
        s_present, t - tol, side="left"
    )
    hits = np.where(np.isnan(t), n_syn - s_present.size, hits)
    return float(hits.sum() / n_syn / max(1, t.size))


# --------------------------------------------------------------------------------- distance-based


@metric(
    "inference_distance",
    family="attacks",
    source="seed 004 §4.3.3, §5.3.2, §6.2.3",
    risk=Risk.INFERENCE,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.15, "severity": "ERROR"},  # excess; Adult f = 0.2: +0.16 (docs)
    expect=Expect(copy_min=0.9, indep_max=0.2),
)
def inference_distance(
    ctx: EvaluationContext, *, n_attacks: int = 2000, tolerance: float = 0.05
) -> Measurement:
    """Distance-based attribute inference (seed 004 §4.3.3): the nearest synthetic record's secret.

    For each secret column, the guess is the secret of the nearest synthetic record on all other
    columns (Gower; among equal distances the record first in row-hash order). Correct: equal category;
    a number within ``tolerance`` × the real column's range (0 = exact). e_naive = a random synthetic
    record's value. value = the worst column's E (eq. 8), interval simultaneous (Bonferroni) over columns.
    """
    secrets = _secrets(ctx)
    n = n_targets(ctx, n_attacks)
    if n == 0 or len(ctx.schema.names) < 2:
        raise NotApplicable("needs at least two columns and one target")
    t_idx, c_idx = _targets(ctx, n, "inference_distance")
    order = hash_order(ctx, "synthetic")
    cols = canonical_columns(ctx)
    q = _gower.rows(ctx, "real", t_idx, cols)
    qc = _gower.rows(ctx, "holdout", c_idx, cols)
    r = _gower.rows(ctx, "synthetic", order, cols)
    both = _gower.Rows(
        np.concatenate([q.num, qc.num]), np.concatenate([q.cat, qc.cat]), q.num_cols, q.cat_cols
    )
    nearest = order[_gower.leave_one_out_nearest(both, r, secrets, ctx.executor)]
    conf = family_confidence(len(secrets))
    parts: dict[str, dict[str, Any]] = {}
    flagged: list[np.ndarray] = []
    for i, s in enumerate(secrets):
        ok_t = _correct(ctx, s, "synthetic", nearest[:n, i], "real", t_idx, tolerance)
        ok_c = _correct(ctx, s, "synthetic", nearest[n:, i], "holdout", c_idx, tolerance)
        side = Side(
            rate(int(ok_t.sum()), n, conf),
            rate(int(ok_c.sum()), n, conf),
            naive=rate(_naive_rate(ctx, s, t_idx, tolerance) * n, n, conf),
        )
        parts[s] = {**side.details(), "n_attacks": n}
        flagged.append(nearest[:n, i][ok_t])
    return worst_of(
        parts,
        label="column",
        sizes=_sizes(ctx, n),
        extra={"tolerance": tolerance},
        flagged=np.unique(np.concatenate(flagged)) if flagged else None,
    )


# --------------------------------------------------------------------------------------- ML-based


@metric(
    "inference_ml",
    family="attacks",
    source="seed 004 §4.3.3, §5.3.2, §6.2.3 eq. 10",
    risk=Risk.INFERENCE,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.3, "severity": "WARN"},  # 0.16 vs 0.18: a model generalises
    expect=Expect(copy_min=0.5, indep_max=0.25),
)
def inference_ml(
    ctx: EvaluationContext, *, n_attacks: int = 2000, n_estimators: int = 30, min_class_rows: int = 50
) -> Measurement:
    """ML-based attribute inference (seed 004 §4.3.3, §6.2.3): LightGBM trained on the synthetic table.

    Per secret column: a LightGBM classifier (categorical/binary secret; score = accuracy) or regressor
    (numerical; score = NRMSE = 1 − RMSE/range, eq. 10, range of the real column) on all other columns,
    fitted on every synthetic row, scored on training and control targets. Classes with fewer than
    ``min_class_rows`` synthetic rows share one "rare" label, which never counts as a correct guess (a
    multi-class model grows one tree per class per round, and so few rows hardly get a leaf of their
    own). e_naive: the synthetic majority class / mean. value = the worst column's E (eq. 8, e* = 1),
    Bonferroni over columns.
    """
    secrets = _secrets(ctx)
    n = n_targets(ctx, n_attacks)
    if n == 0 or len(ctx.schema.names) < 2:
        raise NotApplicable("needs at least two columns and one target")
    t_idx, c_idx = _targets(ctx, n, "inference_ml")
    order = hash_order(ctx, "synthetic")  # fit on rows in content order: the model ignores row order
    cols = canonical_columns(ctx)
    conf = family_confidence(len(secrets))
    parts: dict[str, dict[str, Any]] = {s: {} for s in secrets}  # in secret order, filled below
    # the models are independent: fitted side by side on the executor; each takes its columns of the
    # shared features when it runs
    features = Features.of(ctx, cols, order, (t_idx, c_idx), _lgbm_params(ctx.seed, n_estimators))
    fits = []
    for s in secrets:
        prepared = _secret_job(ctx, s, cols, order, (t_idx, c_idx), n, conf, min_class_rows)
        if isinstance(prepared, dict):  # decided without a model
            parts[s] = prepared
        else:
            fits.append((s, *prepared))
    predictions = ctx.executor.map(_fit_predict, features, [job for _, job, _ in fits])
    for (s, _, finish), (p_t, p_c) in zip(fits, predictions, strict=True):
        parts[s] = finish(p_t, p_c)
    return worst_of(
        parts, label="column", sizes=_sizes(ctx, n), extra={"model": "lightgbm", "n_estimators": n_estimators}
    )


# ------------------------------------------------------------------------------------------ GTCAP


def _joint_key(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One int64 per row of two code matrices (same columns), equal exactly when the rows are equal:
    the codes in mixed radix when the widths allow (codes are small non-negative integers), else the
    rank of the row among the distinct rows of both."""
    if a.shape[1] == 0:
        return np.zeros(a.shape[0], np.int64), np.zeros(b.shape[0], np.int64)
    widths = np.maximum(a.max(axis=0, initial=0), b.max(axis=0, initial=0)).astype(np.int64) + 1
    if float(np.prod(widths.astype(np.float64))) < 2.0**62:
        stride = np.concatenate([[1], np.cumprod(widths[:-1])]).astype(np.int64)
        return a.astype(np.int64) @ stride, b.astype(np.int64) @ stride
    joint = np.unique(np.concatenate([a, b]), axis=0, return_inverse=True)[1].ravel()
    return joint[: a.shape[0]], joint[a.shape[0] :]


@dataclass(frozen=True)
class _TcapJob:
    """What every secret's TCAP reads (put once in the executor's store): per role, the integer codes
    and the min-max scaled numbers (0 in categorical columns) of its records, columns in ``cols`` order."""

    sides: dict[str, tuple[np.ndarray, np.ndarray]]  # synthetic (every row), real / holdout (targets)
    numerical: np.ndarray  # (d,) bool per column
    cols: list[str]
    radius: float
    n: int  # targets per side
    conf: float


def _tcap_secret(job: _TcapJob, target: int) -> dict[str, Any]:
    """One secret column (position ``target``): its E in the three variants, reduced in the job (only
    these few figures come back, not per-row counts)."""
    own, own_d = _tcap(job, "synthetic", target)["synthetic"]
    homogeneous = own == own_d  # WEAP = 1: every synthetic record of d̂'s class shares its t
    train, control = _tcap(job, "real", target), _tcap(job, "holdout", target)
    views = {
        "homogeneous": (train["synthetic"], control["synthetic"], homogeneous),
        "synthetic": (train["synthetic"], control["synthetic"], None),
        "target": (train["target"], control["target"], None),
    }
    column = job.cols[target]
    return {
        "views": {k: _tcap_side(column, *v, job.n, job.conf) for k, v in views.items()},
        "homogeneous_synthetic": int(homogeneous.sum()),
    }


@kernel
def _match_pairs(  # noqa: PLR0913
    lo, hi, d_order, num_syn, num_d, reach2, t_syn, t_d, t_num, reach, numer, denom, numer_t, denom_t
):  # noqa: ANN001
    """Every (synthetic row i, record d_order[p]) pair with p in [lo[i], hi[i]) (equal categorical
    keys) whose numerical quasi-identifiers lie within the sphere (squared distance ≤ ``reach2``, summed
    column by column in float64), counted on both sides: denominators, and numerators where the
    target values match too (within ``reach`` if numerical, else equal codes). No pair is ever stored."""
    for i in range(lo.shape[0]):
        for p in range(lo[i], hi[i]):
            j = d_order[p]
            dist2 = 0.0
            for c in range(num_syn.shape[0]):
                diff = num_syn[c, i] - num_d[c, j]
                dist2 += diff * diff
            if num_syn.shape[0] and not dist2 <= reach2:
                continue
            same = abs(t_syn[i] - t_d[j]) <= reach if t_num else t_syn[i] == t_d[j]
            denom[i] += 1
            denom_t[j] += 1
            if same:
                numer[i] += 1
                numer_t[j] += 1


def _tcap(job: _TcapJob, role: str, target: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """TCAP (eq. 7) in both orientations from one pass over the matching (synthetic, target) pairs:
    ``"synthetic"`` = (Σ over synthetic records with a match in D of TCAP(D, d̂), how many match);
    ``"target"`` = (Σ over targets d with a match in D̂ of TCAP(D̂, d), how many match). Matching is
    symmetric (equal codes, a sphere, the target within the radius), so the pairs are the same."""
    s_codes, s_num = job.sides["synthetic"]
    d_codes, d_num = job.sides[role]
    radius = job.radius
    aux = np.arange(job.numerical.size) != target
    cat = np.nonzero(aux & ~job.numerical)[0]
    num = np.nonzero(aux & job.numerical)[0]
    n_syn, n_d = s_codes.shape[0], d_codes.shape[0]
    # join on the categorical quasi-identifiers (exact codes): sort D by its categorical key
    k_syn, k_d = _joint_key(s_codes[:, cat], d_codes[:, cat])
    d_order = np.argsort(k_d, kind="stable")
    k_sorted = k_d[d_order]
    lo = np.searchsorted(k_sorted, k_syn, side="left")
    hi = np.searchsorted(k_sorted, k_syn, side="right")
    # the numerical quasi-identifiers, one row per column, for the pair kernel
    num_syn, num_d = np.ascontiguousarray(s_num[:, num].T), np.ascontiguousarray(d_num[:, num].T)
    t_num = bool(job.numerical[target])
    t_syn, t_d = (s_num[:, target], d_num[:, target]) if t_num else (s_codes[:, target], d_codes[:, target])
    counts = [np.zeros(n, dtype=np.int64) for n in (n_syn, n_syn, n_d, n_d)]
    reach = radius * (1 + 1e-9)  # the slack of a radius compared in floating point
    reach2 = radius * radius * (1 + 1e-9)  # the same for the sphere's squared distances
    _match_pairs(lo, hi, d_order, num_syn, num_d, reach2, t_syn, t_d, t_num, reach, *counts)
    numer, denom, numer_t, denom_t = counts
    return {"synthetic": (numer, denom), "target": (numer_t, denom_t)}


_GTCAP_VARIANTS = ("homogeneous", "synthetic", "target")


@metric(
    "gtcap",
    family="attacks",
    source="seed 004 §4.3.3 eq. 7, §5.3.2, §6.2.3",
    risk=Risk.INFERENCE,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.3, "severity": "WARN"},  # 0.15 vs 0.26
    expect=Expect(copy_min=0.8, indep_max=0.3),
)
def gtcap(
    ctx: EvaluationContext, *, n_attacks: int = 2000, radius: float = 0.1, variant: str = "homogeneous"
) -> Measurement:
    """GTCAP (seed 004 §4.3.3 eq. 7, §6.2.3): correct attribution probability of synthetic
    equivalence classes.

    Targets t = the sensitive columns (every column when none is given); quasi-identifiers A = all other
    columns. For each synthetic record d̂, TCAP = share of the target records D matching d̂ on A that
    also match it on t (eq. 7); categories match when equal, numbers (min-max scaled with the real
    range) when the numerical part of A lies in a Euclidean sphere of ``radius`` around d̂ and a
    numerical t within ``radius``. ``variant`` = which records the mean runs over:
    ``"homogeneous"`` (default, §4.3.3: the attacker uses the synthetic classes with l-diversity 1, the
    synthetic records whose every match on A in the synthetic table shares their t), ``"synthetic"``
    (every synthetic record) or ``"target"`` (eq. 7 turned round: per target d over the synthetic
    records, as TCAP is usually computed). e = that mean over the records with at least one match (the
    others are counted in details), D = n_attacks training or control records. value = worst E; the
    three variants' E per column are in details.
    """
    if variant not in _GTCAP_VARIANTS:
        raise MetricError(f"gtcap: variant must be one of {', '.join(_GTCAP_VARIANTS)}")
    secrets = _secrets(ctx)
    n = n_targets(ctx, n_attacks)
    if n == 0 or len(ctx.schema.names) < 2:
        raise NotApplicable("needs at least two columns and one target")
    t_idx, c_idx = _targets(ctx, n, "gtcap")
    cols = canonical_columns(ctx)
    numerical = np.array([ctx.schema.kind(c) == "numerical" for c in cols])
    at = [ctx.schema.names.index(c) for c in cols]

    def side(role: str, idx: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        table = ctx.table(role)
        rows = slice(None) if idx is None else idx
        scaled = np.column_stack(
            [
                ctx.encoder.scaled(table, c)[rows] if k else np.zeros(table.height)[rows]
                for c, k in zip(cols, numerical, strict=True)
            ]
        )
        return ctx.codes(role)[rows][:, at], scaled

    job = _TcapJob(
        {
            "synthetic": side("synthetic", None),
            "real": side("real", t_idx),
            "holdout": side("holdout", c_idx),
        },
        numerical,
        cols,
        radius,
        n,
        family_confidence(len(secrets)),
    )
    parts: dict[str, dict[str, Any]] = {}
    # the secrets are independent: side by side on the executor
    for s, got in zip(
        secrets, ctx.executor.map(_tcap_secret, job, [cols.index(s) for s in secrets]), strict=True
    ):
        out = got["views"]
        parts[s] = out[variant]
        parts[s]["variants"] = {k: v.get("risk") for k, v in out.items()}
        parts[s]["homogeneous_synthetic"] = got["homogeneous_synthetic"]
    return worst_of(parts, label="column", sizes=_sizes(ctx, n), extra={"radius": radius, "variant": variant})


def _tcap_side(
    column: str,
    train: tuple[np.ndarray, np.ndarray],
    control: tuple[np.ndarray, np.ndarray],
    keep: np.ndarray | None,
    n: int,
    conf: float,
) -> dict[str, Any]:
    """One secret column's E from the per-record TCAP counts of the training and control targets."""
    sums = []
    for numer, denom in (train, control):
        has = denom > 0 if keep is None else (denom > 0) & keep
        sums.append((float((numer[has] / denom[has]).sum()), int(has.sum()), int(has.size - has.sum())))
    (sum_t, m_t, u_t), (sum_c, m_c, u_c) = sums
    info = {"matched_train": m_t, "matched_control": m_c, "unmatched_train": u_t, "unmatched_control": u_c}
    if m_t == 0 or m_c == 0:
        return {
            "risk": None,
            **info,
            "reason": f"{column}: no {'training' if m_t == 0 else 'control'} match on the quasi-identifiers",
        }
    side = Side(
        rate(sum_t, m_t, conf), rate(sum_c, m_c, conf), train_successes=sum_t, control_successes=sum_c
    )
    return {**side.details(), **info, "n_attacks": n}
