"""One metric's policy entry: threshold, what it applies to, severity, optional, parameters. Its own module
so that the registry can validate each metric's default entry when the metric registers (registration.py)
and the policy can build presets from them (decision/policy.py), without either importing the other."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..results import Severity


class MetricPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    threshold: float | None = Field(None, description="fail when the gated figure exceeds it; None: inform")
    on: Literal["value", "ci_upper"] = Field("value", description="gate on value or on the CI upper bound")
    severity: Severity = Field(Severity.ERROR, description="ERROR gates, WARN informs")
    optional: bool = Field(False, description="not_applicable does not fail the verdict")
    params: dict[str, Any] = Field(default_factory=dict, description="metric parameters")
    weight: float = Field(
        1.0,
        ge=0.01,
        le=10.0,
        description="the gate's share of the policy's false_alarm (weighted Bonferroni: false_alarm × "
        "weight / the gates' total weight)",
    )

    @field_validator("threshold", mode="before")
    @classmethod
    def _not_a_boolean(cls, v: Any) -> Any:
        if isinstance(v, bool):  # YAML `true` would read as 1.0: a gate that can never fail
            raise ValueError("threshold must be a number, not true/false")
        return v

    @field_validator("threshold")
    @classmethod
    def _unit(cls, v: float | None) -> float | None:
        if v is not None and not 0.0 <= v <= 1.0:  # NaN fails this too
            raise ValueError("threshold must be in [0, 1]")
        return v

    @model_validator(mode="after")
    def _gates_something(self) -> MetricPolicy:
        if self.severity is Severity.ERROR and self.threshold is None:
            raise ValueError("a gating (ERROR) entry needs a threshold; use severity WARN to report only")
        return self

    @property
    def blocks_on_failure(self) -> bool:
        """A gating entry: ERROR severity and a threshold to fail (an ERROR entry built without one,
        calibration's informing entry, can never fail)."""
        return self.severity is Severity.ERROR and self.threshold is not None
