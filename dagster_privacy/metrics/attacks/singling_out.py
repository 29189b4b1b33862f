"""Singling-out attacks (seed 004 §4.3.1, §6.2.2): predicates from the synthetic table that isolate
one record.

A predicate is a conjunction of conditions, each ``code_j ∈ [lo, hi]`` (possibly negated) on the integer
codes the context shares across tables (numerical codes are dense value ranks, so ``x ≤ v`` is an
interval of codes; a missing number has code 0); ``_predicates.py`` holds them and counts, vectorised,
how many records of a table satisfy each. This module draws the attacks' predicates and scores them.

Training and control are compared on equal footing with an exact size correction (docs/metrics.md,
"Attacks"): each side's success is the probability that the predicate isolates exactly one record of a
uniformly random subset of m = min(|train|, |control|) records of that side (hypergeometric), so on a
clean release both sides have the same expectation whatever their sizes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import gammaln

from ...engine.context import EvaluationContext
from ...errors import NotApplicable
from ...results import Measurement, Risk
from ..registration import Expect, metric
from ._predicates import BIG, Predicates, Target
from .rates import Side, family_confidence, rate, worst_of
from .targets import canonical_columns, salt

# ------------------------------------------------------------------------------ the attack pieces


@dataclass
class Prepared:
    """Synthetic distinct rows in a canonical order, and the tables the predicates are checked on."""

    cols: list[int]  # schema indices in column-name order (random column choices draw from this)
    numerical: np.ndarray  # (d,) bool per schema column
    syn: Target  # distinct synthetic rows, sorted (canonical, order-free)
    syn_rows: np.ndarray  # for each distinct row, the synthetic rows equal to it (inverse map)
    syn_values: np.ndarray  # (n_distinct, d) float values of numerical columns (nan elsewhere)
    train: Target
    control: Target


def _prepare(ctx: EvaluationContext) -> Prepared:
    names = ctx.schema.names
    every = [names.index(c) for c in canonical_columns(ctx)]
    # a high-cardinality column would single out on its own (nearly every value rare): predicates use
    # the other columns (docs/metrics.md, "Table model")
    cols = [j for j in every if not ctx.encoder.high_cardinality(names[j])]
    numerical = np.array([ctx.schema.kind(c) == "numerical" for c in names])
    codes = ctx.codes("synthetic")
    # distinct rows (an attacker reads a duplicated synthetic record as one profile), sorted
    # lexicographically in column-name order: the canonical, row-order-free list records are drawn from
    uniq, first, inverse = np.unique(codes[:, every], axis=0, return_index=True, return_inverse=True)
    back = np.empty(len(every), dtype=np.int64)
    back[every] = np.arange(len(every))
    syn_u = uniq[:, back]
    values = np.full(syn_u.shape, np.nan)
    table = ctx.table("synthetic")
    for j, name in enumerate(names):
        if numerical[j]:
            values[:, j] = table.get_column(name).to_numpy().astype(np.float64)[first]
    seed = int(salt(ctx, "singling_out:bits")) % (2**32)
    skip = frozenset(every) - frozenset(cols)
    return Prepared(
        cols,
        numerical,
        Target(syn_u, np.random.default_rng([seed, 0]), skip=skip),
        inverse.ravel(),
        values,
        Target(ctx.codes("real"), np.random.default_rng([seed, 1]), skip=skip),
        Target(ctx.codes("holdout"), np.random.default_rng([seed, 2]), skip=skip),
    )


def _univariate_candidates(pr: Prepared) -> Predicates:
    """Rare-attribute predicates (anonymeter's univariate attack): per column, a missing value that
    occurs once, ``x ≤ min`` and ``x ≥ max`` of numerical columns, and every value that occurs once."""
    out: list[np.ndarray] = []
    syn = pr.syn
    for j in pr.cols:
        values, counts = np.unique(syn.codes[:, j], return_counts=True)
        rare = values[counts == 1].astype(np.int64)
        if pr.numerical[j]:
            present = values[values > 0]
            if present.size:
                out.append(np.array([[j, 1, int(present.min())], [j, int(present.max()), int(BIG)]]))
        out.append(np.column_stack([np.full(rare.size, j, np.int64), rare, rare]))
    arr = np.concatenate(out).astype(np.int64) if out else np.zeros((0, 3), np.int64)
    if arr.shape[0] == 0:
        return _empty(1)
    arr = np.unique(arr, axis=0)  # de-duplicated, canonical order
    P = arr.shape[0]
    return Predicates(
        arr[:, :1], arr[:, 1:2].astype(np.int32), arr[:, 2:3].astype(np.int32), np.zeros((P, 1), dtype=bool)
    )


def _empty(k: int) -> Predicates:
    return Predicates(
        np.zeros((0, k), np.int64),
        np.zeros((0, k), np.int32),
        np.zeros((0, k), np.int32),
        np.zeros((0, k), bool),
    )


def _from_records(pr: Prepared, rows: np.ndarray, chosen: np.ndarray, medians: np.ndarray) -> Predicates:
    """anonymeter's multivariate predicate of a record on chosen columns: ``==`` for a categorical value,
    ``≥ v`` for a number above the synthetic median and ``≤ v`` otherwise, ``is missing`` for a null."""
    codes = pr.syn.codes[rows[:, None], chosen]
    num = pr.numerical[chosen]
    vals = pr.syn_values[rows[:, None], chosen]
    up = num & (codes > 0) & (vals > medians[chosen])
    down = num & (codes > 0) & ~up
    lo = np.where(down, 1, codes).astype(np.int32)
    hi = np.where(up, BIG, codes).astype(np.int32)
    return Predicates(chosen.astype(np.int64), lo, hi, np.zeros(chosen.shape, dtype=bool))


def _choose_columns(pr: Prepared, rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """k distinct columns per predicate, uniformly, drawn in column-name order."""
    pick = np.argsort(rng.random((n, len(pr.cols))), axis=1)[:, :k]
    return np.asarray(pr.cols, dtype=np.int64)[pick]


def _multivariate_candidates(
    pr: Prepared, rng: np.random.Generator, n_attacks: int, k: int, max_attempts: int
) -> tuple[Predicates, np.ndarray, int]:
    """Distinct predicates that single out one distinct synthetic row: (predicates, source row, attempts)."""
    medians = np.full(pr.syn.d, np.inf)  # anonymeter: > median → "≥ v", else "≤ v"
    for j in np.nonzero(pr.numerical)[0]:
        v = pr.syn_values[:, j]
        if (~np.isnan(v)).any():
            medians[j] = np.nanmedian(v)
    seen: set[bytes] = set()
    kept: list[Predicates] = []
    sources: list[np.ndarray] = []
    found, attempts = 0, 0
    while found < n_attacks and attempts < max_attempts:
        batch = int(min(max_attempts - attempts, max(2000, 4 * (n_attacks - found))))
        rows = rng.integers(0, pr.syn.n, batch)
        chosen = _choose_columns(pr, rng, batch, k)
        cand = _from_records(pr, rows, chosen, medians)
        attempts += batch
        hit = np.nonzero(pr.syn.singles_out(cand))[0]
        if hit.size == 0:
            continue
        keys = cand.take(hit).keys()
        take = []
        for i, key in zip(hit, keys, strict=True):
            if key not in seen:
                seen.add(key)
                take.append(i)
                if found + len(take) >= n_attacks:
                    break
        if take:
            t = np.array(take)
            kept.append(cand.take(t))
            sources.append(rows[t])
            found += len(take)
    if not kept:
        return _empty(k), np.zeros(0, np.int64), attempts
    return (
        Predicates(*(np.concatenate([getattr(p, f) for p in kept]) for f in ("col", "lo", "hi", "neg"))),
        np.concatenate(sources),
        attempts,
    )


def _random_predicates(pr: Prepared, rng: np.random.Generator, n: int, k: int) -> Predicates:
    """The naive attacker (anonymeter's baseline): a random synthetic value per column and a random
    operator (``==``/``!=`` for categories; ``==, !=, >, <, ≥, ≤`` for numbers), not informed by rarity."""
    chosen = _choose_columns(pr, rng, n, k)
    codes = pr.syn.codes[rng.integers(0, pr.syn.n, (n, k)), chosen]  # a value seen in the synthetic table
    num = pr.numerical[chosen]
    op = np.where(num, rng.integers(0, 6, (n, k)), rng.integers(0, 2, (n, k)))
    present = codes > 0
    lo = codes.copy()
    hi = codes.copy()
    # 2: >, 3: <, 4: ≥, 5: ≤ on codes of non-missing numbers (code 0 = missing)
    lo = np.where(op == 2, codes + 1, np.where(op == 3, 1, np.where(op == 5, 1, lo)))
    hi = np.where(op == 2, BIG, np.where(op == 3, codes - 1, np.where(op == 4, BIG, hi)))
    lo = np.where((op >= 2) & ~present, 1, lo)  # anonymeter: a comparison with a missing value
    hi = np.where((op >= 2) & ~present, BIG, hi)  # becomes "is not missing"
    return Predicates(chosen, lo.astype(np.int32), hi.astype(np.int32), op == 1)


def _equal_footing(counts: np.ndarray, n_side: int, m: int) -> np.ndarray:
    """P(the predicate isolates exactly one record of a random m-subset of the side's n_side records)."""
    if m >= n_side:
        return (counts == 1).astype(np.float64)
    c = counts.astype(np.float64)
    ok = (c >= 1) & (n_side - c >= m - 1)
    cc = np.where(ok, c, 1.0)
    # c · C(N − c, m − 1) / C(N, m), in logs
    log_h = (
        np.log(cc)
        + gammaln(n_side - cc + 1)
        - gammaln(m)
        - gammaln(n_side - cc - m + 2)
        - gammaln(n_side + 1)
        + gammaln(m + 1)
        + gammaln(n_side - m + 1)
    )
    return np.where(ok, np.exp(log_h), 0.0)


def _score(
    pr: Prepared, preds: Predicates, naive: Predicates, confidence: float, trials: int = 0
) -> dict[str, Any]:
    """Success on training, control and (naive predicates) training records; E of eq. 8. ``trials``:
    the attempts the gate counts (docs/metrics.md): the attacker tries ``trials`` records and a try
    for which no isolating predicate exists fails on both sides, so a release that offers few
    predicates is judged on what it offers, not on the success rate of a handful of predicates."""
    n = preds.n
    c_train, _ = pr.train.count_exact(preds)
    c_control, _ = pr.control.count_exact(preds)
    c_naive, _ = pr.train.count_exact(naive)
    n_t, n_c = pr.train.n, pr.control.n
    m = min(n_t, n_c)
    h_t = _equal_footing(c_train, n_t, m)
    h_c = _equal_footing(c_control, n_c, m)
    e_star = m / n_t
    side = Side(
        rate(float(h_t.sum()), n, confidence),
        rate(float(h_c.sum()), n, confidence),
        e_star=e_star,
        train_successes=float(h_t.sum()),
        control_successes=float(h_c.sum()),
    )
    E, ci = side.risk()
    plain_t, plain_c = int((c_train == 1).sum()), int((c_control == 1).sum())
    return {
        # plain success on the whole tables (what anonymeter reports as attack / control rate)
        "e_train": _rd(rate(plain_t, n, confidence)),
        "e_control": _rd(rate(plain_c, n, confidence)),
        "e_naive": _rd(rate(int((c_naive == 1).sum()), max(1, naive.n), confidence)),
        # the size-corrected rates E is computed from
        "equal_footing": {
            "m": m,
            "e_train": _rd(side.train, float(h_t.sum())),
            "e_control": _rd(side.control, float(h_c.sum())),
            "e_star": e_star,
        },
        "risk": E,
        "risk_ci": list(ci),
        "n_attacks": n,
        "evidence": {**side.evidence(), "n_t": max(n, trials), "n_c": max(n, trials)},  # type: ignore[dict-item]
        "_success": c_train == 1,
    }


def _rd(r, successes: float | None = None) -> dict[str, Any]:
    from .rates import rate_dict

    return dict(rate_dict(r, successes))


def _check(ctx: EvaluationContext) -> str | None:
    if ctx.n("holdout") < 1 or ctx.n("real") < 1:
        return "needs training and control records"
    return None


@dataclass(frozen=True)
class _SizeJob:
    """What the attack of every predicate size reads (put once in the executor's store)."""

    pr: Prepared
    n_attacks: int
    max_attempts: int
    base: int  # the metric's seed; size k draws from default_rng([base, k])
    conf: float


def _attack_size(job: _SizeJob, k: int) -> tuple[int, dict[str, Any], np.ndarray | None]:
    """The multivariate attack with predicates of k conditions: (k, its details, flagged source rows)."""
    rng = np.random.default_rng([job.base, k])
    preds, src, attempts = _multivariate_candidates(job.pr, rng, job.n_attacks, k, job.max_attempts)
    info: dict[str, Any] = {"n_requested": job.n_attacks, "n_found": preds.n, "attempts": attempts}
    if preds.n == 0:
        return k, {**info, "risk": None, "reason": "no predicate isolates a synthetic record"}, None
    naive = _random_predicates(job.pr, rng, preds.n, k)
    s = _score(job.pr, preds, naive, job.conf, min(job.n_attacks, job.pr.syn.n))
    rows = src[s.pop("_success")]
    return k, {**s, **info}, rows


# ------------------------------------------------------------------------------------ the metrics


@metric(
    "singling_out_univariate",
    family="attacks",
    source="seed 004 §4.3.1, §5.3.2, §6.2.2",
    risk=Risk.SINGLING_OUT,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.1, "severity": "ERROR"},  # 0.00 vs 0.24
    spaces=False,  # codes and tables only
    expect=Expect(copy_min=0.9, indep_max=0.15),
)
def singling_out_univariate(ctx: EvaluationContext, *, n_attacks: int = 2000) -> Measurement:
    """Univariate singling out (seed 004 §4.3.1, §6.2.2): rare single-attribute predicates, E of eq. 8.

    Predicates come from the synthetic table's distinct rows (a value occurring once, a missing value
    occurring once, ``≤ min`` / ``≥ max`` of a numerical column), each kept if it isolates exactly one
    synthetic record; n_attacks of them are drawn at random (fewer only when fewer exist: reported).
    Success = the predicate isolates exactly one record. E (eq. 8) compares training and control on
    equal footing (exact hypergeometric size correction, e* = m/|train|); details carry the plain rates.
    """
    why = _check(ctx)
    if why:
        raise NotApplicable(why)
    pr = ctx.shared("singling-out predicate tables", lambda: _prepare(ctx))
    cand = _univariate_candidates(pr)
    counts, _ = pr.syn.count_exact(cand)
    cand = cand.take(np.nonzero(counts == 1)[0])
    available = cand.n
    rng = np.random.default_rng([int(salt(ctx, "singling_out_univariate")) % (2**32), 0])
    sizes = {"real": ctx.n("real"), "synthetic": ctx.n("synthetic"), "holdout": ctx.n("holdout")}
    if available == 0:
        raise NotApplicable(
            "nothing to attack: no single-attribute predicate isolates a synthetic record",
            sizes=sizes,
            details={"n_requested": n_attacks, "n_available": 0},
            status="nothing_to_attack",
        )
    preds = cand.take(np.sort(rng.permutation(available)[: max(1, min(n_attacks, available))]))
    naive = _random_predicates(pr, rng, preds.n, 1)
    s = _score(pr, preds, naive, family_confidence(1), min(n_attacks, pr.syn.n))
    success = s.pop("_success")
    _, src = pr.syn.count_exact(preds.take(np.nonzero(success)[0]))
    flagged = np.nonzero(np.isin(pr.syn_rows, src))[0]
    return Measurement(
        value=s["risk"],
        ci=(s["risk_ci"][0], s["risk_ci"][1]),
        raw=s["e_train"]["rate"],
        baseline=s["e_control"]["rate"],
        flagged=flagged,
        sizes={**sizes, "queries": preds.n},
        details={**s, "n_requested": n_attacks, "n_available": available},
        evidence=(s["evidence"],),
    )


@metric(
    "singling_out_multivariate",
    family="attacks",
    source="seed 004 §4.3.1, §5.3.2, §6.2.2",
    risk=Risk.SINGLING_OUT,
    needs=("real", "synthetic", "holdout"),
    default={"threshold": 0.15, "severity": "ERROR"},  # excess, worst of ≤ 10 sizes; Adult f = 0.2: +0.23
    spaces=False,  # codes and tables only
    expect=Expect(copy_min=0.9, indep_max=0.15),
)
def singling_out_multivariate(
    ctx: EvaluationContext,
    *,
    n_attacks: int = 2000,
    min_cols: int = 3,
    max_cols: int = 12,
    max_attempts: int = 500_000,
) -> Measurement:
    """Multivariate singling out (seed 004 §4.3.1, §6.2.2): conjunctions over 3–12 attributes, worst E.

    For each predicate size k in [min_cols, max_cols] (capped at the number of columns): predicates
    built from random distinct synthetic records on k random columns (anonymeter's construction),
    kept when they isolate exactly one synthetic record and are new, until n_attacks (or max_attempts
    candidates: the number found is reported). E per k as in the univariate attack; value = the
    largest E over k (the seed reports the highest risk), its interval Bonferroni-adjusted over the sizes.
    """
    why = _check(ctx)
    if why:
        raise NotApplicable(why)
    pr = ctx.shared("singling-out predicate tables", lambda: _prepare(ctx))
    d = len(pr.cols)
    ks = list(range(max(1, min_cols), min(max_cols, d) + 1))
    sizes = {"real": ctx.n("real"), "synthetic": ctx.n("synthetic"), "holdout": ctx.n("holdout")}
    if not ks:
        raise NotApplicable(f"needs at least {min_cols} columns (has {d})", sizes=sizes)
    for target in (pr.syn, pr.train, pr.control):
        target.build_index()  # once here, not by each size's job at the same time
    base = int(salt(ctx, "singling_out_multivariate")) % (2**32)
    job = _SizeJob(pr, n_attacks, max_attempts, base, family_confidence(len(ks)))
    parts: dict[str, dict[str, Any]] = {}
    flagged_rows: list[np.ndarray] = []
    # the sizes are independent (each draws from its own generator): side by side on the executor
    for k, part, rows in ctx.executor.map(_attack_size, job, ks):
        parts[str(k)] = part
        if rows is not None:
            flagged_rows.append(rows)
    flagged = np.nonzero(np.isin(pr.syn_rows, np.concatenate(flagged_rows)))[0] if flagged_rows else None
    result = worst_of(
        parts,
        label="n_cols",
        sizes=sizes,
        flagged=flagged,
        extra={"n_requested": n_attacks},
        empty_status="nothing_to_attack",  # no size found a predicate: nothing in the release to single out
    )
    w = parts[str(result.details["n_cols"])]
    return dataclasses.replace(
        result,
        sizes={**sizes, "queries": int(w["n_attacks"])},
        details={**result.details, "equal_footing": w["equal_footing"], "n_found": w["n_found"]},
    )
