"""The entry points: :func:`calibrate` (the leaky risk model, outlier sensitivity) and
:func:`sweep_generator` (the overfitting and DP risk models with the user's generator)."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from .. import policy as pol
from .. import tables as tb
from ..context import EvaluationContext
from ..errors import CalibrationError, safe_reason
from ..loading import load
from ..results import Evaluation
from .analysis import OutlierShift, _level_index, correlation, responses, thresholds
from .outcome import Calibration
from .risk_models import Generator, _parts
from .sweep import _leaky_sweep, _levels, _progress, _seeds, _Setup

#: fractions of the training table leaked when none are given
DEFAULT_FRACTIONS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
DEFAULT_LEAK_LEVEL = 0.05


def calibrate(
    real: Any,
    *,
    policy: str | Path | pol.Policy | Mapping[str, Any] | None = "standard",
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
        raise tb.TableError(
            "the real table needs at least 8 rows to split into training, control and release"
        )
    levels = _levels(fractions, (0.0, leak_level))
    seeds = _seeds(repeats, setup.policy.seed if seed is None else int(seed))
    xs = sorted({float(x) for x in outliers if x > 0})
    if any(not x < 0.5 for x in xs):  # checked before the sweep: bad input fails fast
        raise CalibrationError("outlier fractions must be below 0.5")
    sweep = _leaky_sweep(df, levels, seeds, setup, progress=progress)
    li = _level_index(levels, leak_level)
    resp = responses(sweep, leak_index=li)
    assert li is not None
    cal = Calibration(
        sweep,
        resp,
        correlation(sweep),
        setup.policy,
        thresholds(sweep, resp, setup.policy, clean_index=0, leak_index=li, confidence=confidence),
        leak_level,
        confidence,
        tb.table_info(df),
    )
    if xs:
        scores = outlier_scores(df, column_kinds=setup.column_kinds)
        order = np.argsort(-scores, kind="stable")  # most outlying first
        for x in xs:
            n_drop = int(math.ceil(x * df.height))
            keep = np.sort(order[n_drop:])
            sw = _leaky_sweep(
                df[keep],
                levels,
                seeds,
                setup,
                progress=progress,
                what=f"calibration without {x:.0%} outliers",
            )
            cal.outliers.append(OutlierShift(x, n_drop, sw, responses(sw, leak_index=li)))
    return cal


def outlier_scores(
    df: pl.DataFrame, *, column_kinds: Mapping[str, str] | None = None, n_neighbors: int = 20
) -> np.ndarray:
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
    policy: str | Path | pol.Policy | Mapping[str, Any] | None = "standard",
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
                    raise CalibrationError(
                        f"the generator raised at {parameter} = {p}: {safe_reason(exc)}"
                    ) from None
                ctx = setup.prepare(train, syn, control, s)
                if base is None:
                    base = ctx
                else:  # borrow the real / holdout encodings and queries of the first parameter
                    ctx = setup.context(ctx, ctx.table("synthetic"), base=base, rows=None)
                evals[i].append(setup.run(ctx))
                sizes = sizes or dict(ctx.sizes)
    numeric = [float(v) if isinstance(v, (int, float)) else v for v in levels]
    sweep = setup.sweep("generator", parameter, numeric, seeds, evals, sizes, t0)
    li = None
    if threshold_at is not None:
        li = next((i for i, v in enumerate(levels) if v == threshold_at), None)
        if li is None or li == 0:
            raise CalibrationError("threshold_at must be one of params, other than the first (no risk)")
    resp = responses(sweep, leak_index=li)
    thr = (
        None
        if li is None
        else thresholds(sweep, resp, setup.policy, clean_index=0, leak_index=li, confidence=confidence)
    )
    return Calibration(
        sweep,
        resp,
        correlation(sweep),
        setup.policy,
        thr,
        None if li is None else levels[li],
        confidence,
        tb.table_info(df),
        generator=label,
    )
