"""remediate(): drop the synthetic rows an evaluation flagged, so a pipeline can re-check the rest.

Seed 001 advises removing every synthetic row at DCR = 0 (a copy of a training record) before sharing;
the holdout indicators also flag rows closer to a training record than the holdout's α-quantile
(seed 004 eq. 4). The flagged row indices live in memory only (``MetricResult.flagged`` is never
serialised: it would point at real records), so remediation needs the in-memory ``Evaluation`` that
``evaluate()`` returned, not one read back from JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import polars as pl

from .data import tables as tb
from .data.loading import load
from .evaluation import Evaluation
from .results import MetricResult, Status

#: the default: exact copies (ims) and eq. 4's rows below the holdout's α-quantile (dcr_percentile)
DEFAULT_METRICS: tuple[str, ...] = ("ims", "dcr_percentile")


def _flagged(
    results: Evaluation | Iterable[MetricResult], metrics: Sequence[str] | None, attr: str
) -> np.ndarray:
    by_id = {r.id: r for r in results}
    wanted = [i for i, r in by_id.items() if r.flagged is not None] if metrics is None else list(metrics)
    if not wanted:
        raise ValueError("no result carries flagged rows: remediate the in-memory Evaluation from evaluate()")
    out: list[np.ndarray] = []
    for mid in wanted:
        r = by_id.get(mid)
        if r is None:
            raise ValueError(f"the evaluation has no {mid} result: run it with that metric")
        if r.status in (Status.ERROR, Status.NOT_APPLICABLE):
            raise ValueError(
                f"{mid} did not run ({r.status.value}: {r.reason}): cannot tell which rows to drop"
            )
        rows = getattr(r, attr)
        if rows is None:
            raise ValueError(
                f"{mid} carries no flagged rows: they are kept in memory only, so remediate "
                "the Evaluation returned by evaluate(), not one read back from JSON"
            )
        out.append(np.asarray(rows))
    return np.unique(np.concatenate(out))


def flagged_rows(
    results: Evaluation | Iterable[MetricResult], metrics: Sequence[str] | None = DEFAULT_METRICS
) -> np.ndarray:
    """Sorted union of the synthetic rows (input row numbers) flagged by `metrics` (None: every result
    that flags rows).

    Raises ValueError when a named metric is missing, did not run (error / not applicable) or carries
    no flagged rows in memory (an evaluation read back from JSON): remediation never guesses.
    """
    return _flagged(results, metrics, "flagged").astype(np.int64)


def remediate(
    evaluation: Evaluation, synthetic: Any, *, metrics: Sequence[str] | None = DEFAULT_METRICS
) -> Any:
    """The synthetic table without the rows `metrics` flagged (default: exact copies of training
    records and rows closer to one than the holdout's α-quantile).

    Rows are dropped by **content** — every row whose canonical content hashes to a flagged row's —
    never by position: a reload in another order (an SQL read without ORDER BY) drops the same rows.
    ``synthetic`` is the table that was evaluated: a polars or pandas frame (returned as the same type,
    pandas keeping its index) or a path / SQL that DuckDB reads (returned as polars). Its content
    fingerprint must match what was evaluated. Re-evaluate the result: dropping rows moves the
    holdout's quantiles, so one pass is the usual fix, not a guarantee.

    Args:
        evaluation: the in-memory ``Evaluation`` that ``evaluate()`` returned (not one read from JSON).
        synthetic: the synthetic table that was evaluated.
        metrics: the ids whose flagged rows are dropped; default ``("ims", "dcr_percentile")``; None:
            every result that flags rows.

    Returns:
        The synthetic table without the flagged rows: the same type for a polars or pandas frame,
        else a polars frame.

    Raises:
        ValueError: not an ``Evaluation``; a named metric missing, not run (error / not applicable) or
            without flagged rows in memory; or a table other than the one evaluated.

    Example:
        ``kept = remediate(evaluate(real, synthetic, holdout=holdout), synthetic)``
    """
    if not isinstance(evaluation, Evaluation):
        raise ValueError("remediate needs the Evaluation evaluate() returned (its schema and fingerprints)")
    drop = _flagged(evaluation, metrics, "flagged_hashes")
    frame = load(synthetic, role="synthetic")
    expected = evaluation.tables.get("synthetic")
    if expected and frame.height != expected["rows"]:
        raise ValueError(
            f"the synthetic table has {frame.height} rows, the evaluation saw {expected['rows']}"
        )
    if expected and expected["sha256"] and tb.fingerprint(frame) != expected["sha256"]:
        raise ValueError("the synthetic table is not the one evaluated (its content fingerprint differs)")
    keep = ~np.isin(_hashes(evaluation, frame), drop)
    if isinstance(synthetic, pl.DataFrame):
        return synthetic.filter(pl.Series(keep))
    try:
        import pandas as pd

        if isinstance(synthetic, pd.DataFrame):
            return synthetic.iloc[np.nonzero(keep)[0]]
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    return frame.filter(pl.Series(keep))


def _hashes(evaluation: Evaluation, frame: pl.DataFrame) -> np.ndarray:
    """Each row's canonical content hash under the evaluation's schema."""
    schema = tb.Schema(
        [
            tb.Column(c["name"], c["kind"], c.get("format"), c.get("reads", "text"))
            for c in evaluation.schema_.get("columns", [])
        ]
    )
    return tb.row_hashes(tb.canonical(frame, schema, role="synthetic"))


def kept_rows(evaluation: Evaluation, original: pl.DataFrame, kept: pl.DataFrame) -> np.ndarray:
    """Bool per row of ``original`` (the evaluated synthetic table as loaded): its content is among
    ``kept``'s (rows are dropped by content, so a kept row's every twin is kept too)."""
    return np.isin(_hashes(evaluation, original), _hashes(evaluation, kept))


__all__ = ["DEFAULT_METRICS", "flagged_rows", "kept_rows", "remediate"]
