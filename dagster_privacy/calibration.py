"""Risk models of seed 004 §5: insert a known amount of risk and see which metrics respond.

- **Leaky risk model** (§5.1.1, :func:`calibrate`): the real table is cut into training (50 %), control
  (25 %) and release (25 %); the "synthetic" table is the release plus a fraction f of the training rows
  copied verbatim. Every metric of the policy is evaluated with the training part as the real table and
  the control part as the holdout, for each f and each seeded repeat.
- **Overfitting and DP risk models** (§5.1.2–5.1.3, :func:`sweep_generator`): the user's generator
  (training table, parameter → synthetic table) is trained on the training part for each value of its
  parameter (epochs, privacy budget, leaf size …), with the same outputs.
- **Outlier sensitivity** (§5.2.1, ``outliers=``): the leaky model is repeated after removing x % of the
  rows with the highest local outlier factor on the one-hot + min-max encoding; the change is reported.

The outcome (:class:`Calibration`) is a seed-004-Table-2-style response table per metric (value at no
risk and at max risk, stdev, monotone, responds), the correlation matrix between metrics (seed 004
Appendix A), flags on metrics that do not respond, and calibrated thresholds: per metric the figure a
leak of the chosen level (default 5 %) exceeds with high probability on this data, written as a policy
file ``load_policy`` reads. Outputs carry figures only, never a value of a record.

Efficiency: for one seed the training, control and release parts are the same for every f, and every
synthetic table is a selection of rows of release + training. So each repeat encodes one *pool*
(release + all training rows) once and every fraction's context borrows from it: the encodings, row
hashes and codes of its rows, every query that does not involve the synthetic table (real→real,
holdout→real …) and every query *from* synthetic rows (a query row's neighbours do not depend on the
other query rows, so they are rows of the pool's answer). Only queries *into* the synthetic table are
recomputed per f. Results equal a plain ``evaluate()`` of the same split (tests/test_calibration.py).
"""

from __future__ import annotations

import inspect
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl

from . import policy as pol
from . import tables as tb
from .context import EvaluationContext
from .errors import OwnMessage, safe_reason
from .loading import load
from .neighbors import Neighbors
from .registry import registry as metric_registry
from .results import Evaluation, Status, _clean

FORMAT = "dagster-privacy/calibration/1"
#: fractions of the training table leaked when none are given
DEFAULT_FRACTIONS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
DEFAULT_LEAK_LEVEL = 0.05
#: a mean response smaller than this (in value units) is "flat", whatever the noise
MIN_RESPONSE = 0.01
#: a drop between consecutive levels smaller than this is not a break of monotonicity
MIN_DROP = 0.005

#: a generator for the overfitting / DP risk models: (training table, parameter) → synthetic table.
#: It may accept a keyword ``seed`` (the repeat's seed) to make its own draws reproducible.
Generator = Callable[..., Any]


def level_label(v: Any) -> str:
    """A level for messages: numbers as %g, anything else (a generator's parameter) as text."""
    return f"{v:g}" if isinstance(v, (int, float)) else str(v)


class CalibrationError(OwnMessage, ValueError):
    """Calibration cannot run (bad fractions, a generator that raised …): one line, no record values."""


# ------------------------------------------------------------------------------ the leaky risk model


@dataclass(frozen=True)
class LeakySplit:
    """train 50 % / control 25 % / release 25 %; synthetic = release + a fraction f of train rows."""

    train: pl.DataFrame
    control: pl.DataFrame
    release: pl.DataFrame
    synthetic: pl.DataFrame
    leaked: np.ndarray  # indices into train of the copied rows
    fraction: float
    seed: int


def _parts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices of train (n // 2), control (n // 4) and release (the rest) from a seeded permutation."""
    perm = np.random.default_rng(seed).permutation(n)
    n_train, n_control = n // 2, n // 4
    return perm[:n_train], perm[n_train:n_train + n_control], perm[n_train + n_control:]


def _leak(train: np.ndarray, release: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(leaked table rows, synthetic table rows): round(f·|train|) train rows drawn from the stream
    [seed, 1] (so the split does not move with f), appended to the release and shuffled."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("the leak fraction must be in [0, 1]")
    n_leak = int(round(fraction * train.size))
    rng = np.random.default_rng([seed, 1])
    leak = np.sort(rng.choice(train, size=n_leak, replace=False)) if n_leak else np.array([], dtype=np.int64)
    syn = np.concatenate([release, leak])
    return leak, syn[rng.permutation(syn.size)]


def leaky_split(df: pl.DataFrame, fraction: float, *, seed: int = 0) -> LeakySplit:
    """The leaky risk model of seed 004 §5.1.1, built exactly as ``shared/tools/make_leaky_splits.py``.

    A seeded permutation cuts train (n // 2), control (n // 4) and release (the rest); round(f·|train|)
    train rows, drawn from a second stream seeded [seed, 1], are copied verbatim into the synthetic
    table, which is then shuffled. The same seed gives the same three parts whatever f.
    """
    tr, co, re = _parts(df.height, seed)
    leak, syn = _leak(tr, re, fraction, seed)
    pos = {int(v): i for i, v in enumerate(tr)}
    return LeakySplit(df[tr], df[co], df[re], df[syn], np.array([pos[int(v)] for v in leak], dtype=np.int64),
                      float(fraction), int(seed))


# ------------------------------------------------------------------ a context that borrows its base's


class _SharedContext(EvaluationContext):
    """An evaluation context that borrows from ``base`` whatever does not depend on its synthetic table.

    ``base`` has the same real and holdout tables (same schema, same seed). With ``rows`` given, the
    synthetic table is ``base``'s synthetic rows ``rows`` (the leaky pool): encodings, hashes and codes
    of synthetic rows and every query *from* synthetic rows are rows of the base's. Without ``rows``
    (a generator sweep) only the real / holdout side is borrowed. Only the public context API is
    overridden, so a metric cannot tell the difference.
    """

    def __init__(self, real: pl.DataFrame, synthetic: pl.DataFrame, holdout: pl.DataFrame | None, *,
                 base: EvaluationContext, rows: np.ndarray | None = None, **kw: Any) -> None:
        super().__init__(real, synthetic, holdout, **kw)
        self.encoder = base.encoder  # fitted on the same real table
        self._base = base
        self._rows = rows
        self._slices: dict[str, Any] = {}

    @property
    def spent_seconds(self) -> float:
        # shared work done by the base on this context's behalf is not a metric's own time
        return super().spent_seconds + self._base.spent_seconds

    def _slice(self, name: str, full: Callable[[], np.ndarray]) -> np.ndarray:
        if name not in self._slices:
            assert self._rows is not None
            self._slices[name] = full()[self._rows]
        return self._slices[name]

    def _per_row(self, name: str, role: str, own: Callable[[str], np.ndarray],
                 base: Callable[[str], np.ndarray]) -> np.ndarray:
        """Real/holdout: the base's; synthetic: its rows of the base's pool, or this context's own."""
        if role != "synthetic":
            return base(role)
        if self._rows is None:
            return own(role)
        return self._slice(name, lambda: base("synthetic"))

    def euclidean(self, role: str) -> np.ndarray:
        return self._per_row("euclidean", role, super().euclidean, self._base.euclidean)

    @property
    def projection(self):  # type: ignore[override]  # fitted on the real table: the base's
        return self._base.projection

    def projected(self, role: str) -> np.ndarray:
        return self._per_row("projected", role, super().projected, self._base.projected)

    def row_hashes(self, role: str) -> np.ndarray:
        return self._per_row("hashes", role, super().row_hashes, self._base.row_hashes)

    def codes(self, role: str) -> np.ndarray:
        # codes are shared by all tables of one context, so borrow all of them or none
        if self._rows is None:
            return super().codes(role)
        if role != "synthetic":
            return self._base.codes(role)
        return self._slice("codes", lambda: self._base.codes("synthetic"))

    def neighbors(self, space, query: str, reference: str, k: int = 1, *,  # type: ignore[override]
                  columns: Sequence[str] | None = None) -> Neighbors:
        if "synthetic" not in (query, reference):
            return self._base.neighbors(space, query, reference, k, columns=columns)
        if self._rows is not None and query == "synthetic" and reference != "synthetic":
            nn = self._base.neighbors(space, query, reference, k, columns=columns)
            return Neighbors(nn.dist[self._rows], nn.idx[self._rows], nn.seconds)
        return super().neighbors(space, query, reference, k, columns=columns)


# ------------------------------------------------------------------------------------ the sweep


@dataclass
class Sweep:
    """Figures of every metric at every level of inserted risk and every repeat (no record values)."""

    model: str  # "leaky" or "generator"
    parameter: str  # "f" for the leaky model, the generator's parameter name otherwise
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


def _reasons(evals: list[list[Evaluation]], ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for row in evals:
        for ev in row:
            for mid in ids:
                r = ev[mid]
                if mid not in out and r.status in (Status.ERROR, Status.NOT_APPLICABLE):
                    out[mid] = f"{r.status.value}: {r.reason or 'no reason given'}"
    return out


@contextmanager
def _progress(enabled: bool, total: int, what: str) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on stderr (terminal only); yields step(description)."""
    if not enabled or not sys.stderr.isatty():
        yield lambda _desc: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), console=Console(stderr=True), transient=True)
    task = prog.add_task(what, total=total)
    prog.start()
    state = {"first": True}

    def step(desc: str) -> None:
        if not state["first"]:
            prog.advance(task)
        state["first"] = False
        prog.update(task, description=f"{what}: {desc}")

    try:
        yield step
    finally:
        prog.stop()


def swept_entry(policy: pol.Policy, metric_id: str) -> pol.MetricPolicy:
    """The policy's entry, or for a metric it does not configure a blank one (no threshold, gate on
    value): calibration measures it and may give it a threshold."""
    return policy.metrics.get(metric_id) or pol.MetricPolicy.model_construct()


@dataclass(frozen=True)
class _Setup:
    """What every evaluation of a calibration shares: policy, metric ids, threat model."""

    policy: pol.Policy
    ids: list[str]
    key_columns: list[str] | None
    sensitive_columns: list[str] | None
    column_kinds: dict[str, str]

    @property
    def run_policy(self) -> pol.Policy:
        """The policy with an informing entry for each swept metric it does not configure (a sweep may
        measure more metrics than the policy gates; an evaluation would refuse them)."""
        blank = {m: swept_entry(self.policy, m) for m in self.ids if m not in self.policy.metrics}
        return self.policy.model_copy(update={"metrics": {**self.policy.metrics, **blank}}) if blank else self.policy

    @classmethod
    def make(cls, policy: Any, metrics: Sequence[str] | None, column_kinds: Mapping[str, str] | None,
             key_columns: Sequence[str] | None, sensitive_columns: Sequence[str] | None) -> _Setup:
        p = pol.load_policy(policy)
        specs = metric_registry()
        wanted = list(metrics) if metrics else (list(p.metrics) or list(specs))
        unknown = [m for m in wanted if m not in specs]
        if unknown:
            raise tb.TableError(f"unknown metric id(s): {', '.join(unknown)} (see `dagster-privacy metrics`)")
        ids = [m for m in specs if m in set(wanted)]
        tm = p.threat_model
        return cls(p, ids,
                   list(key_columns) if key_columns is not None else tm.key_columns,
                   list(sensitive_columns) if sensitive_columns is not None else tm.sensitive_columns,
                   {**tm.column_kinds, **(column_kinds or {})})

    def prepare(self, real: Any, synthetic: Any, holdout: Any, seed: int) -> EvaluationContext:
        from .evaluate import prepare

        ctx, _ = prepare(real, synthetic, holdout, key_columns=self.key_columns,
                         sensitive_columns=self.sensitive_columns, column_kinds=self.column_kinds, seed=seed)
        return ctx

    def context(self, ctx: EvaluationContext, synthetic: pl.DataFrame, *, base: EvaluationContext,
                rows: np.ndarray | None) -> _SharedContext:
        return _SharedContext(ctx.table("real"), synthetic, ctx.tables.get("holdout"), base=base, rows=rows,
                              schema=ctx.schema, key_columns=ctx.key_columns,
                              sensitive_columns=ctx.sensitive_columns, seed=ctx.seed)

    def run(self, ctx: EvaluationContext) -> Evaluation:
        from .evaluate import run_metrics

        return run_metrics(ctx, self.ids, self.run_policy)


def _leaky_repeat(df: pl.DataFrame, seed: int, levels: Sequence[float], setup: _Setup,
                  step: Callable[[str], None]) -> tuple[list[Evaluation], dict[str, int]]:
    """All fractions of one repeat from one split and one encoded pool (release + all training rows)."""
    tr, co, re = _parts(df.height, seed)
    # prepare() validates and canonicalises once; its synthetic table is the release (f = 0 rows)
    first = setup.prepare(df[tr], df[re], df[co], seed)
    train_c, release_c, control_c = first.table("real"), first.table("synthetic"), first.table("holdout")
    pool = EvaluationContext(train_c, pl.concat([release_c, train_c]), control_c, schema=first.schema,
                             key_columns=first.key_columns, sensitive_columns=first.sensitive_columns, seed=seed)
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


def _leaky_sweep(df: pl.DataFrame, levels: Sequence[float], seeds: Sequence[int], setup: _Setup, *,
                 progress: bool, what: str = "calibration") -> Sweep:
    t0 = time.perf_counter()
    per_repeat: list[list[Evaluation]] = []
    sizes: dict[str, int] = {}
    with _progress(progress, len(levels) * len(seeds), what) as step:
        for s in seeds:
            evs, sz = _leaky_repeat(df, s, levels, setup, step)
            per_repeat.append(evs)
            sizes = sizes or sz
    evals = [[per_repeat[j][i] for j in range(len(seeds))] for i in range(len(levels))]
    values, gated, se = _collect(evals, setup.ids)
    return Sweep("leaky", "f", list(levels), list(seeds), setup.ids,
                 {m: swept_entry(setup.policy, m).on for m in setup.ids}, values, gated, se,
                 _reasons(evals, setup.ids), sizes, time.perf_counter() - t0)


# --------------------------------------------------------------------------------- the analysis


@dataclass
class Response:
    """One row of the seed-004-Table-2-style response table."""

    id: str
    no_risk: float | None  # mean value at the first level (no inserted risk)
    at_leak: float | None  # mean value at the leak level (None when the level is not swept)
    max_risk: float | None  # mean value at the last level (maximum inserted risk)
    stdev: float | None  # stdev over repeats at max risk (seed 004 Table 2)
    means: list[float | None]
    stdevs: list[float | None]
    monotone: bool
    responds: bool
    flag: str | None  # why the metric is flagged (does not respond, non-monotone, errors)

    def to_dict(self) -> dict[str, Any]:
        return _clean(self.__dict__)


@dataclass
class Threshold:
    """A calibrated threshold: the figure a leak at ``level`` exceeds with high probability."""

    id: str
    on: str
    previous: float | None  # the policy's threshold before calibration
    threshold: float | None  # the threshold written (calibrated, or the previous one when not calibrated)
    calibrated: bool
    separates: bool  # the no-risk upper bound lies below the leak's lower bound
    clean_high: float | None  # upper one-sided bound of the gated figure without risk
    leak_low: float | None  # lower one-sided bound of the gated figure at the leak level
    note: str

    def to_dict(self) -> dict[str, Any]:
        return _clean(self.__dict__)


def _noise(sweep: Sweep, m: int, *, gated: bool) -> tuple[np.ndarray, float]:
    """Per level the standard deviation of one repeat's figure, and the pooled one.

    Per level: the larger of the sample stdev over repeats, the pooled stdev over all levels (more
    degrees of freedom than 2 or 3 repeats give) and the metric's own standard error from its CI.
    """
    x = (sweep.gated if gated else sweep.values)[:, :, m]
    r = x.shape[1]
    with np.errstate(invalid="ignore"), _quiet():
        sd = np.nanstd(x, axis=1, ddof=1) if r > 1 else np.zeros(x.shape[0])
        pooled = float(np.sqrt(np.nanmean(sd**2))) if r > 1 and np.isfinite(sd).any() else 0.0
        se = np.nanmean(sweep.se[:, :, m], axis=1)
    per = np.fmax(np.fmax(np.nan_to_num(sd), pooled), np.nan_to_num(se))
    return per, pooled


@contextmanager
def _quiet() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _level_index(levels: Sequence[float], level: float | None) -> int | None:
    if level is None:
        return None
    for i, v in enumerate(levels):
        if math.isclose(v, level, rel_tol=0, abs_tol=1e-12):
            return i
    return None


def responses(sweep: Sweep, *, leak_index: int | None = None) -> list[Response]:
    """Per metric: mean at no / leak / max risk, stdev, monotone and responding, and a flag."""
    out = []
    for m, mid in enumerate(sweep.metrics):
        x = sweep.values[:, :, m]
        with _quiet():
            means = np.nanmean(x, axis=1)
            sds = np.nanstd(x, axis=1, ddof=1) if x.shape[1] > 1 else np.zeros(x.shape[0])
        _, pooled = _noise(sweep, m, gated=False)
        missing = np.isnan(x).any()
        if missing:
            reason = sweep.reasons.get(mid, "not computed at every level")
            out.append(Response(mid, None, None, None, None, _clean(means), _clean(sds), False, False,
                                f"not computed at every level ({reason})"))
            continue
        drop_tol = max(MIN_DROP, 2.0 * pooled)
        diffs = np.diff(means)
        monotone = bool((diffs >= -drop_tol).all())
        delta = float(means[-1] - means[0])
        responds = delta > max(MIN_RESPONSE, 2.0 * pooled)
        flags = []
        if not responds:
            flags.append(f"does not respond: change {delta:+.4f} from no risk to max risk "
                         f"(needs > {max(MIN_RESPONSE, 2.0 * pooled):.4f}: max(0.01, 2 × noise))")
        if not monotone:
            i = int(np.argmin(diffs))
            flags.append(f"non-monotone: drops {-diffs[i]:.4f} from {sweep.parameter} = {level_label(sweep.levels[i])} "
                         f"to {level_label(sweep.levels[i + 1])}")
        out.append(Response(
            mid, float(means[0]), None if leak_index is None else float(means[leak_index]), float(means[-1]),
            float(sds[-1]), [float(v) for v in means], [float(v) for v in sds], monotone, responds,
            "; ".join(flags) or None))
    return out


def correlation(sweep: Sweep) -> np.ndarray:
    """Pearson correlation between metrics over every (level, repeat) run (seed 004 Appendix A).

    NaN where a metric is constant or not computed everywhere (a correlation is undefined there).
    """
    x = sweep.values.reshape(-1, len(sweep.metrics))
    n = len(sweep.metrics)
    out = np.full((n, n), np.nan)
    with _quiet():
        ok = ~np.isnan(x).any(axis=0) & (np.nanstd(x, axis=0) > 1e-12)
    idx = np.nonzero(ok)[0]
    if idx.size:
        c = np.corrcoef(x[:, idx], rowvar=False) if idx.size > 1 else np.ones((1, 1))
        out[np.ix_(idx, idx)] = np.atleast_2d(c)
    return out


def thresholds(sweep: Sweep, resp: Sequence[Response], policy: pol.Policy, *, clean_index: int,
               leak_index: int, confidence: float = 0.95) -> dict[str, Threshold]:
    """Per metric the threshold a leak at ``levels[leak_index]`` exceeds with probability ≈ ``confidence``.

    On the gated figure g (the value, or the CI upper bound for ``on: ci_upper``), with a per-level
    noise s (see ``_noise``) and z the one-sided normal quantile of ``confidence``:
    clean_high = mean g without risk + z·s, leak_low = mean g at the leak − z·s. When
    clean_high < leak_low the threshold is their midpoint: a clean release stays below it and the leak
    exceeds it, each with probability ≥ ``confidence``. Otherwise the leak cannot be told from no
    leak on this data; the threshold is leak_low (fail closed: the leak is still caught, clean releases
    may fail too) and the metric is flagged. A metric that does not respond, or errored, keeps the
    policy's threshold (a calibrated number would mean nothing) and is flagged.
    """
    z = NormalDist().inv_cdf(confidence)
    out = {}
    by_id = {r.id: r for r in resp}
    for m, mid in enumerate(sweep.metrics):
        entry = swept_entry(policy, mid)
        prev, on = entry.threshold, entry.on
        r = by_id[mid]
        if r.flag and (not r.responds or r.no_risk is None):
            out[mid] = Threshold(mid, on, prev, prev, False, False, None, None, f"kept: {r.flag}")
            continue
        g = sweep.gated[:, :, m]
        per, _ = _noise(sweep, m, gated=True)
        with _quiet():
            clean_high = float(np.nanmean(g[clean_index]) + z * per[clean_index])
            leak_low = float(np.nanmean(g[leak_index]) - z * per[leak_index])
        level = sweep.levels[leak_index]
        what = f"{level:.0%} leak" if sweep.model == "leaky" else f"{sweep.parameter} = {level_label(level)}"
        with _quiet():
            moved = float(np.nanmean(g[leak_index]) - np.nanmean(g[clean_index]))
        if not moved > 0:  # the figure does not move at this level: no threshold can catch it
            out[mid] = Threshold(mid, on, prev, prev, False, False, None, None,
                                 f"kept: no response at {what} (change {moved:+.4f}); responds only to larger risk")
            continue
        if clean_high < leak_low:
            t = (clean_high + leak_low) / 2.0
            sep, note = True, f"calibrated: no risk ≤ {clean_high:.4f}, {what} ≥ {leak_low:.4f}"
        else:
            t = leak_low
            sep, note = False, (f"calibrated, does not separate: no risk ≤ {clean_high:.4f} overlaps "
                                f"{what} ≥ {leak_low:.4f}; clean releases may fail")
        t = float(min(1.0, max(0.0, round(t, 6))))
        out[mid] = Threshold(mid, on, prev, t, True, sep, clean_high, leak_low, note)
    return out


def fmt_figure(x: float | None, digits: int = 3) -> str:
    """A figure for the response tables: fixed digits, '—' when missing."""
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def threshold_cells(r: Response, t: Threshold | None) -> tuple[str, str]:
    """The threshold cell ('0.050 → 0.0253', '0.500 (kept)' or '—') and the note of one metric's row,
    shared by the printed table and the Markdown one."""
    if t is None:
        return "—", r.flag or ""
    if t.calibrated:
        return (f"{fmt_figure(t.previous)} → {fmt_figure(t.threshold, 4)}",
                r.flag or ("separates" if t.separates else "overlaps no risk: clean may fail"))
    return f"{fmt_figure(t.previous)} (kept)", r.flag or t.note


@dataclass
class OutlierShift:
    """The leaky model repeated without the x % most outlying rows (seed 004 §5.2.1)."""

    fraction: float
    removed: int
    sweep: Sweep
    responses: list[Response]

    def to_dict(self, baseline: list[Response]) -> dict[str, Any]:
        base = {r.id: r for r in baseline}
        rows = []
        for r in self.responses:
            b = base[r.id]
            rows.append({"id": r.id, "no_risk": r.no_risk, "at_leak": r.at_leak, "max_risk": r.max_risk,
                         "change_no_risk": _diff(r.no_risk, b.no_risk), "change_at_leak": _diff(r.at_leak, b.at_leak),
                         "change_max_risk": _diff(r.max_risk, b.max_risk), "flag": r.flag})
        return _clean({"fraction": self.fraction, "removed_rows": self.removed, "metrics": rows,
                       "seconds": self.sweep.seconds})


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


# --------------------------------------------------------------------------------- the outcome


@dataclass
class Calibration:
    """Everything a calibration produced: figures only, never a value of a record."""

    sweep: Sweep
    responses: list[Response]
    correlation: np.ndarray
    policy: pol.Policy
    thresholds: dict[str, Threshold] | None = None
    leak_level: float | None = None
    confidence: float = 0.95
    table: dict[str, Any] = field(default_factory=dict)  # rows, columns, sha256 of the input table
    outliers: list[OutlierShift] = field(default_factory=list)
    generator: str | None = None

    @property
    def flagged(self) -> list[Response]:
        return [r for r in self.responses if r.flag]

    def response(self, metric_id: str) -> Response:
        return next(r for r in self.responses if r.id == metric_id)

    def to_dict(self) -> dict[str, Any]:
        s = self.sweep
        corr = [[None if math.isnan(v) else float(v) for v in row] for row in self.correlation]
        return _clean({
            "format": FORMAT,
            "risk_model": s.model,
            "generator": self.generator,
            "parameter": s.parameter,
            "levels": s.levels,
            "seeds": s.seeds,
            "leak_level": self.leak_level,
            "confidence": self.confidence,
            "table": self.table,
            "sizes": s.sizes,
            "policy": {"name": self.policy.name, "sha256": self.policy.sha256},
            "responses": [r.to_dict() for r in self.responses],
            "thresholds": None if self.thresholds is None else {k: t.to_dict() for k, t in self.thresholds.items()},
            "correlation": {"metrics": s.metrics, "matrix": corr},
            "runs": {"metrics": s.metrics, "gate_on": s.gate_on,
                     "values": s.values.tolist(), "gated": s.gated.tolist()},
            "not_computed": s.reasons,
            "outliers": [o.to_dict(self.responses) for o in self.outliers],
            "seconds": s.seconds + sum(o.sweep.seconds for o in self.outliers),
        })

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def response_frame(self) -> pl.DataFrame:
        """The response table (one row per metric) as a polars frame."""
        thr = self.thresholds or {}
        rows = []
        for r in self.responses:
            t = thr.get(r.id)
            rows.append({"metric": r.id, "no_risk": r.no_risk, "at_leak": r.at_leak, "max_risk": r.max_risk,
                         "stdev_max_risk": r.stdev, "monotone": r.monotone, "responds": r.responds,
                         "gate_on": self.sweep.gate_on.get(r.id), "previous_threshold": t.previous if t else None,
                         "calibrated_threshold": t.threshold if t and t.calibrated else None,
                         "separates": t.separates if t else None, "flag": r.flag})
        return pl.DataFrame(rows, schema_overrides={k: pl.Float64 for k in (
            "no_risk", "at_leak", "max_risk", "stdev_max_risk", "previous_threshold", "calibrated_threshold")})

    def to_markdown(self) -> str:
        """The response table as Markdown (Dagster metadata, summaries): figures and metric ids only."""

        f = fmt_figure
        leak = self.leak_level
        s = self.sweep
        head = ["metric", "gate", "no risk", *([f"at {s.parameter} = {level_label(leak)}"] if leak is not None else []),
                "max risk", "stdev", "monotone", "responds", "threshold", "note"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        thr = self.thresholds or {}
        for r in self.responses:
            th, note = threshold_cells(r, thr.get(r.id))
            known = r.no_risk is not None
            cells = [f"`{r.id}`", s.gate_on.get(r.id, "value"), f(r.no_risk),
                     *([f(r.at_leak)] if leak is not None else []), f(r.max_risk), f(r.stdev, 4),
                     ("yes" if r.monotone else "**no**") if known else "—",
                     ("yes" if r.responds else "**no**") if known else "—", th,
                     ("**flag**: " + note if r.flag else note).replace("|", "/")]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def calibrated_policy(self) -> pol.Policy:
        """The input policy with every calibrated threshold replaced (load_policy of the YAML equals it)."""
        data = self.policy.model_dump(mode="json")
        for mid, t in (self.thresholds or {}).items():
            if t.calibrated:
                # a swept metric the policy does not name gets the entry the engine would apply to it
                entry = data["metrics"].setdefault(mid, swept_entry(self.policy, mid).model_dump(mode="json"))
                entry["threshold"] = t.threshold
        data["name"] = "calibrated"
        data["preset"] = None
        return pol.Policy.model_validate(data)

    def policy_yaml(self) -> str:
        """The calibrated policy as YAML, self-contained (no preset: later preset changes do not leak in)."""
        import yaml

        p = self.calibrated_policy()
        thr = self.thresholds or {}
        s = self.sweep
        levels = ", ".join(level_label(v) for v in s.levels)
        if s.model == "leaky":
            model = f"seed 004 §5.1.1 leaky risk model, leak fractions {levels}"
            caught = f"a {self.leak_level or 0:.0%} leak"
        else:
            model = f"seed 004 §5.1.2-5.1.3 generator sweep ({self.generator}), {s.parameter} = {levels}"
            caught = f"a release generated at {s.parameter} = {level_label(self.leak_level)}"
        lines = [
            f"# Calibrated by dagster_privacy.calibration: {model};",
            f"# a table of {self.table.get('rows', '?')} rows (sha256 {str(self.table.get('sha256', '?'))[:16]}…), "
            f"{len(s.seeds)} repeat(s), seeds {s.seeds[0]}…{s.seeds[-1]}.",
            f"# A calibrated threshold is exceeded by {caught} with probability ≈ {self.confidence:.0%} on this",
            "# data (docs/calibration.md). Metrics that do not respond keep the input policy's threshold.",
            f"name: {p.name}",
            f"seed: {p.seed}",
        ]
        tm = p.threat_model.model_dump(mode="json", exclude_defaults=True)
        if tm:
            lines.append("threat_model: " + yaml.safe_dump(tm, default_flow_style=True, width=10_000).strip())
        lines.append("metrics:")
        width = max((len(m) for m in p.metrics), default=0) + 1
        for mid, entry in p.metrics.items():
            d: dict[str, Any] = {"threshold": entry.threshold, "on": entry.on, "severity": entry.severity.value}
            if entry.optional:
                d["optional"] = True
            if entry.params:
                d["params"] = entry.params
            flow = yaml.safe_dump(d, default_flow_style=True, width=10_000, sort_keys=False).strip()
            note = thr[mid].note if mid in thr else "not swept"
            lines.append(f"  {(mid + ':').ljust(width)} {flow}  # {note}")
        lines.append(f"require_signoff: {'true' if p.require_signoff else 'false'}")
        return "\n".join(lines) + "\n"

    def write(self, out: str | Path = ".", *, plots: bool = True) -> dict[str, Path]:
        """Write the table (CSV, JSON), correlation (CSV), calibrated policy (YAML) and plots (PNG)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "calibration.json", "table": out / "calibration_response.csv",
                 "correlation_csv": out / "calibration_correlation.csv"}
        paths["json"].write_text(self.to_json())
        self.response_frame().write_csv(paths["table"])
        corr = pl.DataFrame({"metric": self.sweep.metrics,
                             **{m: [None if math.isnan(v) else float(v) for v in self.correlation[:, i]]
                                for i, m in enumerate(self.sweep.metrics)}})
        corr.write_csv(paths["correlation_csv"])
        if self.thresholds is not None:
            paths["policy"] = out / "calibrated_policy.yaml"
            paths["policy"].write_text(self.policy_yaml())
        if plots:
            from .calibration_plots import plot_correlation, plot_responses

            paths["plot"] = plot_responses(self, out / "calibration_response.png")
            paths["correlation_plot"] = plot_correlation(self, out / "calibration_correlation.png")
        return paths


# --------------------------------------------------------------------------------- entry points


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


def calibrate(
    real: Any,
    *,
    policy: str | pol.Policy | Mapping[str, Any] | None = "standard",
    metrics: Sequence[str] | None = None,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    repeats: int = 3,
    seed: int | None = None,
    leak_level: float = DEFAULT_LEAK_LEVEL,
    confidence: float = 0.95,
    outliers: Sequence[float] = (),
    key_columns: Sequence[str] | None = None,
    sensitive_columns: Sequence[str] | None = None,
    column_kinds: Mapping[str, str] | None = None,
    progress: bool = True,
) -> Calibration:
    """Run the leaky risk model (seed 004 §5.1.1) for every metric of the policy on the user's table.

    ``real`` is any table ``evaluate`` accepts (frame, CSV/Parquet path, ``FILE.duckdb:TABLE``, SQL).
    Fractions 0 and ``leak_level`` are always swept (no risk and the calibration level). Repeat i uses
    seed ``seed + i`` (default: the policy's seed) for the split, the leak draw and the metrics.
    ``outliers`` = fractions x of rows removed by local outlier factor before repeating (§5.2.1).
    Raises TableError / PolicyError / CalibrationError on bad input.
    """
    if not 0.5 < confidence < 1.0:
        raise CalibrationError("confidence must be in (0.5, 1)")
    setup = _Setup.make(policy, metrics, column_kinds, key_columns, sensitive_columns)
    df = load(real, role="real")
    if df.height < 8:
        raise tb.TableError("the real table needs at least 8 rows to split into training, control and release")
    levels = _levels(fractions, (0.0, leak_level))
    seeds = _seeds(repeats, setup.policy.seed if seed is None else int(seed))
    xs = sorted({float(x) for x in outliers if x > 0})
    if any(not x < 0.5 for x in xs):  # checked before the sweep: bad input fails fast
        raise CalibrationError("outlier fractions must be below 0.5")
    sweep = _leaky_sweep(df, levels, seeds, setup, progress=progress)
    li = _level_index(levels, leak_level)
    resp = responses(sweep, leak_index=li)
    assert li is not None
    cal = Calibration(sweep, resp, correlation(sweep), setup.policy,
                      thresholds(sweep, resp, setup.policy, clean_index=0, leak_index=li, confidence=confidence),
                      leak_level, confidence, tb.table_info(df))
    if xs:
        scores = outlier_scores(df, column_kinds=setup.column_kinds)
        order = np.argsort(-scores, kind="stable")  # most outlying first
        for x in xs:
            n_drop = int(math.ceil(x * df.height))
            keep = np.sort(order[n_drop:])
            sw = _leaky_sweep(df[keep], levels, seeds, setup, progress=progress,
                              what=f"calibration without {x:.0%} outliers")
            cal.outliers.append(OutlierShift(x, n_drop, sw, responses(sw, leak_index=li)))
    return cal


def outlier_scores(df: pl.DataFrame, *, column_kinds: Mapping[str, str] | None = None,
                   n_neighbors: int = 20) -> np.ndarray:
    """Local outlier factor per row (≈ 1 inlier, larger = more outlying), on the one-hot + min-max space.

    The encoding is the engine's euclidean space fitted on the table itself (``ctx.euclidean``), so an
    outlier is what the distance metrics see as one. Exact duplicates get scikit-learn's usual
    treatment (a tiny constant keeps the local reachability density finite).
    """
    from sklearn.neighbors import LocalOutlierFactor

    schema = tb.infer_schema(df, column_kinds)
    canon = tb.canonical(df, schema, role="real")
    x = EvaluationContext(canon, canon.head(1), schema=schema).euclidean("real")
    k = max(1, min(n_neighbors, df.height - 1))
    lof = LocalOutlierFactor(n_neighbors=k, algorithm="brute", metric="euclidean", n_jobs=1).fit(x)
    return -lof.negative_outlier_factor_


# -------------------------------------------------------------- overfitting and DP risk models


def _call(generator: Generator, train: pl.DataFrame, param: Any, seed: int) -> Any:
    """The generator's synthetic table; it gets ``seed=`` when its signature takes one."""
    try:
        takes_seed = "seed" in inspect.signature(generator).parameters
    except (TypeError, ValueError):  # builtins / C callables: no signature
        takes_seed = False
    return generator(train, param, seed=seed) if takes_seed else generator(train, param)


def sweep_generator(
    real: Any,
    generator: Generator,
    params: Sequence[Any],
    *,
    parameter: str = "parameter",
    name: str | None = None,
    policy: str | pol.Policy | Mapping[str, Any] | None = "standard",
    metrics: Sequence[str] | None = None,
    repeats: int = 3,
    seed: int | None = None,
    threshold_at: Any = None,
    confidence: float = 0.95,
    key_columns: Sequence[str] | None = None,
    sensitive_columns: Sequence[str] | None = None,
    column_kinds: Mapping[str, str] | None = None,
    progress: bool = True,
) -> Calibration:
    """The overfitting and DP risk models (seed 004 §5.1.2–5.1.3) with the user's own generator.

    ``generator(train, param)`` (optionally ``seed=``) returns a synthetic table (any table ``evaluate``
    accepts) trained on ``train``: pass epochs, an overfit ratio, a privacy budget ε, a leaf size … as
    ``params``, **listed in order of increasing inserted risk** (ε ascending, epochs ascending, leaf
    size descending): the first is "no risk", the last "max risk", and monotone means non-decreasing
    along that order. Each repeat splits the table as the leaky model does (training 50 %, control
    25 %; the release part is unused); the metrics see training as real and control as holdout.

    Outputs are those of :func:`calibrate`: response table, plot, correlation, flags. With
    ``threshold_at`` (one of ``params``) thresholds are calibrated so that a release generated at that
    parameter exceeds them with probability ≈ ``confidence`` (no risk = ``params[0]``).
    A generator that raises stops the sweep with a CalibrationError naming the parameter.
    """
    setup = _Setup.make(policy, metrics, column_kinds, key_columns, sensitive_columns)
    df = load(real, role="real")
    if df.height < 8:
        raise tb.TableError("the real table needs at least 8 rows to split into training and control")
    if len(params) < 2:
        raise CalibrationError("a sweep needs at least two parameter values")
    levels = list(params)
    seeds = _seeds(repeats, setup.policy.seed if seed is None else int(seed))
    label = name or getattr(generator, "__name__", "generator")
    t0 = time.perf_counter()
    evals: list[list[Evaluation]] = [[] for _ in levels]
    sizes: dict[str, int] = {}
    with _progress(progress, len(levels) * len(seeds), f"sweep {label}") as step:
        for s in seeds:
            tr, co, _ = _parts(df.height, s)
            train, control = df[tr], df[co]
            base: EvaluationContext | None = None
            for i, p in enumerate(levels):
                step(f"seed {s}, {parameter} = {p}")
                try:
                    syn = load(_call(generator, train, p, s), role="synthetic")
                except tb.TableError:
                    raise
                except Exception as exc:
                    raise CalibrationError(f"the generator raised at {parameter} = {p}: "
                                           f"{safe_reason(exc)}") from None
                ctx = setup.prepare(train, syn, control, s)
                if base is None:
                    base = ctx
                else:  # borrow the real / holdout encodings and queries of the first parameter
                    ctx = setup.context(ctx, ctx.table("synthetic"), base=base, rows=None)
                evals[i].append(setup.run(ctx))
                sizes = sizes or dict(ctx.sizes)
    values, gated, se = _collect(evals, setup.ids)
    sweep = Sweep("generator", parameter, [float(v) if isinstance(v, (int, float)) else v for v in levels],
                  seeds, setup.ids, {m: swept_entry(setup.policy, m).on for m in setup.ids}, values, gated, se,
                  _reasons(evals, setup.ids), sizes, time.perf_counter() - t0)
    li = None
    if threshold_at is not None:
        li = next((i for i, v in enumerate(levels) if v == threshold_at), None)
        if li is None or li == 0:
            raise CalibrationError("threshold_at must be one of params, other than the first (no risk)")
    resp = responses(sweep, leak_index=li)
    thr = None if li is None else thresholds(sweep, resp, setup.policy, clean_index=0, leak_index=li,
                                             confidence=confidence)
    return Calibration(sweep, resp, correlation(sweep), setup.policy, thr,
                       None if li is None else levels[li], confidence, tb.table_info(df), generator=label)


def per_column_sampler(train: pl.DataFrame, noise: float, *, seed: int = 0) -> pl.DataFrame:
    """A tiny example generator for :func:`sweep_generator` (not a serious synthesiser).

    Each synthetic row starts as a copy of a training row drawn with replacement; each cell is then,
    with probability ``noise``, replaced by an independent draw from that column's training values.
    ``noise = 1`` samples every column on its own (the marginals only: no row survives beyond chance);
    ``noise = 0`` copies training rows (maximum risk). Sweep it as ``params=[1.0, 0.1, 0.0]``
    (increasing risk). Seeded: the same arguments give the same table.
    """
    if not 0.0 <= noise <= 1.0:
        raise ValueError("noise must be in [0, 1]")
    rng = np.random.default_rng([seed, 2])
    n = train.height
    base = rng.integers(0, n, n)
    cols = {}
    for name in train.columns:
        s = train.get_column(name)
        other = s.gather(rng.integers(0, n, n))
        swap = pl.Series(rng.random(n) < noise)
        cols[name] = other.zip_with(swap, s.gather(base)).alias(name)
    return pl.DataFrame(cols, schema=train.schema)


__all__ = [
    "DEFAULT_FRACTIONS",
    "level_label",
    "DEFAULT_LEAK_LEVEL",
    "Calibration",
    "CalibrationError",
    "Generator",
    "LeakySplit",
    "OutlierShift",
    "Response",
    "Sweep",
    "Threshold",
    "calibrate",
    "correlation",
    "leaky_split",
    "outlier_scores",
    "per_column_sampler",
    "responses",
    "sweep_generator",
    "thresholds",
]
