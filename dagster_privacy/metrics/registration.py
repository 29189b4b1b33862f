"""The metric registry: ``@metric(...)`` registers a pure function (ctx, **params) → Measurement once,
with everything else a metric needs declared beside it: its risk, its default policy entry (the
``standard`` preset is built from these), and what the common tests expect of it. Adding a metric is its
module plus its row in docs/metrics.md; nothing else lists the ids."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from ..errors import Aborted, NotApplicable, safe_reason
from ..results import Measurement, MetricResult, Risk, Status
from .metric_policy import MetricPolicy

MetricFn = Callable[..., Measurement]


@dataclass(frozen=True)
class Expect:
    """What a metric gives on the common tests' two known answers (tests/metrics/test_common.py): at
    synthetic = real, and on an independent synthetic table (docs/metrics.md says the same in words).

    Args:
        copy_min: the value at synthetic = real is at least this; None: the metric does not apply there.
        indep_max: the value on an independent synthetic table is at most this; None: not checked.
        copy_max: the value at synthetic = real is at most this; default 1.0 (a classifier cannot see
            a copy).

    Example:
        ``@metric("my_share", ..., expect=Expect(copy_min=0.999, indep_max=0.1))``
    """

    copy_min: float | None  # value at synthetic = real is at least this (None: not applicable there)
    indep_max: float | None  # value on an independent synthetic table is at most this
    copy_max: float = 1.0  # value at synthetic = real is at most this (a classifier cannot see a copy)


#: a default policy entry, as a policy YAML writes it: threshold, severity, and optionally on / optional
DefaultEntry = dict[str, Any]


@dataclass(frozen=True)
class MetricSpec:
    id: str
    family: str
    source: str
    risk: Risk
    needs: tuple[str, ...]
    func: MetricFn
    default: DefaultEntry
    expect: Expect
    params: dict[str, Any] = field(default_factory=dict)
    #: neighbour queries (space, query side, reference side, k) the metric asks the context for; the
    #: evaluation computes each once with the largest k any selected metric declares
    queries: tuple[tuple[str, str, str, int], ...] = ()
    #: whether it may read an encoded space or a neighbour query (False: tables, codes and hashes only)
    spaces: bool = True
    #: whether its figure rises as synthetic rows come closer to real records (False: nndr, whose near
    #: copies score 0 and independent rows 0.6–0.9): a warning of one that is not, flagging no row,
    #: advises no regeneration
    monotone: bool = True

    @property
    def summary(self) -> str:
        doc = inspect.getdoc(self.func) or ""
        return doc.splitlines()[0] if doc else ""


_REGISTRY: dict[str, MetricSpec] = {}
#: report order of the families (architecture.md "Metric ids"); within a family, registration order
FAMILIES = ("simulation", "distance", "classifiers", "holdout", "exposure", "attacks")


def metric(  # noqa: PLR0913
    id: str,
    *,
    family: str,
    source: str,
    risk: Risk,
    default: DefaultEntry,
    expect: Expect,
    needs: Sequence[str] = ("real", "synthetic"),
    queries: Sequence[tuple[str, str, str, int]] = (),
    spaces: bool = True,
    monotone: bool = True,
) -> Callable[[MetricFn], MetricFn]:
    """Register a metric. Its keyword-only parameters with defaults are its parameters; ``default`` is
    its entry in the ``standard`` policy; ``expect`` what the common tests check; ``queries`` declares
    its shared neighbour queries so the context can compute each once at the largest k; ``spaces=False``
    that it reads no encoded space or query, so the evaluation may free them before it runs;
    ``monotone=False`` that its figure does not rise with closeness to real records.

    Args:
        id: the registry id (unique); the check's name in Dagster, after the checks' prefix.
        family: the metric family (``simulation``, ``distance``, ``classifiers``, ``holdout``,
            ``exposure``, ``attacks``): the report's order.
        source: the seed section the formula comes from (docs/sources.md resolves "seed NNN").
        risk: the ``Risk`` it measures.
        default: its entry in the ``standard`` policy, as a policy YAML writes it (``threshold``,
            ``severity``, optionally ``on`` / ``optional``); validated here.
        expect: what the common tests check of it (``Expect``).
        needs: the tables it reads; default real and synthetic (a missing one: not_applicable).
        queries: its shared neighbour queries, ``(space, query side, reference side, k)`` each.
        spaces: False: it reads no encoded space or neighbour query.
        monotone: False: its figure does not rise with closeness to real records.

    Returns:
        A decorator that registers the function ``(ctx, **params) → Measurement`` and returns it as is.

    Raises:
        ValueError: the id registered twice, or a default entry that does not validate.
        TypeError: ``risk`` not a ``Risk``.

    Example:
        .. code-block:: python

            @metric("my_share", family="holdout", source="seed 004 §4.2.2", risk=Risk.REIDENTIFICATION,
                    default={"threshold": 0.02, "severity": "ERROR"}, needs=("real", "synthetic", "holdout"),
                    expect=Expect(copy_min=0.999, indep_max=0.1))
            def my_share(ctx: EvaluationContext, *, alpha: float = 0.02) -> Measurement: ...
    """

    def register(func: MetricFn) -> MetricFn:
        if id in _REGISTRY:
            raise ValueError(f"metric {id!r} registered twice")
        if not isinstance(risk, Risk):
            raise TypeError(f"metric {id!r}: risk must be a results.Risk")
        try:  # a bad default would break every preset later, for every user: refuse it here
            MetricPolicy.model_validate(default)
        except ValidationError as exc:
            raise ValueError(f"metric {id!r}: default entry: {exc.errors()[0]['msg']}") from None
        params = {
            name: p.default
            for name, p in inspect.signature(func).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty
        }
        _REGISTRY[id] = MetricSpec(
            id,
            family,
            source,
            Risk(risk),
            tuple(needs),
            func,
            dict(default),
            expect,
            params,
            tuple(queries),
            spaces=spaces,
            monotone=monotone,
        )
        return func

    return register


def registered() -> dict[str, MetricSpec]:
    """Every metric registered so far, by family (FAMILIES), then in registration order. The complete
    registry is ``dagster_privacy.metrics.registry()``: importing that package registers every metric
    (this module imports no metric, so the dependency points one way)."""
    rank = {f: i for i, f in enumerate(FAMILIES)}
    specs = sorted(_REGISTRY.values(), key=lambda s: rank.get(s.family, len(FAMILIES)))  # stable
    return {s.id: s for s in specs}


def invalid_figures(m: Measurement) -> str | None:
    """Why a measurement's figures cannot gate anything (None: they can). A non-finite distance, density
    or score anywhere upstream surfaces here as a non-finite or out-of-range figure: an error, never 0.0."""
    if m.value is None:
        return "metric returned no value"
    for name, x in (("value", m.value), ("raw", m.raw), ("baseline", m.baseline)):
        if x is not None and not math.isfinite(x):
            return f"its {name} is not a finite number"
    if not 0.0 <= m.value <= 1.0:
        return f"value {m.value:.6g} outside [0, 1]"
    if m.ci is not None:
        lo, hi = m.ci
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "its confidence interval is not finite"
        if not 0.0 <= lo <= hi <= 1.0:
            return f"confidence interval [{lo:.6g}, {hi:.6g}] is not an ordered interval within [0, 1]"
    for part in m.evidence or ():
        k_t, n_t, k_c, n_c = (float(part[f]) for f in ("k_t", "n_t", "k_c", "n_c"))
        if not all(math.isfinite(x) for x in (k_t, n_t, k_c, n_c)) or not (
            0 <= k_t <= n_t and 0 <= k_c <= max(n_c, 0) and n_t >= 1
        ):
            return "its evidence counts are not counts of successes within their trials"
    return None


def run(spec: MetricSpec, ctx: Any, params: dict[str, Any] | None = None) -> MetricResult:
    """Run one metric into an unjudged result. An exception is an ``error`` result with its reason, never
    a 0.0; ``NotApplicable`` a ``not_applicable`` one; non-finite figures an ``error``."""
    named: dict[str, Any] = {
        "id": spec.id, "family": spec.family, "source": spec.source, "risk": spec.risk.value
    }  # fmt: skip
    missing = [role for role in spec.needs if not ctx.has(role)]
    if missing:
        return MetricResult(**named, status=Status.NOT_APPLICABLE, reason=f"needs a {missing[0]} table")
    unknown = set(params or {}) - set(spec.params)
    if unknown:
        return MetricResult(
            **named, status=Status.ERROR, reason=f"unknown parameter(s): {', '.join(sorted(unknown))}"
        )
    shared_before = ctx.spent_seconds
    t0 = time.perf_counter()
    m: Measurement | None = None
    status: Status | None = None
    reason: str | None = None
    sizes: dict[str, int] = {}
    details: dict[str, Any] = {}
    try:
        m = spec.func(ctx, **(params or {}))
        if not isinstance(m, Measurement):
            raise TypeError(f"metric {spec.id} returned {type(m).__name__}, not a Measurement")
    except Aborted:  # the evaluation ends: no metric is judged on what an executor failed to compute
        raise
    except NotApplicable as exc:
        status, reason = Status(exc.status), safe_reason(exc)
        sizes, details = exc.sizes, exc.details
    except Exception as exc:  # fail closed: the reason travels, the value does not pretend
        status, reason = Status.ERROR, safe_reason(exc)
    seconds = max(0.0, time.perf_counter() - t0 - (ctx.spent_seconds - shared_before))
    figures: dict[str, Any] = {}
    flagged = flagged_hashes = records = None
    if m is not None:
        records = m.records
        reason = invalid_figures(m)
        status = Status.ERROR if reason else None
        figures = {"value": m.value, "raw": m.raw, "baseline": m.baseline, "ci": m.ci}
        if m.evidence is not None:
            figures["evidence"] = [dict(p) for p in m.evidence]
        sizes, details = dict(m.sizes), dict(m.details)
        if m.flagged is not None:  # content (for remediation) and input rows (not the content order)
            flagged, flagged_hashes = m.flagged, np.unique(ctx.row_hashes("synthetic")[m.flagged])
            if "synthetic" in getattr(ctx, "input_rows", {}):
                flagged = np.sort(ctx.input_rows["synthetic"][m.flagged])
    return MetricResult(
        **named,
        **figures,
        status=status,
        reason=reason,
        seconds=seconds,
        sizes=sizes or {role: ctx.n(role) for role in spec.needs if ctx.has(role)},
        details={"params": {**spec.params, **(params or {})}, **details},
        flagged=flagged,
        flagged_hashes=flagged_hashes,
        records=records,
    )
