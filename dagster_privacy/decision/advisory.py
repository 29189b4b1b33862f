"""An advisory figure judged against the holdout (issue 46): a seed-000 proxy (a point figure without
evidence, severity WARN) that is over its threshold warns only if unseen real rows are not.

The proxies read the release alone, so on a table whose records are close to one another they go over
their thresholds on real rows no generator saw: every clean release warned, and people learn to ignore
a warning. When, with the holdout in the release's place (``EvaluationContext.holdout_as_release``),
the release's figure is within three times the two figures' binomial noise of theirs,
the figure cannot tell this release from unseen real rows: it is information (a pass whose reason
gives both figures), not a warning. (Review: "both over the threshold" alone called a release 6.8
noise widths above unseen rows information.) The two figures share the real table, so the margin,
which treats them as independent, is conservative for the difference; a figure that is a share of the
real rows has a noise set by the real table's size, which the margin does not use. Gates (ERROR) and
figures with evidence are judged by judge.py alone.
"""

from __future__ import annotations

import math

from ..results import MetricResult, Severity, Status

#: noise widths a release's figure must stand above unseen rows' to warn: about twenty advisories are
#: compared per evaluation, so 3 (one-sided 0.13 % each, about 3 % per release) rather than 2 (2.3 %
#: each: a clean release of Arrests warned on nnaa at 2.3 widths)
WIDTHS = 3.0


def against_interval(result: MetricResult) -> MetricResult:
    """An advisory figure over its threshold that reads the holdout itself (a difference from it, with
    a bootstrap interval): information unless its interval's lower bound clears the threshold, as a
    gate fails only on evidence (``dcr_holdout_diff`` 0.15 > 0.1 on a clean release, interval [0, 0.3])."""
    if result.ci is None or not math.isfinite(result.ci[0]) or result.ci[0] > float(result.threshold or 0):
        return result
    low, high = result.ci
    return result.model_copy(
        update={
            "status": Status.PASS,
            "reason": f"information: {result.gated_figure:.4g} over threshold {result.threshold:g}, but its "
            f"95 % interval [{low:.4g}, {high:.4g}] reaches below it: no evidence against this release",
        }
    )


def compared(result: MetricResult) -> bool:
    """Whether ``result`` is an advisory point figure over its threshold (the only kind compared)."""
    return (
        result.status is Status.WARN
        and result.severity is Severity.WARN
        and result.decision is None
        and not result.evidence
        and result.threshold is not None
    )


def noise(figure: float, n: int) -> float:
    """A share's binomial standard error on ``n`` rows; for a mean of figures in [0, 1] an upper bound
    (their variance is at most p(1 − p))."""
    p = min(1.0, max(0.0, figure))
    return math.sqrt(p * (1.0 - p) / n) if n > 0 else math.inf


def _noise(result: MetricResult, figure: float) -> float:
    """The figure's standard error: the metric's own (``details["se"]``, where it knows its rows are
    not independent draws: nnaa's twins) or a share's binomial error on the release's rows."""
    se = (result.details or {}).get("se")
    if isinstance(se, (int, float)) and math.isfinite(se) and se > 0:
        return float(se)
    return noise(figure, int(result.sizes.get("synthetic", 0)))


def against_holdout(result: MetricResult, unseen: MetricResult | None) -> MetricResult:
    """``result`` (an advisory figure over its threshold) after the same metric on the holdout as the
    release (``unseen``; None: it could not be computed). Information when the release is not above
    unseen real rows by more than three times their combined noise (so unseen rows are over the threshold
    too, or nearly); a warning, saying what they give, when it is."""
    figure = result.gated_figure
    other = None if unseen is None or unseen.status is Status.ERROR else unseen.gated_figure
    details = dict(result.details or {})
    if figure is None or other is None or not math.isfinite(other):
        reason = f"{result.reason}; not compared with unseen real rows (the holdout gave no figure)"
        return result.model_copy(update={"reason": reason})
    margin = WIDTHS * math.hypot(_noise(result, figure), _noise(unseen, other))  # type: ignore[arg-type]
    details["holdout_as_release"] = other
    details["holdout_margin"] = margin
    both = f"{figure:.4g} (unseen real rows as the release: {other:.4g}"
    thr = float(result.threshold)  # type: ignore[arg-type]
    if figure <= other + margin:  # a release far above unseen rows warns, both over the threshold or not
        why = f"within {WIDTHS:g} noise widths ({margin:.2g}) of unseen rows, over threshold {thr:g}"
        return result.model_copy(
            update={
                "status": Status.PASS,
                "details": details,
                "reason": f"information: {both}), {why}; on this table the figure does not tell the release "
                "from real rows no generator saw",
            }
        )
    return result.model_copy(
        update={
            "details": details,
            "reason": f"{both} + {margin:.2g} of noise) > threshold {thr:g}: the release reads riskier than "
            "real rows no generator saw",
        }
    )


#: where a warning's line says what the user can do about it (issue 46: every message can be acted on)
TO_ACT = "To act on it: "


def with_action(result: MetricResult, *, remediable: bool = True, monotone: bool = True) -> MetricResult:
    """A warning's line ended in what the user can do: drop the rows it flags (``remediate --drop``,
    which evaluates the rest again against the holdout: ``remediable``, an evaluation with one) where it
    flags rows, else regenerate with stronger privacy — unless its figure is not ``monotone`` in
    closeness (nndr: an independent sampler scores 0.9) and it flags no row, where a high value alone
    asks for nothing. For a release nothing blocks (the caller's part: a blocked release's lines are its
    gates'); never said twice."""
    if result.status is not Status.WARN or TO_ACT in (result.reason or ""):
        return result
    n = 0 if result.flagged is None else int(len(result.flagged))
    if n and remediable:
        act = (
            f"dagster-privacy remediate --drop {result.id} (with this evaluation's tables, policy and "
            f"options, and an --out file) writes the release without the {n:,} rows it flags and evaluates "
            "it again"
        )
    elif monotone or n:  # rows it flags (copies) ask for a stronger setting whatever the figure's shape
        act = "regenerate the release with a stronger privacy setting of the generator"
    else:
        act = (
            "nothing on this figure alone (it does not rise as rows come closer to real records: rows "
            "drawn independently of every record score high too); exposed_records and the distance gates "
            "say whether rows are close"
        )
    said = (result.reason or "").rstrip(". ")
    return result.model_copy(
        update={"reason": f"{said}. {TO_ACT}{act}; a warning does not block publication"}
    )


__all__ = ["TO_ACT", "WIDTHS", "against_holdout", "against_interval", "compared", "with_action"]
