"""Plots of a calibration: response curves per metric and the correlation matrix (seed 004 Appendix A).

Figures only (metric values per level of inserted risk): nothing of a record is drawn. Rendered with
matplotlib's non-interactive Agg backend, so it works headless (CI, Dagster runs).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Protocol

import numpy as np


class Calibration(Protocol):
    """What the plots read of a calibration (outcome.Calibration); a protocol, so this module imports
    nothing of the package and the package imports it only when it draws."""

    sweep: Any
    thresholds: Any
    leak_level: Any
    generator: Any
    correlation: np.ndarray

    def response(self, metric_id: str) -> Any: ...


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _x(cal: Calibration) -> tuple[np.ndarray, list[str]]:
    """x positions and tick labels: the levels themselves when numeric, else their rank."""
    levels = cal.sweep.levels
    if all(isinstance(v, (int, float)) for v in levels):
        return np.asarray(levels, dtype=float), [f"{v:g}" for v in levels]
    return np.arange(len(levels), dtype=float), [str(v) for v in levels]


def _thin(x: np.ndarray, labels: list[str]) -> list[str]:
    """Blank the labels of ticks too close to the previous labelled one (0 and 0.05 would overlap)."""
    span = float(x.max() - x.min()) or 1.0
    out, last = [], -math.inf
    for xi, lab in zip(x, labels, strict=True):
        keep = (xi - last) / span >= 0.09
        out.append(lab if keep else "")
        last = xi if keep else last
    return out


def plot_responses(cal: Calibration, path: str | Path) -> Path:
    """One small panel per metric: every repeat (dots), the mean (line), the calibrated threshold
    (dashed) and the leak level (dotted); a flagged metric's title is red and says why."""
    plt = _pyplot()
    s = cal.sweep
    n = len(s.metrics)
    cols = min(4, max(1, n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.4 * cols, 2.6 * rows), squeeze=False)
    x, ticks = _x(cal)
    thr = cal.thresholds or {}
    for m, mid in enumerate(s.metrics):
        ax = axes[m // cols][m % cols]
        y = s.values[:, :, m]
        for j in range(y.shape[1]):
            ax.plot(x, y[:, j], "o", ms=3, alpha=0.5, color="tab:blue")
        with np.errstate(invalid="ignore"):
            mean = np.nanmean(y, axis=1) if not np.isnan(y).all() else np.full(len(x), np.nan)
        ax.plot(x, mean, "-", color="tab:blue", lw=1.5)
        t = thr.get(mid)
        if t is not None and t.threshold is not None:
            ax.axhline(
                t.threshold,
                ls="--",
                lw=1,
                color="tab:red" if t.calibrated else "grey",
                label="calibrated threshold" if t.calibrated else "policy threshold",
            )
        if cal.leak_level is not None and s.leaks:
            ax.axvline(cal.leak_level, ls=":", lw=1, color="grey")
        r = cal.response(mid)
        title = mid + (" — flagged" if r.flag else "")
        ax.set_title(title, fontsize=9, color="tab:red" if r.flag else "black")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xticks(x)
        ax.set_xticklabels(_thin(x, ticks), fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(alpha=0.3)
    for m in range(n, rows * cols):
        axes[m // cols][m % cols].axis("off")
    what = (
        ("leak fraction f (seed 004 §5.1.1)" if s.model == "leaky" else f"leak fraction f ({cal.generator})")
        if s.leaks
        else f"{s.parameter} ({cal.generator}), increasing risk →"
    )
    fig.suptitle(
        f"Response to inserted risk — {what}; {len(s.seeds)} repeat(s); risk value (0 private, 1 none)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_correlation(cal: Calibration, path: str | Path) -> Path:
    """Heat map of the Pearson correlation between metrics over all runs; blank = undefined."""
    plt = _pyplot()
    s = cal.sweep
    n = len(s.metrics)
    c = np.ma.masked_invalid(cal.correlation)
    size = max(4.0, 0.42 * n + 2.0)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(c, vmin=-1, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(n))
    ax.set_yticks(range(n))
    ax.set_xticklabels(s.metrics, rotation=90, fontsize=7)
    ax.set_yticklabels(s.metrics, fontsize=7)
    if n <= 30:
        for i in range(n):
            for j in range(n):
                v = cal.correlation[i, j]
                if not math.isnan(v):
                    ax.text(
                        j,
                        i,
                        f"{v:.2f}",
                        ha="center",
                        va="center",
                        fontsize=5,
                        color="white" if abs(v) > 0.6 else "black",
                    )
    fig.colorbar(im, ax=ax, fraction=0.04)
    ax.set_title("Correlation between metrics over all runs (seed 004 Appendix A)", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
