"""The metric registry: ``@metric(...)`` registers a pure function (ctx, **params) → MetricResult once."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import safe_reason
from .results import MetricResult, Status

MetricFn = Callable[..., MetricResult]


@dataclass(frozen=True)
class MetricSpec:
    id: str
    family: str
    source: str
    risk: str
    needs: tuple[str, ...]
    func: MetricFn
    params: dict[str, Any] = field(default_factory=dict)
    #: neighbour queries (space, query side, reference side, k) the metric asks the context for; the
    #: evaluation computes each once with the largest k any selected metric declares
    queries: tuple[tuple[str, str, str, int], ...] = ()

    @property
    def summary(self) -> str:
        doc = inspect.getdoc(self.func) or ""
        return doc.splitlines()[0] if doc else ""


_REGISTRY: dict[str, MetricSpec] = {}
#: report order of the families (architecture.md "Metric ids"); within a family, registration order
FAMILIES = ("simulation", "distance", "classifiers", "holdout", "attacks")


def metric(id: str, *, family: str, source: str, risk: str, needs: Sequence[str] = ("real", "synthetic"),
           queries: Sequence[tuple[str, str, str, int]] = ()) -> Callable[[MetricFn], MetricFn]:
    """Register a metric. Its keyword-only parameters with defaults are its parameters; ``queries``
    declares its shared neighbour queries so the context can compute each once at the largest k."""

    def register(func: MetricFn) -> MetricFn:
        if id in _REGISTRY:
            raise ValueError(f"metric {id!r} registered twice")
        params = {
            name: p.default
            for name, p in inspect.signature(func).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
        }
        _REGISTRY[id] = MetricSpec(id, family, source, risk, tuple(needs), func, params, tuple(queries))
        return func

    return register


def registered() -> dict[str, MetricSpec]:
    """Every metric registered so far, by family (FAMILIES), then in registration order. The complete
    registry is ``dagster_privacy.metrics.registry()``: importing that package registers every metric
    (this module imports no metric, so the dependency points one way)."""
    rank = {f: i for i, f in enumerate(FAMILIES)}
    specs = sorted(_REGISTRY.values(), key=lambda s: rank.get(s.family, len(FAMILIES)))  # stable
    return {s.id: s for s in specs}


def invalid_figures(result: MetricResult) -> str | None:
    """Why a result's figures cannot gate anything (None: they can). A non-finite distance, density or
    score anywhere upstream surfaces here as a non-finite or out-of-range figure: an error, never 0.0."""
    if result.value is None:
        return "metric returned no value"
    for name, x in (("value", result.value), ("raw", result.raw), ("baseline", result.baseline)):
        if x is not None and not math.isfinite(x):
            return f"its {name} is not a finite number"
    if not 0.0 <= result.value <= 1.0:
        return f"value {result.value:.6g} outside [0, 1]"
    if result.ci is not None:
        lo, hi = result.ci
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "its confidence interval is not finite"
        if not 0.0 <= lo <= hi <= 1.0:
            return f"confidence interval [{lo:.6g}, {hi:.6g}] is not an ordered interval within [0, 1]"
    return None


def run(spec: MetricSpec, ctx: Any, params: dict[str, Any] | None = None) -> MetricResult:
    """Run one metric; an exception becomes an ``error`` result with its reason, never a 0.0."""
    missing = [role for role in spec.needs if not ctx.has(role)]
    base = {"family": spec.family, "source": spec.source, "risk": spec.risk}
    if missing:
        return MetricResult.not_applicable(spec.id, f"needs a {missing[0]} table", **base)
    unknown = set(params or {}) - set(spec.params)
    if unknown:
        return MetricResult(id=spec.id, status=Status.ERROR, **base,
                            reason=f"unknown parameter(s): {', '.join(sorted(unknown))}")
    shared_before = ctx.spent_seconds
    t0 = time.perf_counter()
    try:
        result = spec.func(ctx, **(params or {}))
    except Exception as exc:  # fail closed: the reason travels, the value does not pretend
        result = MetricResult(id=spec.id, status=Status.ERROR,
                              reason=safe_reason(exc))
    wall = time.perf_counter() - t0
    result.seconds = max(0.0, wall - (ctx.spent_seconds - shared_before))
    result.family, result.source, result.risk = spec.family, spec.source, spec.risk
    if result.status is not Status.ERROR and result.status is not Status.NOT_APPLICABLE:
        problem = invalid_figures(result)
        if problem:
            result.status, result.reason = Status.ERROR, problem
    if result.flagged is not None:  # content (for remediation) and input rows (not the content order)
        result.flagged_hashes = np.unique(ctx.row_hashes("synthetic")[result.flagged])
        if "synthetic" in getattr(ctx, "input_rows", {}):
            result.flagged = np.sort(ctx.input_rows["synthetic"][result.flagged])
    if not result.sizes:
        result.sizes = {role: ctx.n(role) for role in spec.needs if ctx.has(role)}
    result.details = {**{"params": {**spec.params, **(params or {})}}, **result.details}
    return result
