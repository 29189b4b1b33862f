"""Nearest-record distance distributions: synthetic→train against holdout→train (for the report).

Only figures leave this module: a shared histogram (bin edges and counts), a few quantiles and the
count of rows at distance exactly 0 (an identical record, decided on row hashes). No row, no value.
The distances come from the evaluation context's cached neighbour queries (one-hot + min-max
euclidean space fitted on the training table), so a context the metrics already used costs nothing;
``run_metrics`` stores the summary in ``Evaluation.distances`` and the report draws it from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SPACE = "euclidean"
QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75)
SIDES = ("synthetic", "holdout")


@dataclass(frozen=True)
class DistanceSide:
    """One side (synthetic→train or holdout→train): histogram counts, quantiles, exact matches."""

    n: int
    counts: list[int]
    quantiles: dict[str, float]
    zeros: int

    @property
    def zero_share(self) -> float:
        return self.zeros / self.n if self.n else 0.0


@dataclass(frozen=True)
class DistanceSummary:
    """Histograms over shared bins of the distance from each row to its nearest training row."""

    edges: list[float]
    sides: dict[str, DistanceSide] = field(default_factory=dict)
    space: str = SPACE

    def to_dict(self) -> dict[str, Any]:
        return {
            "space": self.space,
            "edges": list(self.edges),
            "sides": {
                k: {"n": s.n, "counts": list(s.counts), "quantiles": dict(s.quantiles), "zeros": s.zeros}
                for k, s in self.sides.items()
            },
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DistanceSummary:
        sides = {
            k: DistanceSide(
                int(v["n"]),
                [int(c) for c in v["counts"]],
                {q: float(x) for q, x in v["quantiles"].items()},
                int(v["zeros"]),
            )
            for k, v in d.get("sides", {}).items()
        }
        return cls([float(e) for e in d["edges"]], sides, str(d.get("space", SPACE)))


def summarize(
    distances: Mapping[str, np.ndarray],
    *,
    zeros: Mapping[str, int] | None = None,
    bins: int = 40,
    space: str = SPACE,
) -> DistanceSummary:
    """A summary from arrays of nearest-training-record distances per side ("synthetic", "holdout").

    The bins are shared (0 to the largest 99.5th percentile of the sides) so the shapes compare; the
    farthest rows fall in the last bin. ``zeros`` overrides the count of exact matches per side.
    """
    arrays = {k: np.asarray(v, dtype=np.float64).ravel() for k, v in distances.items() if v is not None}
    arrays = {k: v[np.isfinite(v)] for k, v in arrays.items()}
    tops = [float(np.quantile(v, 0.995)) for v in arrays.values() if v.size]
    top = max(tops) if tops and max(tops) > 0 else 1.0
    edges = np.linspace(0.0, top, bins + 1)
    sides = {}
    for k, v in arrays.items():
        counts = np.histogram(np.clip(v, 0.0, top), bins=edges)[0] if v.size else np.zeros(bins, np.int64)
        qs = {f"q{int(round(q * 100)):02d}": float(np.quantile(v, q)) for q in QUANTILES} if v.size else {}
        z = int(zeros[k]) if zeros and k in zeros else int((v == 0.0).sum())
        sides[k] = DistanceSide(int(v.size), [int(c) for c in counts], qs, z)
    return DistanceSummary([float(e) for e in edges], sides, space)


def distance_summary(ctx: Any, *, bins: int = 40) -> DistanceSummary:
    """synthetic→train and (when there is a holdout) holdout→train nearest distances of a context."""
    dist: dict[str, np.ndarray] = {}
    zeros: dict[str, int] = {}
    for side in SIDES:
        if not ctx.has(side):
            continue
        dist[side] = ctx.neighbors(SPACE, side, "real", 1).dist[:, 0]
        zeros[side] = int(ctx.copies_of(side, "real").sum())
    return summarize(dist, zeros=zeros, bins=bins)
