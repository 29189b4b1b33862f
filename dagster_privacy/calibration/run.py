"""The entry points: :func:`calibrate` (the leaky risk model, outlier sensitivity) and
:func:`sweep_generator` (the overfitting and DP risk models with the user's generator)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..data import tables as tb
from ..data.loading import load
from ..decision import policy as pol
from ..errors import CalibrationError
from .analysis import OutlierShift, _level_index, correlation, responses, thresholds
from .outcome import Calibration
from .risk_models import Generator, encoded, knn_sampler, noisy_split
from .sweep import _generated_sweep, _leaky_sweep, _levels, _seeds, _Setup

#: fractions of the training table leaked when none are given
DEFAULT_FRACTIONS: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
DEFAULT_LEAK_LEVEL = 0.05
#: the overfit model's neighbourhood sizes when none are given (increasing memorisation; 1 = copies)
DEFAULT_NEIGHBOURS: tuple[int, ...] = (50, 20, 10, 5, 2, 1)
RISK_MODELS = ("leaky", "noisy", "overfit")
#: the noisy model moves cells by at most this many standard deviations (beyond, numbers overflow)
MAX_NOISE = 10.0


def calibrate(  # noqa: PLR0913
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
    risk_model: str = "leaky",
    noise: float = 0.05,
    neighbours: Sequence[int] = DEFAULT_NEIGHBOURS,
) -> Calibration:
    """Insert known risk into the user's table and see how every metric of the policy responds.

    ``risk_model``: ``"leaky"`` (seed 004 §5.1.1: a fraction f of the training rows copied into the
    release), ``"noisy"`` (the same fractions as near-duplicates: every numerical cell of a leaked row
    moved by N(0, ``noise`` · sd), never a verbatim copy; :func:`noisy_split`) or ``"overfit"``
    (:func:`knn_sampler` trained on the training part at each of ``neighbours``, listed by increasing
    memorisation; no thresholds are fitted: its levels are not leaks of a known size).
    ``real`` is any table ``evaluate`` accepts (frame, CSV/Parquet path, ``FILE.duckdb:TABLE``, SQL).
    Fractions 0 and ``leak_level`` are always swept (no risk and the calibration level). Repeat i uses
    seed ``seed + i`` (default: the policy's seed) for the split, the leak draw and the metrics.
    ``outliers`` = fractions x of rows removed by local outlier factor before repeating (§5.2.1, leaky
    model only). Raises TableError / PolicyError / CalibrationError on bad input.
    """
    _check_arguments(confidence, risk_model, outliers, noise)
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
    if risk_model == "overfit":
        return _overfit(df, neighbours, seeds, setup, confidence, progress)
    if risk_model == "noisy":
        sweep = _generated_sweep(
            df,
            levels,
            seeds,
            setup,
            lambda _train, f, s: noisy_split(df, f, noise=noise, seed=s).synthetic,
            model="noisy",
            parameter="f",
            label=f"noisy copies (noise {noise:g})",
            progress=progress,
        )
    else:
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
        dict(tb.table_info(df)),
        generator=f"noisy copies, noise {noise:g}" if risk_model == "noisy" else None,
    )
    # the same sweep without the most outlying rows (seed 004 §5.2.1), most outlying first
    if xs:
        order = np.argsort(-outlier_scores(df, column_kinds=setup.column_kinds), kind="stable")
        cal.outliers += [_without_outliers(df, order, x, (levels, seeds, setup), progress, li) for x in xs]
    return cal


def _check_arguments(confidence: float, risk_model: str, outliers: Sequence[float], noise: float) -> None:
    if not 0.5 < confidence < 1.0:
        raise CalibrationError("confidence must be in (0.5, 1)")
    if risk_model not in RISK_MODELS:
        raise CalibrationError(f"risk_model must be one of {', '.join(RISK_MODELS)}")
    if outliers and risk_model != "leaky":
        raise CalibrationError("outlier removal is calibrated with the leaky risk model only")
    if risk_model == "noisy" and not (math.isfinite(noise) and 0 <= noise <= MAX_NOISE):
        raise CalibrationError(f"noise must be a number in [0, {MAX_NOISE:g}] (standard deviations)")


def _without_outliers(
    df: pl.DataFrame, order: np.ndarray, x: float, sweep: tuple[list[float], list[int], Any], progress: bool,
    li: int,
) -> OutlierShift:  # fmt: skip
    """The leaky sweep (levels, seeds, setup) again without the ``x`` most outlying rows (``order``:
    most outlying first, by local outlier factor)."""
    n_drop = int(math.ceil(x * df.height))
    levels, seeds, setup = sweep
    what = f"calibration without {x:.0%} outliers"
    sw = _leaky_sweep(df[np.sort(order[n_drop:])], levels, seeds, setup, progress=progress, what=what)
    return OutlierShift(x, n_drop, sw, responses(sw, leak_index=li))


def _overfit(
    df: pl.DataFrame,
    neighbours: Sequence[int],
    seeds: Sequence[int],
    setup: _Setup,
    confidence: float,
    progress: bool,
) -> Calibration:
    """The overfit risk model: :func:`knn_sampler` at each neighbourhood size, responses only."""
    levels = list(neighbours)
    if len(levels) < 2 or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in levels):
        raise CalibrationError("neighbours: at least two whole numbers of at least 1")
    if len(set(levels)) != len(levels):
        raise CalibrationError("neighbours: each neighbourhood size once")
    n_train = df.height // 2  # the training part of each split (risk_models._parts)
    if max(levels) > n_train:
        raise CalibrationError(f"neighbours: at most the training rows of a split ({n_train})")
    kinds = setup.column_kinds
    sweep = _generated_sweep(
        df,
        levels,
        seeds,
        setup,
        lambda train, k, s: knn_sampler(train, k, seed=s, column_kinds=kinds),
        model="generator",
        parameter="neighbours",
        label="knn_sampler",
        progress=progress,
    )
    resp = responses(sweep, leak_index=None)
    return Calibration(
        sweep, resp, correlation(sweep), setup.policy, None, None, confidence, dict(tb.table_info(df)),
        generator="knn_sampler (overfit risk model)",
    )  # fmt: skip


def outlier_scores(
    df: pl.DataFrame, *, column_kinds: Mapping[str, str] | None = None, n_neighbors: int = 20
) -> np.ndarray:
    """Local outlier factor per row (≈ 1 inlier, larger = more outlying), on the one-hot + min-max space.

    The encoding is the engine's euclidean space fitted on the table itself (:func:`encoded`), so an
    outlier is what the distance metrics see as one. Exact duplicates get scikit-learn's usual
    treatment (a tiny constant keeps the local reachability density finite).
    """
    from sklearn.neighbors import LocalOutlierFactor

    x = encoded(df, column_kinds)
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


def sweep_generator(  # noqa: PLR0913
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
    label = str(name or getattr(generator, "__name__", "generator"))
    sweep = _generated_sweep(
        df,
        levels,
        seeds,
        setup,
        lambda train, p, s: _call(generator, train, p, s),
        model="generator",
        parameter=parameter,
        label=label,
        progress=progress,
    )
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
        dict(tb.table_info(df)),
        generator=label,
    )
