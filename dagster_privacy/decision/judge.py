"""The one decision rule: a judged copy of each metric result (docs/metrics.md, "The decision rule").

A result with evidence (success counts on training and control targets) is judged on its excess over
the control; a count of people (exposed_records) by the exact test of exposure_count.py; a result without
evidence (the seed-000 proxies) on its point figure. A gate that cannot decide at this table's size may
pass with a **weaker guarantee** the policy accepts (``accepted_excess``, ``accept_unrun``): its upper
bound, or the attacks it could not run, stated in its reason and its decision.
"""

from __future__ import annotations

import math
from typing import Any

from ..metrics.metric_policy import MetricPolicy
from ..results import MetricResult, Severity, Status, verdict_risk

#: the level of a gate's sign of risk, for the gate alone: fixed, so no policy setting loosens the
#: weaker guarantee (a lower false_alarm would widen the bound the sign is read from)
SIGN_LEVEL = 0.05


def judge(
    entry: MetricPolicy,
    result: MetricResult,
    *,
    fail_level: float = 0.05,
    pass_level: float = 0.05,
    accepted_floor: int = 50,
    accepted_excess: float = 0.0,
    accept_unrun: bool = False,
    sign_level: float = SIGN_LEVEL,
) -> MetricResult:
    """The judged copy of an unjudged result: threshold, severity and status from the policy entry.

    The one decision rule (docs/metrics.md, "The decision rule"). A result with ``evidence`` (success
    counts on training and control targets) is judged on its excess E over the control: **fail** when
    E's lower bound at ``fail_level`` clears the threshold (evidence of risk), **pass** when its upper
    bound at ``pass_level`` is at or below it (evidence of safety), else **inconclusive** (the reason
    says what would decide it). Without evidence (the seed-000 proxies, which inform), the point figure
    (``on: value | ci_upper``) is compared with the threshold. error, not_applicable, inconclusive and
    nothing_to_attack from the run stay what they are (the entry says whether they block: optional)."""
    gate = {
        "threshold": entry.threshold,
        "on": entry.on,
        "severity": entry.severity,
        "optional": entry.optional,
    }
    facts = (Status.ERROR, Status.NOT_APPLICABLE, Status.NOTHING_TO_ATTACK)
    unrun = result.status is Status.INCONCLUSIVE and result.decision is None
    if unrun and accept_unrun and entry.threshold is not None:
        return result.model_copy(  # too few rows to run: the risk rests on its other gates (risk_decisions)
            update={
                **gate,
                "status": Status.PASS,
                "reason": f"weaker guarantee: not run at this size ({result.reason}); its risk rests on "
                "its other gates",
                "decision": {"guarantee": "not run", "fail_level": fail_level, "pass_level": pass_level},
            }
        )
    if result.status in facts or (result.status is Status.INCONCLUSIVE and result.decision is None):
        return result.model_copy(update=gate)  # a fact of the run (too few rows: inconclusive)
    if result.evidence and entry.threshold is not None and "registered" in result.evidence[0]:
        from .exposure_count import decide  # counts of people: the exact test (issue 45)

        status, reason, decision = decide(
            [dict(p) for p in result.evidence],
            float(entry.threshold),
            fail_level,
            pass_level,
            accepted_floor,
            people=None if result.raw is None or result.baseline is None else (result.raw, result.baseline),
        )
        st = Status(status)
        if st is Status.FAIL and entry.severity is not Severity.ERROR:
            st = Status.WARN
        return result.model_copy(update={**gate, "status": st, "reason": reason, "decision": decision})
    if result.evidence and entry.threshold is not None:
        return _judge_evidence(entry, result, gate, fail_level, pass_level, accepted_excess, sign_level)
    figure = result.model_copy(update=gate).gated_figure
    if figure is None or not math.isfinite(figure):  # fail closed: nothing to compare is not a pass
        return result.model_copy(
            update={
                **gate,
                "status": Status.ERROR,
                "reason": f"no finite {entry.on.replace('_', ' ')} to gate on",
            }
        )
    if entry.threshold is not None and figure > entry.threshold:
        what = "CI upper bound" if entry.on == "ci_upper" and result.ci else "value"
        return result.model_copy(
            update={
                **gate,
                "status": Status.FAIL if entry.severity is Severity.ERROR else Status.WARN,
                "reason": f"{what} {figure:.4g} > threshold {entry.threshold:g}",
                "decision": None,
            }
        )
    return result.model_copy(update={**gate, "status": Status.PASS, "reason": None, "decision": None})


def _judge_evidence(
    entry: MetricPolicy,
    result: MetricResult,
    gate: dict[str, Any],
    fail_level: float,
    pass_level: float,
    accepted_excess: float = 0.0,
    sign_level: float = SIGN_LEVEL,
) -> MetricResult:
    from ..metrics.stats import excess

    thr = float(entry.threshold)  # type: ignore[arg-type]
    ev = excess(list(result.evidence or []), fail_level=fail_level, pass_level=pass_level)
    decision: dict[str, Any] = {
        "excess": ev.estimate,
        "lower": ev.lower,
        "upper": ev.upper,
        "fail_level": fail_level,
        "pass_level": pass_level,
        "parts": ev.parts,
        "trials": min(int(p["n_t"]) for p in result.evidence or []),
    }
    bounds = f"excess {ev.estimate:.4g}, bounds [{ev.lower:.4g}, {ev.upper:.4g}]"
    # a sign of risk: the lower bound at a fixed 5 % for this gate alone (SIGN_LEVEL: a stricter
    # false_alarm or assurance must not widen it), never wider than its own fail level. A weaker
    # guarantee is no pass where the gate alone shows risk (a bound alone passed 240-row releases of 17 %
    # near-copies); an estimate merely over the threshold is within noise (issue 45: 2 of 5 clean
    # breast-cancer releases lacked evidence on it). A part without control rows has no lower bound
    # (never evidence of risk), so there its estimate is the sign, as before
    sign_level = max(sign_level, fail_level)
    sign = _sign(list(result.evidence or []), sign_level, pass_level)
    uncontrolled = any(int(p["n_c"]) <= 0 for p in result.evidence or [])
    if uncontrolled:
        sign = max(sign, ev.estimate)
    decision["sign_lower"], decision["sign_level"] = sign, sign_level
    if ev.lower > thr:
        status = Status.FAIL if entry.severity is Severity.ERROR else Status.WARN
        reason = f"evidence of risk: {bounds}; lower bound > threshold {thr:g}"
    elif ev.upper <= thr:
        status, reason = Status.PASS, None
    elif ev.upper <= accepted_excess and sign <= thr:  # a small table's bound, no sign of risk
        status = Status.PASS  # the policy accepts the weaker guarantee this table's size can give
        decision["guarantee"] = "weaker"
        reason = (
            f"weaker guarantee: {bounds}; the excess is at most {ev.upper:.3g} (the policy accepts up to "
            f"{accepted_excess:g}), not shown within threshold {thr:g}"
            f"{_needs(decision['trials'], ev.estimate, ev.upper, thr)}"
        )
    else:
        status = Status.INCONCLUSIVE
        signed = (sign, sign_level, ev.parts, uncontrolled)
        reason = _inconclusive(entry, result, bounds, thr, (ev.estimate, ev.lower, ev.upper),
                               decision["trials"], accepted_excess, signed)  # fmt: skip
    return result.model_copy(update={**gate, "status": status, "reason": reason, "decision": decision})


def _sign(parts: list[dict[str, Any]], level: float, pass_level: float) -> float:
    """The largest part's lower bound at ``level``, each part alone: not divided among the parts, as the
    fail bound is, since a sign only refuses a weaker pass (review: divided among singling out's 10
    parts, a 64k release's excess 0.19 on 2,000 trials, over its 0.15 threshold, read no sign). A clean
    release's parts sit near 0, not at the threshold, so the undivided level costs it little."""
    from ..metrics.stats import part_figures

    return max(f[1] for f in part_figures(parts, level, pass_level))


#: where a reason says what the user can do (decision.verdict.blocked_by quotes what follows)
TO_DECIDE = "To decide on this table: "


def _inconclusive(
    entry: MetricPolicy, result: MetricResult, bounds: str, thr: float, figures: tuple[float, float, float],
    trials: int, accepted_excess: float, signed: tuple[float, float, int, bool],
) -> str:  # fmt: skip
    """The line of a result whose bounds straddle its threshold: a gate's ends in the one thing the user
    can do on this table (issue 46); an advisory's says it is information, which asks nothing of anyone.
    Accepting the bound (accepted_excess) is advised only where the estimate is within the threshold: an
    estimate over it is a leak this table is too small to tell from none (issue 57), which accepting the
    bound would pass unseen."""
    estimate, lower, upper = figures
    needs = _needs(trials, estimate, upper, thr, lower)
    if entry.severity is not Severity.ERROR:
        seen = (
            "the estimate is over the threshold without evidence of risk at this size"
            if estimate >= thr
            else "nothing to do"
        )
        return (
            f"information: {bounds} straddle threshold {thr:g} on {trials} trials; an advisory warns only "
            f"on evidence of risk: {seen}{needs}"
        )
    sign, sign_level, parts, uncontrolled = signed
    bound = f"its largest part's lower bound (of {parts}, each alone)" if parts > 1 else "its lower bound"
    seen = (
        f"its estimate {sign:.4g} (without control rows it has no lower bound)"
        if uncontrolled
        else f"at level {sign_level:g} for this gate alone, not divided among the gates, {bound} {sign:.4g}"
    )
    over = estimate >= thr
    why = (  # a sign of risk decides what is left to do, whatever the bound: no policy value passes it
        f"a sign of risk: {seen} is above the threshold, which the family-wise level cannot confirm (a "
        "weaker guarantee, accepted_excess, needs no sign of risk)"
        if sign > thr
        else "the estimate is over the threshold without evidence of risk: this table is too small to tell "
        "a leak from none"
        if over
        else f"the upper bound is above the weaker guarantee the policy accepts ({accepted_excess:g}: "
        "accepted_excess)"
    )
    risk = verdict_risk(result) or "its"
    action = (  # a fixed table cannot grow: the one decision left is a person's, by name (issue 46)
        f"evaluate more rows{needs}, or, where the table cannot grow, waive the {risk} risk with a "
        "reason in the policy (waivers:), which asks for a privacy officer's sign-off"
        if sign > thr or over
        else f"accept its bound with accepted_excess: {_rounded_up(upper)} in the policy, or evaluate "
        f"more rows{needs}"
    )
    return f"inconclusive: {bounds} straddle threshold {thr:g} on {trials} trials; {why}. {TO_DECIDE}{action}"


def _rounded_up(x: float) -> str:
    """A bound as a policy value that accepts it: up to the next hundredth."""
    return f"{math.ceil(x * 100 - 1e-9) / 100:.2f}"


def _needs(trials: int, estimate: float, upper: float, threshold: float, lower: float | None = None) -> str:
    """What would decide an inconclusive gate, roughly: an interval's half-width shrinks as 1/√n, so
    the upper bound reaches the threshold at about ((upper − E) / (threshold − E))² times the trials,
    and, for an estimate over the threshold, the lower bound at ((E − lower) / (E − threshold))² (said
    as a multiple of this table's, which a fixed table cannot give)."""
    if estimate >= threshold:
        if lower is None or estimate <= threshold:
            return " (more trials would tell on which side)"
        factor = ((estimate - lower) / (estimate - threshold)) ** 2
        if factor >= 1000:
            return ""
        return (  # the lower bound is clipped at 0, so this is a floor on the trials
            f" (at least about {math.ceil(trials * factor):,} trials would be needed to show it, "
            f"{factor:.1f}× this table's, if the estimate held)"
        )
    factor = ((upper - estimate) / (threshold - estimate)) ** 2
    if factor >= 1000:
        return ""
    return f" (about {math.ceil(trials * factor):,} trials would decide: {factor:.1f}× this table's)"


def compared_figure(result: MetricResult) -> str:
    """The figure a judged result's threshold was compared with, in words (issue 46: a line that
    printed ``value 0.173 threshold 0.15`` for a gate judged on its excess read as a contradiction):
    the excess and its bounds, the people counted against chance, or the point figure."""
    d = result.decision or {}
    if "exposed" in d:
        chance = float(d["chance"])
        share = (d["exposed"] - chance) / d["trials"] if d.get("trials") else 0.0
        return f"share exposed beyond chance {share:.4g} ({d['exposed']} people, chance {chance:.1f})"
    if "excess" in d and d.get("lower") is not None and d.get("upper") is not None:
        return f"excess {d['excess']:.4g} [{d['lower']:.4g}, {d['upper']:.4g}]"
    figure = result.gated_figure
    what = "CI upper bound" if result.on == "ci_upper" and result.ci else "value"
    return f"{what} {'—' if figure is None else format(figure, '.4g')}"
