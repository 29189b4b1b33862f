"""The models of inference_ml (seed 004 §4.3.3, §6.2.3): per secret column a LightGBM job on the
synthetic table's other columns, fitted on the executor (one OpenMP thread each, deterministic), and
how its predictions of the training and control targets become the column's part (accuracy, or NRMSE
of eq. 10)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...data.tables import HIGH_CARDINALITY
from ...engine.context import EvaluationContext
from ..stats import z_score
from .rates import Side, measured, rate


def _values(ctx: EvaluationContext, role: str, column: str) -> np.ndarray:
    return ctx.table(role).get_column(column).to_numpy().astype(np.float64)


def _features(ctx: EvaluationContext, role: str, idx: np.ndarray | None, columns: list[str]) -> np.ndarray:
    """Numbers as floats (missing = nan), categories as their shared integer codes; a high-cardinality
    column as its frequency-capped code (its most frequent real categories, every other one shared)."""
    names = ctx.schema.names
    codes = ctx.codes(role)
    sel = slice(None) if idx is None else idx
    out = []
    for c in columns:
        if ctx.schema.kind(c) == "numerical":
            out.append(_values(ctx, role, c)[sel])
        elif ctx.encoder.high_cardinality(c):  # the capped one-hot's dimension: HIGH_CARDINALITY levels
            out.append(ctx.encoder.capped_codes(ctx.table(role), c)[sel].astype(np.float64))
        else:
            out.append(codes[sel, names.index(c)].astype(np.float64))
    return np.column_stack(out) if out else np.empty((0, 0))


def _lgbm_params(seed: int, n_estimators: int) -> dict[str, Any]:
    return {
        "n_estimators": n_estimators,
        "learning_rate": 0.15,
        "num_leaves": 31,
        "min_child_samples": 20,
        "max_bin": 63,
        "random_state": seed,
        "deterministic": True,
        "force_col_wise": True,
        "n_jobs": 1,
        "verbosity": -1,
    }


_Finish = Callable[[np.ndarray, np.ndarray], dict[str, Any]]


@dataclass(frozen=True)
class Features:
    """What every model of inference_ml reads (put once in the executor's store): the LightGBM
    parameters and the features of every column (canonical order) of the rows the models use. A job
    takes its secret's other columns when it runs, so only the running models hold a feature matrix."""

    params: dict[str, Any]
    synthetic: np.ndarray  # every synthetic row, in content order
    train: np.ndarray  # the training targets
    control: np.ndarray  # the control targets

    @classmethod
    def of(
        cls,
        ctx: EvaluationContext,
        cols: list[str],
        order: np.ndarray,
        targets: tuple[np.ndarray, np.ndarray],
        params: dict[str, Any],
    ) -> Features:
        t_idx, c_idx = targets
        return cls(
            params,
            _features(ctx, "synthetic", order, cols),
            _features(ctx, "real", t_idx, cols),
            _features(ctx, "holdout", c_idx, cols),
        )


def _secret_job(
    ctx: EvaluationContext,
    s: str,
    cols: list[str],
    order: np.ndarray,
    targets: tuple[np.ndarray, np.ndarray],
    n: int,
    conf: float,
    min_class_rows: int,
) -> dict[str, Any] | tuple[tuple, _Finish]:
    """One secret column of inference_ml: its part when no model is needed, else the job for
    _fit_predict and how the two predictions become its part."""
    t_idx, c_idx = targets
    aux = [c for c in cols if c != s]
    cat_idx = [i for i, c in enumerate(aux) if ctx.schema.kind(c) != "numerical"]
    at = np.array([cols.index(c) for c in aux], dtype=np.int64)  # the other columns, in Features
    if ctx.schema.kind(s) == "numerical":
        y_syn = _values(ctx, "synthetic", s)[order]
        y_t, y_c = _values(ctx, "real", s)[t_idx], _values(ctx, "holdout", s)[c_idx]
        keep = ~np.isnan(y_syn)
        mt, mc = ~np.isnan(y_t), ~np.isnan(y_c)
        if keep.sum() < 2 or mt.sum() == 0 or mc.sum() == 0:
            return {"risk": None, "reason": f"{s}: too few non-missing values"}
        regression = partial(
            _regression_part, y_t[mt], y_c[mc], y_syn[keep].mean(), ctx.encoder.num_range[s], conf
        )
        if np.ptp(y_syn[keep]) == 0:
            return regression(np.full(mt.sum(), y_syn[keep][0]), np.full(mc.sum(), y_syn[keep][0]))
        return ("regression", at, keep, y_syn[keep], cat_idx, mt, mc), regression
    j = ctx.schema.names.index(s)
    y_syn = ctx.codes("synthetic")[order, j]
    y_t, y_c = ctx.codes("real")[t_idx, j], ctx.codes("holdout")[c_idx, j]
    classes, counts = np.unique(y_syn, return_counts=True)
    keep = counts >= min_class_rows
    if not keep.any():  # a small table: every class keeps its label
        keep[:] = True
    if keep.sum() > HIGH_CARDINALITY - 1:  # one tree per class per round: cap the classes
        ranked = np.lexsort((classes, -counts))  # most frequent first, ties by code
        keep[:] = False
        keep[ranked[: HIGH_CARDINALITY - 1]] = True
    if not keep.all():
        y_syn = np.where(np.isin(y_syn, classes[~keep]), -1, y_syn)  # -1: no target code equals it
        classes, counts = np.unique(y_syn, return_counts=True)
    classification = partial(_classification_part, y_t, y_c, classes[counts.argmax()], n, conf)
    if classes.size < 2:
        return classification(np.full(n, classes[0]), np.full(n, classes[0]))
    return ("classification", at, None, y_syn, cat_idx, None, None), classification


def _rows(x: np.ndarray, rows: np.ndarray | None, cols: np.ndarray) -> np.ndarray:
    """x[rows][:, cols] (all rows when None) in one copy, C order (x[:, cols] alone would be F order)."""
    picked = np.arange(x.shape[0]) if rows is None else np.flatnonzero(rows)
    return x[np.ix_(picked, cols)]


def _fit_predict(features: Features, job: tuple) -> tuple[np.ndarray, np.ndarray]:
    """One LightGBM model of inference_ml (one OpenMP thread, deterministic): fitted on the synthetic
    rows, predicting the training and control targets. Module-level: it may run as a Ray task."""
    import lightgbm as lgb

    task, at, keep, y, cat_idx, mt, mc = job
    x = _rows(features.synthetic, keep, at)
    x_t, x_c = _rows(features.train, mt, at), _rows(features.control, mc, at)
    model = (lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier)(**features.params)
    model.fit(x, y, categorical_feature=cat_idx or "auto")
    return np.asarray(model.predict(x_t)), np.asarray(model.predict(x_c))


def _regression_part(
    y_t: np.ndarray,
    y_c: np.ndarray,
    mean: float,
    spread: float,
    conf: float,
    p_t: np.ndarray,
    p_c: np.ndarray,
) -> dict[str, Any]:
    r_t, _ = _nrmse_side(y_t, p_t, spread, conf)
    r_c, _ = _nrmse_side(y_c, p_c, spread, conf)
    r_n, _ = _nrmse_side(y_t, np.full(y_t.size, mean), spread, conf)
    side = Side(r_t, r_c, naive=r_n, binomial=False)
    return {**side.details(), "n_attacks": int(y_t.size), "task": "regression", "score": "NRMSE"}


def _classification_part(
    y_t: np.ndarray, y_c: np.ndarray, mode: int, n: int, conf: float, p_t: np.ndarray, p_c: np.ndarray
) -> dict[str, Any]:
    side = Side(
        rate(int((p_t == y_t).sum()), n, conf),
        rate(int((p_c == y_c).sum()), n, conf),
        naive=rate(int((y_t == mode).sum()), n, conf),
    )
    return {**side.details(), "n_attacks": n, "task": "classification", "score": "accuracy"}


def _nrmse_side(y: np.ndarray, pred: np.ndarray, spread: float, confidence: float) -> tuple[Any, float]:
    """NRMSE = 1 − RMSE/range (seed 004 eq. 10) with a delta-method error (z · se(RMSE)/range)."""
    se = (y - pred) ** 2
    mse = float(se.mean())
    rmse = math.sqrt(mse)
    z = z_score(confidence)
    sd_mse = float(se.std(ddof=1)) / math.sqrt(se.size) if se.size > 1 else 0.0
    err = z * (sd_mse / (2 * rmse) if rmse > 0 else sd_mse) / spread
    return measured(1.0 - rmse / spread, err, se.size), rmse
