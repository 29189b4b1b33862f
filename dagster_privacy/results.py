"""One result type: what a metric measures (Measurement), what the policy made of it (MetricResult,
immutable, unjudged until ``policy.judge``), the whole run (Evaluation), and their JSON.

    metric function ──Measurement──▶ registry.run ──MetricResult(status None, or error /
    not_applicable)──▶ policy.judge ──MetricResult(pass / warn / fail …)──▶ Evaluation ──▶ JSON, report,
    Dagster metadata (each reads ``passed`` / ``blocks`` from the result instead of re-deriving them)
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10: the same behaviour for our use (str(), format() and == give the value)

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)


from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import NotRequired, TypedDict  # pydantic needs these before Python 3.12

FORMAT = "dagster-privacy/evaluation/1"


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"
    NOT_APPLICABLE = "not_applicable"
    #: the evidence neither shows risk nor rules it out at the policy's levels (too few rows or trials)
    INCONCLUSIVE = "inconclusive"
    #: the attack found nothing to attack (no predicate isolates a record): a pass of that gate
    NOTHING_TO_ATTACK = "nothing_to_attack"


class Severity(StrEnum):
    ERROR = "ERROR"
    WARN = "WARN"


class Risk(StrEnum):
    """The risk a metric measures: WP29's three (seed 004 §2.3.1), membership, two proxies."""

    SINGLING_OUT = "singling out"
    LINKABILITY = "linkability"
    INFERENCE = "inference"
    MEMBERSHIP = "membership"
    REIDENTIFICATION = "re-identification"
    DISTINGUISHABILITY = "distinguishability"


@dataclass(frozen=True)
class Measurement:
    """What a metric function returns: its figures. The registry names it (id, family, source, risk),
    checks the figures are finite and maps ``flagged`` to input rows; the policy judges it."""

    value: float | None
    raw: float | None = None
    baseline: float | None = None
    ci: tuple[float, float] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    flagged: np.ndarray | None = None  # synthetic rows (content order) at risk
    sizes: Mapping[str, int] = field(default_factory=dict)
    #: what the gate decides on (policy.judge): success counts on training and control targets per part
    #: (``k_t, n_t, k_c, n_c, e_star``; several parts = a maximum over columns, sizes or attacks)
    evidence: tuple[Mapping[str, float], ...] | None = None
    #: the records behind the figures, for a lineage (exposed_records: engine.exposure.Exposed); memory only
    records: Any = None


class RateDetails(TypedDict):
    """An attack's ``details.e_train`` / ``e_control`` (``e_naive``): a seed 004 eq. 8 rate, its interval."""

    rate: float
    center: float
    ci: list[float]
    successes: float | int
    n: int


#: the details keys of an attack result that hold a RateDetails (report/plots.py reads these)
RATE_KEYS = ("e_train", "e_control")
#: details keys that travel in the JSON only (row numbers of exposed records): never in Dagster metadata,
#: the report or the console (issue 45)
JSON_ONLY_DETAILS = frozenset({"exposed_records"})


def shareable_details(details: Mapping[str, Any]) -> dict[str, Any]:
    """A result's details without the JSON-only keys: what metadata and pages may carry."""
    return {k: v for k, v in details.items() if k not in JSON_ONLY_DETAILS}


def to_jsonable(x: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN/inf to None, tuples to lists."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return [to_jsonable(v) for v in x.tolist()]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        f = float(x)
        return f if math.isfinite(f) else None
    if isinstance(x, np.bool_):
        return bool(x)
    return x


class MetricResult(BaseModel):
    """The outcome of one metric on one evaluation; immutable. ``status`` is None until the policy
    judges it (``policy.judge``), except for error and not_applicable, which are facts of the run."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    id: str = Field(description="registry id, e.g. dcr_percentile")
    family: str = Field("", description="metric family (module)")
    source: str = Field("", description="seed section the formula comes from")
    risk: str = Field("", description="the risk it measures (WP29 or membership / re-identification)")
    value: float | None = Field(None, description="risk in [0, 1]: 0 = private, 1 = no privacy")
    raw: float | None = Field(None, description="the formula's own figure (may be unbounded or reversed)")
    baseline: float | None = Field(None, description="the same figure on the holdout/control, where defined")
    ci: tuple[float, float] | None = Field(None, description="95 % interval of value, where defined")
    status: Status | None = Field(
        None, description="pass / warn / fail / error / not_applicable; None: unjudged"
    )
    threshold: float | None = Field(None, description="policy threshold on value (or on the CI upper bound)")
    on: str = Field("value", description="what the threshold applies to: value or ci_upper")
    severity: Severity = Field(Severity.ERROR, description="ERROR gates, WARN informs")
    optional: bool = Field(False, description="the policy allows this metric to be not_applicable")
    reason: str | None = Field(None, description="why error / not_applicable / fail, one line")
    evidence: list[dict[str, float]] | None = Field(
        None, description="success counts on training and control per part (k_t, n_t, k_c, n_c, e_star)"
    )
    decision: dict[str, Any] | None = Field(
        None,
        description="what the gate decided on: excess E over the control, its lower bound at the fail "
        "level and upper bound at the pass level, the levels, the parts",
    )
    sizes: dict[str, int] = Field(default_factory=dict, description="rows used per table")
    seconds: float = Field(0.0, description="wall time of this metric, shared queries excluded")
    details: dict[str, Any] = Field(
        default_factory=dict, description="parameters, per-column figures, counts"
    )
    flagged: np.ndarray | None = Field(None, exclude=True, description="at-risk synthetic rows (memory only)")
    flagged_hashes: np.ndarray | None = Field(
        None, exclude=True, description="content hashes of the flagged rows (memory only)"
    )
    records: Any = Field(None, exclude=True, description="the records behind the figures (memory only)")

    @property
    def passed(self) -> bool:
        """The one "passed" rule, read from a judged result (a report rendered from JSON agrees): it
        passed or found nothing to attack, or could not run and is optional, or only informs (WARN) and
        could not run or decide; an inconclusive gate is never passed by being optional."""
        advisory = self.severity is Severity.WARN and self.status is Status.INCONCLUSIVE
        return (
            self.status in (Status.PASS, Status.NOTHING_TO_ATTACK)
            or advisory
            or (self.status is Status.NOT_APPLICABLE and (self.optional or self.severity is Severity.WARN))
        )

    @property
    def blocks(self) -> bool:
        """A gating (ERROR) result that did not pass."""
        return self.severity is Severity.ERROR and not self.passed

    @property
    def gated_figure(self) -> float | None:
        """The figure the threshold is compared with."""
        if self.on == "ci_upper" and self.ci is not None:
            return self.ci[1]
        return self.value

    def to_dict(self) -> dict[str, Any]:
        d = self.model_dump(
            mode="python", exclude={"flagged", "flagged_hashes", "seconds"}
        )  # seconds: in "timings"
        d["status"] = None if self.status is None else self.status.value
        d["severity"] = self.severity.value
        return to_jsonable(d)


#: the risks a verdict is given for: the three WP29 risks and membership, which the exact-match and
#: distance gates (re-identification) count toward; distinguishability informs only (report/risks.py)
VERDICT_RISKS: dict[str, str] = {
    Risk.SINGLING_OUT.value: "singling out",
    Risk.LINKABILITY.value: "linkability",
    Risk.INFERENCE.value: "inference",
    Risk.MEMBERSHIP.value: "membership",
    Risk.REIDENTIFICATION.value: "membership",
}
RISK_NAMES = ("singling out", "linkability", "inference", "membership")


def verdict_risk(result: MetricResult) -> str | None:
    """The verdict risk a result counts toward (None: it informs only)."""
    return VERDICT_RISKS.get(result.risk)


def _gates(result: MetricResult) -> bool:
    return result.severity is Severity.ERROR and result.threshold is not None


def _assesses(r: MetricResult) -> bool:
    """Whether a passing gate says something about its risk (issue 44: a gate that cannot fail is no
    assessment): a decision on evidence whose threshold the excess can exceed (below 1), or nothing to
    attack. A proxy passing on its point figure, a gate passing only as optional, or one not run at
    this size leaves its risk unassessed when it is the risk's only pass."""
    if r.status is Status.NOTHING_TO_ATTACK:
        return True
    if r.status is not Status.PASS or not r.evidence or r.decision is None:
        return False
    if r.decision.get("guarantee") == "not run":
        return False
    return r.threshold is not None and r.threshold < 1.0


def risk_decisions(
    results: Sequence[MetricResult], required: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Per verdict risk with at least one gate: ``pass`` when every gate passed (or found nothing to
    attack), ``fail`` when one failed or errored (fail closed), else ``lacking evidence`` (a gate was
    inconclusive or could not run, and the policy does not mark it optional); its gates, and whether the
    verdict requires it (``required`` None: every risk with a gate)."""
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        name = verdict_risk(r)
        if name is None or not _gates(r):
            continue
        d = out.setdefault(name, {"gates": [], "failing": [], "lacking": []})
        d["gates"].append(r.id)
        if r.status in (Status.FAIL, Status.ERROR):
            d["failing"].append(r.id)
        elif not r.passed:
            d["lacking"].append(r.id)
    by_id = {r.id: r for r in results}
    for name, d in out.items():
        # a gate not run at this size (judge: accept_unrun) leaves its risk to the others: never alone
        unrun = [g for g in d["gates"] if (by_id[g].decision or {}).get("guarantee") == "not run"]
        if unrun and len(unrun) == len(d["gates"]):
            d["lacking"] += unrun
        passing = "pass" if any(_assesses(by_id[g]) for g in d["gates"]) else "not assessed"
        d["status"] = "fail" if d["failing"] else "lacking evidence" if d["lacking"] else passing
        d["required"] = required is None or name in required
    return {n: out[n] for n in RISK_NAMES if n in out}


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
        if d["required"] and d["status"] == "lacking evidence":
            out.append(f"{name}: lacking evidence ({', '.join(_needs(by_id[g]) for g in d['lacking'])})")
    unassessed = [n for n in RISK_NAMES if n not in decisions or decisions[n]["status"] == "not assessed"]
    missing = [n for n in unassessed if required is not None and n in required]
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


class PolicyRef(TypedDict):
    name: str
    preset: str | None
    sha256: str


class ThreatModelRef(TypedDict):
    key_columns: list[str] | None
    sensitive_columns: list[str] | None
    source_index_column: str | None
    defaults: NotRequired[dict[str, list[str]]]  # the columns the metrics took where none were named


class TableInfo(TypedDict):
    """What an evaluation records of a table: size and content fingerprint, never a value."""

    rows: int
    columns: int
    sha256: str


class Timings(TypedDict, total=False):
    total: float
    encode: float
    metrics: dict[str, float]  # per metric, shared neighbour queries excluded
    queries: dict[str, float]  # per shared neighbour query


def lineage_failed(lineage: Mapping[str, Any] | None) -> bool:
    """The lineage's decision blocks the release (the union of its releases fails: issue 56)."""
    return bool(lineage) and lineage.get("status") == "fail"  # type: ignore[union-attr]


class Evaluation(BaseModel):
    """All results of one evaluation, the verdict and what was evaluated (fingerprints, no values)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    results: list[MetricResult]
    verdict: Status = Status.PASS
    seed: int = 0
    policy: PolicyRef | dict[str, Any] = Field(
        default_factory=dict, description="name and sha256 of the policy"
    )
    threat_model: ThreatModelRef | dict[str, Any] = Field(default_factory=dict)
    tables: dict[str, TableInfo] = Field(default_factory=dict, description="rows, columns, sha256 per role")
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    versions: dict[str, str] = Field(default_factory=dict)
    distances: dict[str, Any] = Field(
        default_factory=dict, description="histograms of synthetic→real and holdout→real NN distances"
    )
    timings: Timings = Field(default_factory=Timings)
    findings: list[str] = Field(
        default_factory=list, description="blocking findings outside the metrics (a left-out column copied)"
    )
    required_risks: list[str] | None = Field(
        None, description="the risks the verdict requires (None: every risk with a gate)"
    )
    waivers: dict[str, str] = Field(
        default_factory=dict, description="risks the policy waives, with its reasons (forces a sign-off)"
    )
    levels: dict[str, Any] = Field(
        default_factory=dict, description="false_alarm, assurance and each gate's fail level"
    )
    detection_floor: dict[str, Any] = Field(
        default_factory=dict, description="the smallest verbatim-copy leak caught with 95 % probability"
    )
    lineage: dict[str, Any] | None = Field(None, description="the release judged with its lineage (issue 56)")

    @property
    def risks(self) -> dict[str, dict[str, Any]]:
        """The per-risk decisions (``risk_decisions``)."""
        return risk_decisions(self.results, self.required_risks)

    @property
    def blocked_by(self) -> list[str]:
        """What blocks the verdict: failing gates and required risks lacking evidence, then findings."""
        lineage = ["privacy_lineage"] if lineage_failed(self.lineage) else []
        findings = ["findings"] if self.findings else []
        return blocked_by(self.results, self.required_risks) + lineage + findings

    @property
    def risks_not_assessed(self) -> list[str]:
        """Verdict risks no gate of this evaluation covers (a ``--metrics`` subset, a WARN-only policy)."""
        risks = self.risks
        return [n for n in RISK_NAMES if n not in risks or risks[n]["status"] == "not assessed"]

    def __getitem__(self, metric_id: str) -> MetricResult:
        for r in self.results:
            if r.id == metric_id:
                return r
        raise KeyError(metric_id)

    def __iter__(self):  # type: ignore[override]
        return iter(self.results)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.results]

    @property
    def blocking(self) -> list[str]:
        """The ids of the results that block (``MetricResult.blocks``): what a reader is told failed."""
        return [r.id for r in self.results if r.blocks]

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(
            {
                "format": FORMAT,
                "verdict": self.verdict.value,
                "seed": self.seed,
                "policy": self.policy,
                "threat_model": self.threat_model,
                "tables": self.tables,
                "schema": self.schema_,
                "versions": self.versions,
                "findings": self.findings,
                "blocked_by": self.blocked_by,
                "required_risks": self.required_risks,
                "waivers": self.waivers,
                "risks": self.risks,
                "risks_not_assessed": self.risks_not_assessed,
                "levels": self.levels,
                "detection_floor": self.detection_floor,
                "lineage": self.lineage,
                "metrics": [r.to_dict() for r in self.results],
                "distances": self.distances,
                "timings": self.timings,
            }
        )

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> Evaluation:
        d = json.loads(text) if isinstance(text, str) else dict(text)
        if d.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
        secs = d.get("timings", {}).get("metrics", {})
        results = [
            MetricResult(
                **{**m, "ci": tuple(m["ci"]) if m.get("ci") else None, "seconds": secs.get(m["id"], 0.0)}
            )
            for m in d["metrics"]
        ]
        unjudged = [r.id for r in results if r.status is None]
        if unjudged:
            raise ValueError(f"results not judged by a policy: {', '.join(unjudged)}")
        required, waivers = d.get("required_risks"), d.get("waivers") or {}
        if Status(d["verdict"]) is not (
            Status.FAIL
            if d.get("findings") or lineage_failed(d.get("lineage"))
            else verdict(results, required, waivers)
        ):
            raise ValueError("the document's verdict disagrees with its results (edited?)")
        return cls(
            results=results,
            verdict=Status(d["verdict"]),
            seed=d.get("seed", 0),
            policy=d.get("policy", {}),
            threat_model=d.get("threat_model", {}),
            tables=d.get("tables", {}),
            schema=d.get("schema", {}),
            versions=d.get("versions", {}),
            distances=d.get("distances", {}),
            timings=d.get("timings", {}),
            findings=d.get("findings", []),
            required_risks=required,
            waivers=waivers,
            levels=d.get("levels", {}),
            detection_floor=d.get("detection_floor", {}),
            lineage=d.get("lineage"),
        )

    def to_frame(self):  # -> polars.DataFrame
        """One row per metric: id, family, risk, the figures, threshold, severity, status, reason."""
        import polars as pl

        rows = [
            {"id": r.id, "family": r.family, "risk": r.risk, "value": r.value, "raw": r.raw,
             "baseline": r.baseline, "ci_low": (r.ci or (None,))[0], "ci_high": (r.ci or (None, None))[1],
             "threshold": r.threshold, "severity": r.severity.value, "status": r.status.value,
             "reason": r.reason, "seconds": r.seconds}
            for r in self.results
        ]  # fmt: skip
        figures = ("value", "raw", "baseline", "ci_low", "ci_high", "threshold", "seconds")
        return pl.DataFrame(rows, schema_overrides={k: pl.Float64 for k in figures})
