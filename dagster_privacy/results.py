"""One result type: MetricResult per metric, Evaluation for the whole run, and their JSON."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

FORMAT = "dagster-privacy/evaluation/1"


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    ERROR = "error"
    NOT_APPLICABLE = "not_applicable"


class Severity(StrEnum):
    ERROR = "ERROR"
    WARN = "WARN"


def _clean(x: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN/inf to None, tuples to lists."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_clean(v) for v in x.tolist()]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        f = float(x)
        return f if math.isfinite(f) else None
    if isinstance(x, np.bool_):
        return bool(x)
    return x


class MetricResult(BaseModel):
    """The outcome of one metric on one evaluation."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str = Field(description="registry id, e.g. dcr_percentile")
    family: str = Field("", description="metric family (module)")
    source: str = Field("", description="seed section the formula comes from")
    risk: str = Field("", description="the risk it measures (WP29 or membership / re-identification)")
    value: float | None = Field(None, description="risk in [0, 1]: 0 = private, 1 = no privacy")
    raw: float | None = Field(None, description="the formula's own figure (may be unbounded or reversed)")
    baseline: float | None = Field(None, description="the same figure on the holdout/control, where defined")
    ci: tuple[float, float] | None = Field(None, description="95 % interval of value, where defined")
    status: Status = Field(Status.PASS, description="pass / warn / fail / error / not_applicable")
    threshold: float | None = Field(None, description="policy threshold on value (or on the CI upper bound)")
    on: str = Field("value", description="what the threshold applies to: value or ci_upper")
    severity: Severity = Field(Severity.ERROR, description="ERROR gates, WARN informs")
    optional: bool = Field(False, description="the policy allows this metric to be not_applicable")
    reason: str | None = Field(None, description="why error / not_applicable / fail, one line")
    sizes: dict[str, int] = Field(default_factory=dict, description="rows used per table")
    seconds: float = Field(0.0, description="wall time of this metric, shared queries excluded")
    details: dict[str, Any] = Field(default_factory=dict, description="parameters, per-column figures, counts")
    flagged: np.ndarray | None = Field(None, exclude=True, description="at-risk synthetic rows (memory only)")
    flagged_hashes: np.ndarray | None = Field(None, exclude=True,
                                              description="content hashes of the flagged rows (memory only)")

    @classmethod
    def not_applicable(cls, id: str, reason: str, **kw: Any) -> MetricResult:
        return cls(id=id, status=Status.NOT_APPLICABLE, reason=reason, **kw)

    @property
    def gated_figure(self) -> float | None:
        """The figure the threshold is compared with."""
        if self.on == "ci_upper" and self.ci is not None:
            return self.ci[1]
        return self.value

    def to_dict(self) -> dict[str, Any]:
        d = self.model_dump(mode="python", exclude={"flagged", "flagged_hashes", "seconds"})  # seconds: in "timings"
        d["status"] = self.status.value
        d["severity"] = self.severity.value
        return _clean(d)


class Evaluation(BaseModel):
    """All results of one evaluation, the verdict and what was evaluated (fingerprints, no values)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    results: list[MetricResult]
    verdict: Status = Status.PASS
    seed: int = 0
    policy: dict[str, Any] = Field(default_factory=dict, description="name and sha256 of the policy")
    threat_model: dict[str, Any] = Field(default_factory=dict)
    tables: dict[str, dict[str, Any]] = Field(default_factory=dict, description="rows, columns, sha256")
    schema_: dict[str, Any] = Field(default_factory=dict, alias="schema")
    versions: dict[str, str] = Field(default_factory=dict)
    distances: dict[str, Any] = Field(default_factory=dict,
                                      description="histograms of synthetic→real and holdout→real NN distances")
    timings: dict[str, Any] = Field(default_factory=dict)
    findings: list[str] = Field(default_factory=list,
                                description="blocking findings outside the metrics (a left-out column copied)")

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

    def to_dict(self) -> dict[str, Any]:
        return _clean({
            "format": FORMAT,
            "verdict": self.verdict.value,
            "seed": self.seed,
            "policy": self.policy,
            "threat_model": self.threat_model,
            "tables": self.tables,
            "schema": self.schema_,
            "versions": self.versions,
            "findings": self.findings,
            "metrics": [r.to_dict() for r in self.results],
            "distances": self.distances,
            "timings": self.timings,
        })

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> Evaluation:
        d = json.loads(text) if isinstance(text, str) else dict(text)
        if d.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
        secs = d.get("timings", {}).get("metrics", {})
        results = [MetricResult(**{**m, "ci": tuple(m["ci"]) if m.get("ci") else None,
                                   "seconds": secs.get(m["id"], 0.0)}) for m in d["metrics"]]
        return cls(results=results, verdict=Status(d["verdict"]), seed=d.get("seed", 0),
                   policy=d.get("policy", {}), threat_model=d.get("threat_model", {}),
                   tables=d.get("tables", {}), schema=d.get("schema", {}),
                   versions=d.get("versions", {}), distances=d.get("distances", {}),
                   timings=d.get("timings", {}), findings=d.get("findings", []))

    def to_frame(self):  # -> polars.DataFrame
        import polars as pl

        rows = []
        for r in self.results:
            rows.append({
                "id": r.id, "family": r.family, "risk": r.risk, "value": r.value, "raw": r.raw,
                "baseline": r.baseline, "ci_low": r.ci[0] if r.ci else None,
                "ci_high": r.ci[1] if r.ci else None, "threshold": r.threshold,
                "severity": r.severity.value, "status": r.status.value, "reason": r.reason,
                "seconds": r.seconds,
            })
        return pl.DataFrame(rows, schema_overrides={k: pl.Float64 for k in
                                                     ("value", "raw", "baseline", "ci_low", "ci_high",
                                                      "threshold", "seconds")})
