"""How a release is decided from its judged results: per verdict risk (``risk_decisions``), what blocks
it (``blocked_by``) and the verdict (``verdict``). The per-gate rule is ``judge``; this is the rule over
the gates. Seed 004 §2.3.1's three risks and membership each need a gate that assessed them.

    judge(entry, result) per gate ──▶ risk_decisions ──▶ blocked_by ──▶ verdict (pass / warn / fail)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..results import RISK_NAMES, MetricResult, Severity, Status, verdict_risk

RiskStatus = Literal["pass", "fail", "lacking evidence", "not assessed"]


@dataclass(frozen=True)
class RiskDecision:
    """One verdict risk's decision: its gates, those that failed or errored, those lacking evidence,
    the status and whether the verdict requires the risk."""

    gates: tuple[str, ...]
    failing: tuple[str, ...]
    lacking: tuple[str, ...]
    status: RiskStatus
    required: bool

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the evaluation document's ``risks``)."""
        return {
            "gates": list(self.gates),
            "failing": list(self.failing),
            "lacking": list(self.lacking),
            "status": self.status,
            "required": self.required,
        }


def _gates(result: MetricResult) -> bool:
    return result.severity is Severity.ERROR and result.threshold is not None


def _unrun(r: MetricResult) -> bool:
    return (r.decision or {}).get("guarantee") == "not run"


def _assesses(r: MetricResult) -> bool:
    """Whether a passing gate says something about its risk (issue 44: a gate that cannot fail is no
    assessment): a decision on evidence whose threshold the excess can exceed (below 1), or nothing to
    attack. A proxy passing on its point figure, a gate passing only as optional, or one not run at
    this size leaves its risk unassessed when it is the risk's only pass."""
    if r.status is Status.NOTHING_TO_ATTACK:
        return True
    if r.status is not Status.PASS or not r.evidence or r.decision is None or _unrun(r):
        return False
    return r.threshold is not None and r.threshold < 1.0


def _decide(gates: list[MetricResult], required: bool) -> RiskDecision:
    """One risk from its gates: ``fail`` when one failed or errored (fail closed), else ``lacking
    evidence`` when one was inconclusive or could not run (or none was run at this size: a gate not run
    leaves its risk to the others, never alone), else ``pass`` when one assessed it."""
    failing = [r.id for r in gates if r.status in (Status.FAIL, Status.ERROR)]
    lacking = [r.id for r in gates if r.status not in (Status.FAIL, Status.ERROR) and not r.passed]
    if all(_unrun(r) for r in gates):
        lacking += [r.id for r in gates]
    passing: RiskStatus = "pass" if any(_assesses(r) for r in gates) else "not assessed"
    status: RiskStatus = "fail" if failing else "lacking evidence" if lacking else passing
    return RiskDecision(tuple(r.id for r in gates), tuple(failing), tuple(lacking), status, required)


def risk_decisions(
    results: Sequence[MetricResult], required: Sequence[str] | None = None
) -> dict[str, RiskDecision]:
    """Per verdict risk with at least one gate, in ``RISK_NAMES`` order (``required`` None: the verdict
    requires every risk with a gate)."""
    by_risk: dict[str, list[MetricResult]] = {}
    for r in results:
        name = verdict_risk(r)
        if name is not None and _gates(r):
            by_risk.setdefault(name, []).append(r)
    return {n: _decide(by_risk[n], required is None or n in required) for n in RISK_NAMES if n in by_risk}


def not_assessed(decisions: Mapping[str, RiskDecision]) -> list[str]:
    """Verdict risks no gate assessed (none ran for them, or none that passed could have failed)."""
    return [n for n in RISK_NAMES if n not in decisions or decisions[n].status == "not assessed"]


def blocked_by(results: Sequence[MetricResult], required: Sequence[str] | None = None) -> list[str]:
    """What blocks the verdict: each failing gate of a required risk (or of no verdict risk: a policy
    that makes a distinguishability proxy a gate), each required risk lacking evidence, and each
    required risk no gate assessed (``required`` a list: the policy's; None: every risk with a gate,
    as documents written before the policy named them read)."""
    out = [
        r.id
        for r in results
        if r.blocks
        and (
            verdict_risk(r) is None  # a gate of no verdict risk blocks by itself, whatever its status
            or (r.status in (Status.FAIL, Status.ERROR) and (required is None or verdict_risk(r) in required))
        )
    ]
    by_id = {r.id: r for r in results}
    decisions = risk_decisions(results, required)
    for name, d in decisions.items():
        if d.required and d.status == "lacking evidence":
            out.append(f"{name}: lacking evidence ({', '.join(_needs(by_id[g]) for g in d.lacking)})")
    missing = [n for n in not_assessed(decisions) if required is not None and n in required]
    if missing:
        out.append(f"not assessed: {', '.join(missing)} (no gate of the policy ran for it)")
    return out


def _needs(r: MetricResult) -> str:  # a gate lacking evidence and what the user can do to decide it
    reason = r.reason or ""
    for mark, skip in (("To decide on this table: ", True), ("needs ", False)):
        if (at := reason.find(mark)) >= 0:
            return f"{r.id}: {reason[at + len(mark) * skip :]}"
    return r.id


def verdict(
    results: Sequence[MetricResult],
    required: Sequence[str] | None = None,
    waived: Mapping[str, str] | None = None,
) -> Status:
    """fail if a gate of a required risk failed or errored, a required risk lacks evidence or was not
    assessed; else warn if the policy waives a risk (it is published only with a sign-off) or another
    result did not pass; else pass. ``results`` are judged ones; ``required`` None: every risk with a
    gate."""
    if blocked_by(results, required):
        return Status.FAIL
    return Status.WARN if waived or any(not r.passed for r in results) else Status.PASS


def lineage_failed(lineage: Mapping[str, Any] | None) -> bool:
    """The lineage's decision blocks the release (the union of its releases fails: issue 56)."""
    return bool(lineage) and lineage.get("status") == "fail"  # type: ignore[union-attr]


__all__ = [
    "RiskDecision",
    "blocked_by",
    "lineage_failed",
    "not_assessed",
    "risk_decisions",
    "verdict",
]
