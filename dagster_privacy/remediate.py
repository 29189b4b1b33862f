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

from . import tables as tb
from .results import Evaluation, MetricResult, Status

#: the default: exact copies (ims) and eq. 4's rows below the holdout's α-quantile (dcr_percentile)
DEFAULT_METRICS: tuple[str, ...] = ("ims", "dcr_percentile")


def flagged_rows(results: Evaluation | Iterable[MetricResult],
                 metrics: Sequence[str] | None = DEFAULT_METRICS) -> np.ndarray:
    """Sorted union of the synthetic rows flagged by `metrics` (None: every result that flags rows).

    Raises ValueError when a named metric is missing, did not run (error / not applicable) or carries
    no flagged rows in memory (an evaluation read back from JSON): remediation never guesses.
    """
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
            raise ValueError(f"{mid} did not run ({r.status.value}: {r.reason}): cannot tell which rows to drop")
        if r.flagged is None:
            raise ValueError(f"{mid} carries no flagged rows: they are kept in memory only, so remediate "
                             "the Evaluation returned by evaluate(), not one read back from JSON")
        out.append(np.asarray(r.flagged, dtype=np.int64))
    return np.unique(np.concatenate(out)) if out else np.array([], dtype=np.int64)


def _expected_synthetic(results: Evaluation | Iterable[MetricResult]) -> tuple[int | None, str | None]:
    """Rows and fingerprint of the synthetic table the evaluation saw, where it recorded them."""
    if isinstance(results, Evaluation):
        t = results.tables.get("synthetic") or {}
        if t:
            return t.get("rows"), t.get("sha256")
    for r in results:
        if "synthetic" in r.sizes:
            return r.sizes["synthetic"], None
    return None, None


def remediate(evaluation: Evaluation | Iterable[MetricResult], synthetic: Any, *,
              metrics: Sequence[str] | None = DEFAULT_METRICS) -> Any:
    """The synthetic table without the rows `metrics` flagged (default: exact copies of training
    records and rows closer to one than the holdout's α-quantile).

    ``synthetic`` is the table that was evaluated: a polars or pandas frame (returned as the same type,
    pandas keeping its index) or a path / SQL that DuckDB reads (returned as polars). Its row count and,
    for an Evaluation, its content fingerprint must match what was evaluated. Re-evaluate the result:
    dropping rows moves the holdout's quantiles, so one pass is the usual fix, not a guarantee.
    """
    results = evaluation if isinstance(evaluation, Evaluation) else list(evaluation)
    drop = flagged_rows(results, metrics)
    frame = tb.load(synthetic, role="synthetic")
    rows, sha = _expected_synthetic(results)
    if rows is not None and frame.height != rows:
        raise ValueError(f"the synthetic table has {frame.height} rows, the evaluation saw {rows}")
    if sha is not None and tb.fingerprint(frame) != sha:
        raise ValueError("the synthetic table is not the one evaluated (its content fingerprint differs)")
    if drop.size and drop.max() >= frame.height:
        raise ValueError("flagged rows point outside the synthetic table")
    keep = np.ones(frame.height, dtype=bool)
    keep[drop] = False
    if isinstance(synthetic, pl.DataFrame):
        return synthetic.filter(pl.Series(keep))
    try:
        import pandas as pd

        if isinstance(synthetic, pd.DataFrame):
            return synthetic.iloc[np.nonzero(keep)[0]]
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    return frame.filter(pl.Series(keep))


__all__ = ["DEFAULT_METRICS", "flagged_rows", "remediate"]
