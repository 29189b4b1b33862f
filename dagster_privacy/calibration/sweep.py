"""The sweep: every evaluation of a calibration, one pool per repeat (leaky) or per parameter value."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl

from ..data import tables as tb
from ..data.loading import load
from ..decision import policy as pol
from ..engine.context import EvaluationContext
from ..errors import CalibrationError, safe_reason
from ..evaluation import Evaluation
from ..progress import progress_bar
from ..results import Status
from .risk_models import _leak, _parts
from .shared_context import _SharedContext


@dataclass
class Sweep:
    """Figures of every metric at every level of inserted risk and every repeat (no record values)."""

    model: str  # "leaky", "noisy" (leak fractions f) or "generator" (a generator's parameter)
    parameter: str  # "f" for the leak models, the generator's parameter name otherwise
    levels: list[float]  # in order of increasing inserted risk
    seeds: list[int]
    metrics: list[str]
    gate_on: dict[str, str]  # per metric: the figure its threshold applies to (value / ci_upper)
    values: np.ndarray  # (levels, repeats, metrics) value; NaN where not computed
    gated: np.ndarray  # the same for the gated figure (value or CI upper bound)
    se: np.ndarray  # standard error of the value from its 95 % CI (NaN without one)
    reasons: dict[str, str] = field(default_factory=dict)  # metric → why it was not computed somewhere
    sizes: dict[str, int] = field(default_factory=dict)  # rows per role at level 0 of the first repeat
    seconds: float = 0.0
    #: the decision rule's bounds of the excess (policy.judge), NaN where a metric has no evidence
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    #: the verbatim-copy detection floor each repeat of the no-risk level reported (power.py)
    floors: list[float | None] = field(default_factory=list)

    @property
    def leaks(self) -> bool:
        """Whether the levels are leak fractions f (the leaky and noisy-copy models)."""
        return self.model in ("leaky", "noisy")

    def column(self, metric_id: str, *, gated: bool = False) -> np.ndarray:
        """(levels, repeats) figures of one metric."""
        return (self.gated if gated else self.values)[:, :, self.metrics.index(metric_id)]


def _collect(evals: list[list[Evaluation]], ids: Sequence[str]) -> tuple[np.ndarray, ...]:
    """evals[level][repeat] → values, gated figures and CI-derived standard errors."""
    shape = (len(evals), len(evals[0]), len(ids))
    values, gated, se = np.full(shape, np.nan), np.full(shape, np.nan), np.full(shape, np.nan)
    z = NormalDist().inv_cdf(0.975)
    for i, row in enumerate(evals):
        for j, ev in enumerate(row):
            for m, mid in enumerate(ids):
                r = ev[mid]
                if r.status in (Status.ERROR, Status.NOT_APPLICABLE) or r.value is None:
                    continue
                values[i, j, m] = r.value
                g = r.gated_figure
                gated[i, j, m] = r.value if g is None else g
                if r.ci is not None:
                    se[i, j, m] = (r.ci[1] - r.ci[0]) / (2 * z)
    return values, gated, se


def _bounds(evals: list[list[Evaluation]], ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The decision rule's lower and upper bounds of each gate's excess (NaN without evidence)."""
    shape = (len(evals), len(evals[0]), len(ids))
    lower, upper = np.full(shape, np.nan), np.full(shape, np.nan)
    for i, row in enumerate(evals):
        for j, ev in enumerate(row):
            for m, mid in enumerate(ids):
                d = ev[mid].decision or {}  # every shape: not run and counts of people have no bounds
                if d.get("lower") is not None and d.get("upper") is not None:
                    lower[i, j, m], upper[i, j, m] = d["lower"], d["upper"]
    return lower, upper


def _reasons(evals: list[list[Evaluation]], ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for row in evals:
        for ev in row:
            for mid in ids:
                r = ev[mid]
                if mid not in out and r.status in (Status.ERROR, Status.NOT_APPLICABLE):
                    out[mid] = f"{r.status.value}: {r.reason or 'no reason given'}"
    return out


@dataclass(frozen=True)
class _Setup:
    """What every evaluation of a calibration shares: the resolved plan (policy.resolve, with an
    informing entry for each swept metric the policy does not configure)."""

    plan: pol.EvaluationPlan

    @classmethod
    def make(
        cls,
        policy: Any,
        metrics: Sequence[str] | None,
        column_kinds: Mapping[str, str] | None,
        key_columns: Sequence[str] | None,
        sensitive_columns: Sequence[str] | None,
    ) -> _Setup:
        return cls(
            pol.resolve(
                policy,
                metrics,
                key_columns=key_columns,
                sensitive_columns=sensitive_columns,
                column_kinds=column_kinds,
                unconfigured="inform",
            )
        )

    @property
    def policy(self) -> pol.Policy:
        return self.plan.policy

    @property
    def ids(self) -> list[str]:
        return list(self.plan.ids)

    @property
    def column_kinds(self) -> dict[str, str]:
        return self.plan.column_kinds

    def sweep(
        self,
        kind: str,
        parameter: str,
        levels: list[Any],
        seeds: list[int],
        evals: list[list[Evaluation]],
        sizes: dict[str, int],
        started: float,
    ) -> Sweep:
        """The Sweep of evaluations per level and repeat (one construction for leaky and generator)."""
        values, gated, se = _collect(evals, self.ids)
        lower, upper = _bounds(evals, self.ids)
        on: dict[str, str] = {m: self.plan.entry(m).on for m in self.ids}
        reasons = _reasons(evals, self.ids)
        floors = [ev.detection_floor.get("verbatim_copy_fraction") for ev in evals[0]]
        return Sweep(kind, parameter, levels, seeds, self.ids, on, values, gated, se, reasons, sizes,
                     time.perf_counter() - started, lower, upper, floors)  # fmt: skip

    def prepare(self, real: Any, synthetic: Any, holdout: Any, seed: int) -> EvaluationContext:
        from ..evaluate import prepare

        ctx, _ = prepare(
            real,
            synthetic,
            holdout,
            key_columns=self.plan.key_columns,
            sensitive_columns=self.plan.sensitive_columns,
            column_kinds=self.plan.column_kinds,
            seed=seed,
        )
        return ctx

    def context(
        self,
        ctx: EvaluationContext,
        synthetic: pl.DataFrame,
        *,
        base: EvaluationContext,
        rows: np.ndarray | None,
    ) -> _SharedContext:
        return _SharedContext(
            ctx.table("real"),
            synthetic,
            ctx.tables.get("holdout"),
            base=base,
            rows=rows,
            schema=ctx.schema,
            key_columns=ctx.key_columns,
            sensitive_columns=ctx.sensitive_columns,
            seed=ctx.seed,
        )

    def run(self, ctx: EvaluationContext) -> Evaluation:
        from ..evaluate import run_metrics

        return run_metrics(ctx, self.plan, free=False)  # a level's context may be the next levels' base


def _leaky_repeat(
    df: pl.DataFrame, seed: int, levels: Sequence[float], setup: _Setup, step: Callable[[str], None]
) -> tuple[list[Evaluation], dict[str, int]]:
    """All fractions of one repeat from one split and one encoded pool (release + all training rows)."""
    tr, co, re = _parts(df.height, seed)
    # prepare() validates and canonicalises once; its synthetic table is the release (f = 0 rows)
    first = setup.prepare(df[tr], df[re], df[co], seed)
    train_c, release_c, control_c = first.table("real"), first.table("synthetic"), first.table("holdout")
    pool = EvaluationContext(
        train_c,
        pl.concat([release_c, train_c]),
        control_c,
        schema=first.schema,
        key_columns=first.key_columns,
        sensitive_columns=first.sensitive_columns,
        seed=seed,
    )
    where = np.empty(df.height, dtype=np.int64)  # table row → pool row (prepare() put rows in content order)
    where[re[first.input_rows["synthetic"]]] = np.arange(re.size)
    where[tr[first.input_rows["real"]]] = re.size + np.arange(tr.size)
    out = []
    sizes: dict[str, int] = {}
    for f in levels:
        step(f"seed {seed}, f = {f:g}")
        _, syn = _leak(tr, re, f, seed)
        rows = where[syn]
        rows = rows[tb.content_order(pool.table("synthetic")[rows])]  # content order, as prepare() gives
        ctx = setup.context(first, pool.table("synthetic")[rows], base=pool, rows=rows)
        out.append(setup.run(ctx))
        sizes = sizes or dict(ctx.sizes)
    return out, sizes


def _leaky_sweep(
    df: pl.DataFrame,
    levels: Sequence[float],
    seeds: Sequence[int],
    setup: _Setup,
    *,
    progress: bool,
    what: str = "calibration",
) -> Sweep:
    t0 = time.perf_counter()
    per_repeat: list[list[Evaluation]] = []
    sizes: dict[str, int] = {}
    with progress_bar(progress, len(levels) * len(seeds), what) as step:
        for s in seeds:
            evs, sz = _leaky_repeat(df, s, levels, setup, step)
            per_repeat.append(evs)
            sizes = sizes or sz
    evals = [[per_repeat[j][i] for j in range(len(seeds))] for i in range(len(levels))]
    return setup.sweep("leaky", "f", list(levels), list(seeds), evals, sizes, t0)


def _levels(fractions: Sequence[float], extra: Sequence[float]) -> list[float]:
    vals = [float(f) for f in fractions] + [float(e) for e in extra]
    bad = [v for v in vals if not (0.0 <= v <= 1.0) or math.isnan(v)]
    if bad:
        raise CalibrationError(f"leak fractions must be in [0, 1], got {bad[0]:g}")
    return sorted({round(v, 12) for v in vals})


def _seeds(repeats: int, seed: int) -> list[int]:
    if repeats < 1:
        raise CalibrationError("repeats must be at least 1")
    return [seed + i for i in range(repeats)]


def _generated_sweep(  # noqa: PLR0913
    df: pl.DataFrame,
    levels: Sequence[Any],
    seeds: Sequence[int],
    setup: _Setup,
    make: Callable[[pl.DataFrame, Any, int], Any],
    *,
    model: str,
    parameter: str,
    label: str,
    progress: bool,
) -> Sweep:
    """Each repeat splits the table as the leaky model does (training 50 %, control 25 %); ``make(train,
    level, seed)`` gives the synthetic table, evaluated with training as real and control as holdout.
    Every level after the first borrows the first one's real / holdout encodings and queries."""
    t0 = time.perf_counter()
    evals: list[list[Evaluation]] = [[] for _ in levels]
    sizes: dict[str, int] = {}
    with progress_bar(progress, len(levels) * len(seeds), f"sweep {label}") as step:
        for s in seeds:
            tr, co, _ = _parts(df.height, s)
            train, control = df[tr], df[co]
            base: EvaluationContext | None = None
            for i, p in enumerate(levels):
                step(f"seed {s}, {parameter} = {p}")
                try:
                    syn = load(make(train, p, s), role="synthetic")
                except tb.TableError:
                    raise
                except Exception as exc:
                    raise CalibrationError(
                        f"the generator raised at {parameter} = {p}: {safe_reason(exc)}"
                    ) from None
                ctx = setup.prepare(train, syn, control, s)
                if base is None:
                    base = ctx
                else:
                    ctx = setup.context(ctx, ctx.table("synthetic"), base=base, rows=None)
                evals[i].append(setup.run(ctx))
                sizes = sizes or dict(ctx.sizes)
    numeric = [float(v) if isinstance(v, (int, float)) else v for v in levels]
    return setup.sweep(model, parameter, numeric, list(seeds), evals, sizes, t0)
