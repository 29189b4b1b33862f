"""The whole run: every judged result, the verdict and what was evaluated (fingerprints, never a value),
and its JSON document. The verdict rule is ``decision.verdict``; the per-risk decisions are derived from
the results each time they are read, so a document cannot carry decisions its results do not give.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    import polars as pl

from .decision.verdict import RiskDecision, blocked_by, lineage_failed, not_assessed, risk_decisions, verdict
from .results import MetricResult, PolicyRef, Status, TableInfo, ThreatModelRef, Timings, to_jsonable

FORMAT = "dagster-privacy/evaluation/1"


class Evaluation(BaseModel):
    """All results of one evaluation, the verdict and what was evaluated (fingerprints, no values).

    ``evaluate`` returns one; ``from_json`` reads one back (its flagged rows stay in memory only, so
    ``remediate`` needs the one ``evaluate`` returned). Indexing by metric id gives its ``MetricResult``.

    Args:
        results: every judged ``MetricResult``, in registry order.
        verdict: ``pass``, ``warn`` or ``fail`` (``decision.verdict``).
        seed: the random seed the evaluation ran with.
        policy: the policy's name, preset and sha256.
        threat_model: the key, sensitive and source-index columns, and the defaults the metrics took.
        tables: rows, columns and sha256 per role (``real``, ``synthetic``, ``holdout``).
        schema: the inferred schema (alias of ``schema_``).
        versions: the versions of the packages that computed it.
        distances: histograms of synthetic→real and holdout→real NN distances.
        timings: total, encoding, per-metric and per-query seconds.
        findings: blocking findings outside the metrics (a left-out column copied).
        required_risks: the risks the verdict requires (None: every risk with a gate).
        waivers: risks the policy waives, with its reasons (forces a sign-off).
        levels: false_alarm, assurance and each gate's fail level.
        detection_floor: the smallest verbatim-copy leak caught with 95 % probability.
        lineage: the release judged with its lineage (issue 56); None: no lineage.

    Example:
        ``Evaluation.from_json(Path("evaluation.json").read_text()).blocked_by``
    """

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

    def sha256(self, role: str = "synthetic") -> str | None:
        """The content fingerprint of the table evaluated in ``role`` (None: no such table)."""
        info = self.tables.get(role)
        return info["sha256"] if info else None

    @property
    def risks(self) -> dict[str, RiskDecision]:
        """The per-risk decisions (``decision.verdict.risk_decisions``)."""
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
        return not_assessed(self.risks)

    def __getitem__(self, metric_id: str) -> MetricResult:
        for r in self.results:
            if r.id == metric_id:
                return r
        raise KeyError(metric_id)

    def __iter__(self) -> Iterator[MetricResult]:  # type: ignore[override]  # the results, not the fields
        return iter(self.results)

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.results]

    @property
    def blocking(self) -> list[str]:
        """The ids of the results that block (``MetricResult.blocks``): what a reader is told failed."""
        return [r.id for r in self.results if r.blocks]

    def to_dict(self) -> dict[str, Any]:
        return dict(
            to_jsonable(
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
                    "risks": {n: d.to_dict() for n, d in self.risks.items()},
                    "risks_not_assessed": self.risks_not_assessed,
                    "levels": self.levels,
                    "detection_floor": self.detection_floor,
                    "lineage": self.lineage,
                    "metrics": [r.to_dict() for r in self.results],
                    "distances": self.distances,
                    "timings": self.timings,
                }
            )
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

    def to_frame(self) -> pl.DataFrame:
        """One row per metric: id, family, risk, the figures, threshold, severity, status, reason."""
        import polars as pl

        rows = [
            {"id": r.id, "family": r.family, "risk": r.risk, "value": r.value, "raw": r.raw,
             "baseline": r.baseline, "ci_low": (r.ci or (None,))[0], "ci_high": (r.ci or (None, None))[1],
             "threshold": r.threshold, "severity": r.severity.value,
             "status": getattr(r.status, "value", None), "reason": r.reason, "seconds": r.seconds}
            for r in self.results
        ]  # fmt: skip
        figures = ("value", "raw", "baseline", "ci_low", "ci_high", "threshold", "seconds")
        return pl.DataFrame(rows, schema_overrides={k: pl.Float64 for k in figures})
