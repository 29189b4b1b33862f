"""One result type: what a metric measures (Measurement), what the policy made of it (MetricResult,
immutable, unjudged until ``policy.judge``), and their JSON; the whole run is ``evaluation.Evaluation``.

    metric function ──Measurement──▶ registry.run ──MetricResult(status None, or error /
    not_applicable)──▶ policy.judge ──MetricResult(pass / warn / fail …)──▶ Evaluation ──▶ JSON, report,
    Dagster metadata (each reads ``passed`` / ``blocks`` from the result instead of re-deriving them)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
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


class Status(StrEnum):
    """A result's status, as the policy judged it (or the run decided it), and a verdict's.

    Attributes:
        PASS: evidence of safety (an upper bound at or below the threshold, or a weaker guarantee the
            policy accepts), or a point figure within its threshold.
        WARN: what would fail, on an informing (WARN) entry.
        FAIL: evidence of risk on a gating (ERROR) entry, or a point figure over its threshold.
        ERROR: the metric raised, or gave no finite figure to gate on.
        NOT_APPLICABLE: the metric cannot run on these tables (``NotApplicable``).
        INCONCLUSIVE: the evidence neither shows risk nor rules it out at the policy's levels.
        NOTHING_TO_ATTACK: the attack found nothing to attack: a pass of that gate.

    Example:
        ``evaluate(real, synthetic).verdict is Status.PASS``
    """

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
    """A policy entry's severity.

    Attributes:
        ERROR: the metric gates: a result that does not pass blocks.
        WARN: the metric informs.

    Example:
        ``Severity("WARN") is Severity.WARN``
    """

    ERROR = "ERROR"
    WARN = "WARN"


class Risk(StrEnum):
    """The risk a metric measures: WP29's three (seed 004 §2.3.1), membership, two proxies.

    The verdict is given for singling out, linkability, inference and membership; re-identification gates
    count toward membership; distinguishability informs only.

    Attributes:
        SINGLING_OUT: ``"singling out"`` (WP29).
        LINKABILITY: ``"linkability"`` (WP29).
        INFERENCE: ``"inference"`` (WP29).
        MEMBERSHIP: ``"membership"``.
        REIDENTIFICATION: ``"re-identification"``, a proxy that counts toward membership.
        DISTINGUISHABILITY: ``"distinguishability"``, a proxy that informs only.

    Example:
        ``registry()["dcr_percentile"].risk is Risk.REIDENTIFICATION``
    """

    SINGLING_OUT = "singling out"
    LINKABILITY = "linkability"
    INFERENCE = "inference"
    MEMBERSHIP = "membership"
    REIDENTIFICATION = "re-identification"
    DISTINGUISHABILITY = "distinguishability"


@dataclass(frozen=True)
class Measurement:
    """What a metric function returns: its figures. The registry names it (id, family, source, risk),
    checks the figures are finite and maps ``flagged`` to input rows; the policy judges it.

    Args:
        value: the risk in [0, 1] (0 = private, 1 = no privacy); None is an ``error`` result.
        raw: the formula's own figure (may be unbounded or reversed); None: none.
        baseline: the same figure on the holdout/control, where defined.
        ci: the 95 % interval of ``value``, within [0, 1], where defined.
        details: parameters, per-column figures, counts.
        flagged: the synthetic rows at risk (content order); None: the metric flags none.
        sizes: rows used per table; empty: the row count of every table it needs.
        evidence: what the gate decides on: success counts on training and control targets per part
            (``k_t, n_t, k_c, n_c, e_star``); several parts = a maximum over columns, sizes or attacks.
        records: the records behind the figures, for a lineage; memory only.

    Example:
        ``return Measurement(value=share, raw=count, sizes={"synthetic": ctx.n("synthetic")})``
    """

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
    judges it (``policy.judge``), except for error and not_applicable, which are facts of the run.

    Args:
        id: the registry id, e.g. ``dcr_percentile``.
        family: the metric family (module).
        source: the seed section the formula comes from.
        risk: the risk it measures (WP29 or membership / re-identification).
        value: the risk in [0, 1]: 0 = private, 1 = no privacy.
        raw: the formula's own figure (may be unbounded or reversed).
        baseline: the same figure on the holdout/control, where defined.
        ci: the 95 % interval of ``value``, where defined.
        status: pass / warn / fail / error / not_applicable / inconclusive / nothing_to_attack; None:
            unjudged.
        threshold: the policy's threshold on ``value`` (or on the CI upper bound).
        on: what the threshold applies to: ``value`` (default) or ``ci_upper``.
        severity: ``ERROR`` (default) gates, ``WARN`` informs.
        optional: the policy allows this metric to be not_applicable.
        reason: why error / not_applicable / fail, one line.
        evidence: success counts on training and control per part (``k_t, n_t, k_c, n_c, e_star``).
        decision: what the gate decided on: the excess over the control, its lower bound at the fail
            level and upper bound at the pass level, the levels, the parts.
        sizes: rows used per table.
        seconds: wall time of this metric, shared queries excluded.
        details: parameters, per-column figures, counts.
        flagged: the at-risk synthetic rows (input row numbers); memory only, never serialised.
        flagged_hashes: the content hashes of the flagged rows; memory only.
        records: the records behind the figures; memory only.

    Example:
        ``evaluate(real, synthetic, holdout=holdout)["dcr_percentile"].passed``
    """

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
        return dict(to_jsonable(d))


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
