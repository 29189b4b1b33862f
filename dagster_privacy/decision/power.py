"""The detection floor: the smallest verbatim-copy leak this policy, on these table sizes, catches with
95 % probability — so that a pass says how small a leak it could have missed.

Analytic, from the evaluation's own exact-match gates (``crp``, ``ims``): a leak copying a fraction f of
the training rows into the synthetic table raises the share of training rows with an identical synthetic
row from the holdout's natural share p_c to p_c + f·(1 − p_c) (``ims``), and the share of synthetic rows
identical to a training row to p_c + (f·|train| / |synthetic|)·(1 − p_c) (``crp``). A gate catches the
leak with 95 % probability when its lower bound (policy.judge's rule, at the gate's fail level) clears
its threshold even with the observed shares 1.645 standard errors on the unlucky side. The floor is the
smallest f on a grid where some gate does; other gates can only catch more (docs/metrics.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..metrics.stats import excess_part
from ..results import MetricResult, Status

#: the probability with which a leak at the floor is caught
POWER = 0.95
_Z_POWER = 1.6448536269514722
_GRID = tuple(round(0.001 * 1.08**i, 6) for i in range(90) if 0.001 * 1.08**i <= 1.0) + (1.0,)


def _caught(p_t: float, n_t: int, p_c: float, n_c: int, threshold: float, fail_level: float) -> bool:
    """Whether the gate's lower bound clears ``threshold`` when both shares sit 1.645 standard errors
    on the unlucky side (training share low, control share high)."""
    sd = math.sqrt(p_t * (1 - p_t) / n_t + (p_c * (1 - p_c) / n_c if n_c else 0.0))
    d = p_t - p_c - _Z_POWER * sd
    low_t = min(1.0, max(0.0, p_c + d))
    _, lower, _ = excess_part(low_t * n_t, n_t, p_c * n_c, n_c, 1.0, fail_level, 0.5)
    return lower > threshold


def _floor_of(r: MetricResult, n_train: int, n_syn: int) -> float | None:
    if r.decision is None or not r.evidence or r.threshold is None:
        return None
    ev = r.evidence[0]
    n_t, n_c = int(ev["n_t"]), int(ev["n_c"])
    p_c = float(ev["k_c"]) / n_c if n_c else 0.0
    level = float(r.decision["fail_level"])
    for f in _GRID:
        share = f if r.id == "ims" else min(1.0, f * n_train / max(1, n_syn))
        p_t = p_c + share * (1.0 - p_c)
        if _caught(p_t, n_t, p_c, n_c, float(r.threshold), level):
            return f
    return None


def detection_floor(results: Sequence[MetricResult], sizes: dict[str, int]) -> dict[str, Any]:
    """``{"verbatim_copy_fraction": f, "by": gate, "power": 0.95, "how": ..., "people": {...}}``; f None
    when no judged exact-match gate ran (or none would catch even a full copy: the table repeats too
    much); ``people``: the smallest number of rare training records copied verbatim (also: isolated ones,
    and copies with one cell edited) that fails exposed_records with 95 % probability (None: it did not
    run; a value None: no number of copies would)."""
    n_train, n_syn = int(sizes.get("real", 0)), int(sizes.get("synthetic", 0))
    best: tuple[float, str] | None = None
    for r in results:
        if r.id not in ("crp", "ims") or r.status in (Status.ERROR, Status.NOT_APPLICABLE, None):
            continue
        f = _floor_of(r, n_train, n_syn)
        if f is not None and (best is None or f < best[0]):
            best = (f, r.id)
    people = next(
        (r.decision.get("floor_people") for r in results if r.id == "exposed_records" and r.decision), None
    )
    return {
        "verbatim_copy_fraction": best[0] if best else None,
        "by": best[1] if best else None,
        "power": POWER,
        "how": "analytic: the smallest share of training rows copied verbatim that an exact-match gate "
        "catches with 95 % probability on these table sizes and natural duplicate shares",
        # issue 45: the floor in people, from exposed_records' exact test at its own chance counts
        "people": people,
    }


__all__ = ["POWER", "detection_floor"]
