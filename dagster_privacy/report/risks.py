"""Each metric's `risk` mapped to the WP29 risk it measures (seed 004 §2.3.1) or to membership /
re-identification (seed 004 §2.3.2), with the one-line meaning a privacy officer reads."""

from __future__ import annotations

from dataclasses import dataclass

from ..results import MetricResult, Risk


@dataclass(frozen=True)
class RiskClass:
    key: str
    title: str
    framework: str
    meaning: str


RISKS: tuple[RiskClass, ...] = (  # one per results.Risk, in report order
    RiskClass(
        Risk.SINGLING_OUT,
        "Singling out",
        "WP29",
        "isolating some or all records that identify an individual in the training data",
    ),
    RiskClass(
        Risk.LINKABILITY,
        "Linkability",
        "WP29",
        "linking two records (in one or two data sets) that concern the same person or group",
    ),
    RiskClass(
        Risk.INFERENCE,
        "Inference",
        "WP29",
        "deducing, with significant probability, an attribute of a person from other attributes",
    ),
    RiskClass(
        Risk.MEMBERSHIP,
        "Membership inference",
        "adversarial ML (seed 004 §2.3.2)",
        "telling whether a given person's record was in the training data",
    ),
    RiskClass(
        Risk.REIDENTIFICATION,
        "Re-identification (distance / copy proxies)",
        "identity disclosure proxy",
        "synthetic records sitting on, or unusually close to, training records; a proxy "
        "for singling out, not an attack",
    ),
    RiskClass(
        Risk.DISTINGUISHABILITY,
        "Distinguishability",
        "proxy",
        "a classifier telling synthetic from real records; a fidelity figure, not an attack",
    ),
)

_BY_KEY = {str(r.key): r for r in RISKS}
assert set(_BY_KEY) == {str(r) for r in Risk}, "every Risk needs its RiskClass"


def risk_class(result: MetricResult) -> RiskClass:
    """The risk class of a result; a risk this version does not know (JSON written by another version)
    becomes its own class, never dropped."""
    key = (result.risk or "").strip().lower()
    if key in _BY_KEY:
        return _BY_KEY[key]
    return RiskClass(key or "unclassified", (key or "unclassified").capitalize(), "—", "not mapped")


def verdict_groups(results: list[MetricResult]) -> list[tuple[RiskClass, list[MetricResult], str | None]]:
    """The results as the verdict groups them (issue 46: the report's table grouped by metric family
    while the verdict decided four risks): (its risk class, its metrics, the verdict risk's name) for
    the four risks, re-identification under membership, then the metrics that inform only (None)."""
    from ..results import RISK_NAMES, verdict_risk

    four = (Risk.SINGLING_OUT, Risk.LINKABILITY, Risk.INFERENCE, Risk.MEMBERSHIP)
    classes = dict(zip(RISK_NAMES, four, strict=True))
    out: list[tuple[RiskClass, list[MetricResult], str | None]] = [
        (_BY_KEY[str(classes[n])], [r for r in results if verdict_risk(r) == n], n) for n in RISK_NAMES
    ]
    informs = [r for r in results if verdict_risk(r) is None]
    if informs:
        out.append((_BY_KEY[str(Risk.DISTINGUISHABILITY)], informs, None))
    return out
