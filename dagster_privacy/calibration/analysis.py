"""The analysis of a sweep: responses, the correlation matrix, calibrated thresholds (seed 004 §5)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from ..decision import policy as pol
from ..results import to_jsonable
from .sweep import Sweep

#: a mean response smaller than this (in value units) is "flat", whatever the noise
MIN_RESPONSE = 0.01
#: a drop between consecutive levels smaller than this is not a break of monotonicity
MIN_DROP = 0.005


def level_label(v: Any) -> str:
    """A level for messages: numbers as %g, anything else (a generator's parameter) as text."""
    return f"{v:g}" if isinstance(v, (int, float)) else str(v)


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
        return to_jsonable(self.__dict__)


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
    demoted: bool = False  # written as WARN: it cannot tell the tested leak from no leak on this data

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self.__dict__)


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
            out.append(
                Response(
                    mid,
                    None,
                    None,
                    None,
                    None,
                    to_jsonable(means),
                    to_jsonable(sds),
                    False,
                    False,
                    f"not computed at every level ({reason})",
                )
            )
            continue
        drop_tol = max(MIN_DROP, 2.0 * pooled)
        diffs = np.diff(means)
        monotone = bool((diffs >= -drop_tol).all())
        delta = float(means[-1] - means[0])
        responds = delta > max(MIN_RESPONSE, 2.0 * pooled)
        flags = []
        if not responds:
            flags.append(
                f"does not respond: change {delta:+.4f} from no risk to max risk "
                f"(needs > {max(MIN_RESPONSE, 2.0 * pooled):.4f}: max(0.01, 2 × noise))"
            )
        if not monotone:
            i = int(np.argmin(diffs))
            flags.append(
                f"non-monotone: drops {-diffs[i]:.4f} from {sweep.parameter} = "
                f"{level_label(sweep.levels[i])} "
                f"to {level_label(sweep.levels[i + 1])}"
            )
        out.append(
            Response(
                mid,
                float(means[0]),
                None if leak_index is None else float(means[leak_index]),
                float(means[-1]),
                float(sds[-1]),
                [float(v) for v in means],
                [float(v) for v in sds],
                monotone,
                responds,
                "; ".join(flags) or None,
            )
        )
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


def thresholds(
    sweep: Sweep,
    resp: Sequence[Response],
    policy: pol.Policy,
    *,
    clean_index: int,
    leak_index: int,
    confidence: float = 0.95,
) -> dict[str, Threshold]:
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
        entry = policy.entry_or_inform(mid)
        prev, on = entry.threshold, entry.on
        r = by_id[mid]
        if r.flag and (not r.responds or r.no_risk is None):
            out[mid] = Threshold(mid, on, prev, prev, False, False, None, None, f"kept: {r.flag}")
            continue
        decided = _by_bounds(sweep, m, mid, prev, on, clean_index, leak_index)
        if decided is not None:
            out[mid] = decided
            continue
        g = sweep.gated[:, :, m]
        per, _ = _noise(sweep, m, gated=True)
        with _quiet():
            clean_high = float(np.nanmean(g[clean_index]) + z * per[clean_index])
            leak_low = float(np.nanmean(g[leak_index]) - z * per[leak_index])
        level = sweep.levels[leak_index]
        what = f"{level:.0%} leak" if sweep.leaks else f"{sweep.parameter} = {level_label(level)}"
        with _quiet():
            moved = float(np.nanmean(g[leak_index]) - np.nanmean(g[clean_index]))
        if not moved > 0:  # the figure does not move at this level: no threshold can catch it
            out[mid] = Threshold(
                mid,
                on,
                prev,
                prev,
                False,
                False,
                None,
                None,
                f"kept: no response at {what} (change {moved:+.4f}); responds only to larger risk",
            )
            continue
        if clean_high < leak_low:
            t = (clean_high + leak_low) / 2.0
            sep, note = True, f"calibrated: no risk ≤ {clean_high:.4f}, {what} ≥ {leak_low:.4f}"
        else:
            t = leak_low
            sep, note = (
                False,
                (
                    f"calibrated, does not separate: no risk ≤ {clean_high:.4f} overlaps "
                    f"{what} ≥ {leak_low:.4f}; clean releases may fail"
                ),
            )
        t = float(min(1.0, max(MIN_THRESHOLD, round(t, 6))))
        out[mid] = Threshold(mid, on, prev, t, True, sep, clean_high, leak_low, note)
    return out


#: the smallest threshold calibration writes: a tolerance of 0 fails every release whose excess has
#: any positive lower bound, which noise alone gives (issue 32: calibrate wrote 0.0 for three gates)
MIN_THRESHOLD = 0.005


def _by_bounds(
    sweep: Sweep, m: int, mid: str, prev: float | None, on: str, clean_index: int, leak_index: int
) -> Threshold | None:
    """A gate judged by the decision rule (it has evidence): the threshold lies between the no-risk
    releases' largest upper bound (so they pass) and the leak's smallest lower bound (so it fails) — at
    the leak level asked for, else at the smallest larger level tested where one exists (the note says
    which); where none exists the metric is demoted to WARN, keeping a threshold the no-risk releases
    pass. None: the metric has no bounds (calibrate its point figure)."""
    if sweep.lower is None or sweep.upper is None:
        return None
    with _quiet():
        clean_high = float(np.nanmax(sweep.upper[clean_index, :, m]))
        lows = [float(np.nanmin(sweep.lower[i, :, m])) for i in range(leak_index, len(sweep.levels))]
    if not (math.isfinite(clean_high) and lows and math.isfinite(lows[0])):
        return None

    def what(i: int) -> str:
        level = sweep.levels[i]
        return f"{level:.0%} leak" if sweep.leaks else f"{sweep.parameter} = {level_label(level)}"

    for i, leak_low in enumerate(lows, start=leak_index):
        if math.isfinite(leak_low) and clean_high < leak_low:
            t = max(MIN_THRESHOLD, round((clean_high + leak_low) / 2.0, 6))
            note = (
                f"calibrated on the bounds: no risk upper ≤ {clean_high:.4f}, "
                f"{what(i)} lower ≥ {leak_low:.4f}"
            )
            if i != leak_index:
                note += f" (cannot tell a {what(leak_index)} from no leak on this data)"
            return Threshold(mid, on, prev, t, True, i == leak_index, clean_high, leak_low, note)
    leak_low = lows[0]
    t = max(MIN_THRESHOLD, round(clean_high, 6), prev or 0.0)
    note = (
        f"demoted to WARN: cannot tell any tested leak from no leak on this data (no risk upper bound "
        f"{clean_high:.4f} ≥ the {what(leak_index)}'s lower bound {leak_low:.4f})"
    )
    return Threshold(mid, on, prev, min(1.0, t), True, False, clean_high, leak_low, note, demoted=True)


def fmt_figure(x: float | None, digits: int = 3) -> str:
    """A figure for the response tables: fixed digits, '—' when missing."""
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def threshold_cells(r: Response, t: Threshold | None) -> tuple[str, str]:
    """The threshold cell ('0.050 → 0.0253', '0.500 (kept)' or '—') and the note of one metric's row,
    shared by the printed table and the Markdown one."""
    if t is None:
        return "—", r.flag or ""
    if t.calibrated:
        return (
            f"{fmt_figure(t.previous)} → {fmt_figure(t.threshold, 4)}",
            r.flag or ("separates" if t.separates else "overlaps no risk: clean may fail"),
        )
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
            rows.append(
                {
                    "id": r.id,
                    "no_risk": r.no_risk,
                    "at_leak": r.at_leak,
                    "max_risk": r.max_risk,
                    "change_no_risk": _diff(r.no_risk, b.no_risk),
                    "change_at_leak": _diff(r.at_leak, b.at_leak),
                    "change_max_risk": _diff(r.max_risk, b.max_risk),
                    "flag": r.flag,
                }
            )
        return to_jsonable(
            {
                "fraction": self.fraction,
                "removed_rows": self.removed,
                "metrics": rows,
                "seconds": self.sweep.seconds,
            }
        )


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
