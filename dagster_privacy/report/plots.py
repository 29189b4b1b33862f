"""The report's figures, drawn with matplotlib (object API, Agg canvas: no pyplot global state) and
embedded as base64 PNG. Every figure shows aggregate figures only: metric values, rates, histograms."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..engine.distance_summary import DistanceSummary
from ..evaluation import Evaluation
from ..results import RATE_KEYS, MetricResult, Status

COLOURS = {"synthetic": "#c0392b", "holdout": "#2e86c1", "train": "#c0392b", "control": "#7f8c8d"}
STATUS_COLOURS = {
    Status.PASS: "#1e8449",
    Status.WARN: "#b9770e",
    Status.FAIL: "#c0392b",
    Status.ERROR: "#7b241c",
    Status.NOT_APPLICABLE: "#7f8c8d",
    Status.INCONCLUSIVE: "#b9770e",
    Status.NOTHING_TO_ATTACK: "#1e8449",
}
DPI = 100


def _png(fig: Figure) -> str:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None}, bbox_inches="tight", pad_inches=0.12)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def metrics_figure(ev: Evaluation) -> str | None:
    """Each computed metric: value with its CI and the threshold, on [0, 1] (baselines are on the raw
    formula's scale, not the value's: they are in the table, not here)."""
    rows = [r for r in ev.results if r.value is not None and r.status is not None]
    if not rows:
        return None
    fig = Figure(figsize=(8.0, 0.42 * len(rows) + 1.3))
    ax = fig.add_subplot()
    ys = list(range(len(rows)))[::-1]
    for y, r in zip(ys, rows, strict=True):
        colour = STATUS_COLOURS[r.status]  # type: ignore[index]  # judged: rows have a status
        if r.ci is not None:
            ax.plot(r.ci, [y, y], color=colour, lw=2.2, solid_capstyle="butt")
        ax.plot([float(r.value or 0.0)], [y], "o", color=colour, ms=7, zorder=3)
        if r.threshold is not None:
            ax.plot([r.threshold, r.threshold], [y - 0.32, y + 0.32], color="#111111", lw=1.6)
    ax.set_yticks(ys, [r.id for r in rows])
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("risk value (0 = private, 1 = no privacy)")
    ax.grid(axis="x", alpha=0.3)
    handles = [
        ax.plot([], [], "o", color="#555555", label="value (colour = status)")[0],
        ax.plot([], [], "-", color="#555555", lw=2.2, label="95 % CI")[0],
        ax.plot([], [], "|", color="#111111", ms=12, mew=1.6, label="threshold")[0],
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.5 / max(1, len(rows)) - 0.12),
        ncol=3,
        frameon=False,
        fontsize=8,
    )
    ax.set_title("Each metric against its threshold", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def distances_figure(summary: DistanceSummary) -> str | None:
    """Share of rows per distance bin: synthetic→train against holdout→train (same bins)."""
    if not summary.sides:
        return None
    edges = summary.edges
    fig = Figure(figsize=(8.0, 3.6))
    ax = fig.add_subplot()
    for side in ("holdout", "synthetic"):
        s = summary.sides.get(side)
        if s is None or s.n == 0:
            continue
        share = [c / s.n for c in s.counts]
        label = f"{side} → train (n = {s.n:,}; identical to a training row: {s.zero_share:.1%})"
        ax.stairs(
            share,
            edges,
            color=COLOURS[side],
            lw=1.8,
            label=label,
            fill=side == "holdout",
            alpha=0.35 if side == "holdout" else 1.0,
        )
        med = s.quantiles.get("q50")
        if med is not None:
            ax.axvline(med, color=COLOURS[side], ls="--", lw=1.0)
    ax.set_xlabel(f"distance to the nearest training record ({summary.space} space; dashed = median)")
    ax.set_ylabel("share of rows")
    ax.set_xlim(edges[0], edges[-1])
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_title("Distance to the closest training record: synthetic vs holdout", fontsize=11)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)


@dataclass(frozen=True)
class AttackRates:
    """Attack success on the training records against the control (holdout) records."""

    id: str
    train: float
    train_ci: tuple[float, float] | None
    control: float
    control_ci: tuple[float, float] | None


def _rate(details: Mapping[str, Any], key: str) -> tuple[float, tuple[float, float] | None] | None:
    v = details.get(key)
    ci = details.get(f"{key}_ci")
    if isinstance(v, Mapping):
        ci = v.get("ci", ci)
        v = next((v[k] for k in ("rate", "value", "center") if isinstance(v.get(k), (int, float))), None)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(float(v)):
        return None
    interval = None
    if isinstance(ci, Sequence) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci):
        interval = (float(ci[0]), float(ci[1]))
    return float(v), interval


def attack_rates(results: Sequence[MetricResult]) -> list[AttackRates]:
    """The attack results whose details carry e_train and e_control (seed 004 eq. 8)."""
    out = []
    for r in results:
        t, c = (_rate(r.details, key) for key in RATE_KEYS)
        if t is not None and c is not None:
            out.append(AttackRates(r.id, t[0], t[1], c[0], c[1]))
    return out


def attacks_figure(rates: Sequence[AttackRates]) -> str | None:
    """Grouped bars: success rate on training vs control records, Wilson 95 % intervals."""
    if not rates:
        return None
    fig = Figure(figsize=(8.0, 0.55 * len(rates) + 1.4))
    ax = fig.add_subplot()
    h = 0.36
    ys = list(range(len(rates)))[::-1]
    for y, a in zip(ys, rates, strict=True):
        for off, who, val, ci in (
            (h / 2, "train", a.train, a.train_ci),
            (-h / 2, "control", a.control, a.control_ci),
        ):
            xerr = None if ci is None else [[max(0.0, val - ci[0])], [max(0.0, ci[1] - val)]]
            ax.barh(
                y + off,
                val,
                height=h,
                color=COLOURS[who],
                xerr=xerr,
                capsize=3,
                error_kw={"lw": 1.0, "ecolor": "#222222"},
            )
    ax.set_yticks(ys, [a.id for a in rates])
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("attack success rate (95 % Wilson interval)")
    ax.legend(
        handles=[
            Patch(color=COLOURS["train"], label="on training records"),
            Patch(color=COLOURS["control"], label="on control (holdout) records"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16 - 0.5 / (len(rates) + 1.4)),
        ncol=2,
        fontsize=8,
        frameon=False,
    )
    ax.set_title("Attack success: training vs control", fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def membership_roc_figure(results: Sequence[MetricResult]) -> str | None:
    """The ROC of the strongest membership attack on log axes (TPR against FPR), the chance line and
    the 0.1 % / 1 % operating points: what a low false-positive rate buys an attacker."""
    r = next(
        (r for r in results if r.id == "membership_inference" and isinstance(r.details.get("roc"), Mapping)),
        None,
    )
    if r is None:
        return None
    roc = r.details["roc"]
    pts = [(f, t) for f, t in zip(roc.get("fpr", []), roc.get("tpr", []), strict=False) if f > 0 and t > 0]
    if len(pts) < 2:
        return None
    fig = Figure(figsize=(5.6, 4.4))
    ax = fig.add_subplot()
    lo = min(min(p[0] for p in pts), min(p[1] for p in pts))
    ax.plot([lo, 1.0], [lo, 1.0], color="#888888", lw=1, ls="--", label="chance (TPR = FPR)")
    ax.plot([p[0] for p in pts], [p[1] for p in pts], color=COLOURS["train"], lw=2,
            label=f"{roc.get('attack', 'attack')} (strongest)")  # fmt: skip
    for alpha in (0.001, 0.01):
        ax.axvline(alpha, color="#bbbbbb", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("false-positive rate (non-members flagged)")
    ax.set_ylabel("true-positive rate (members flagged)")
    ax.set_title("Membership inference: ROC on log axes", fontsize=11)
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return _png(fig)


def history_figure(history: Sequence[Mapping[str, Any]], metric_ids: Sequence[str]) -> str | None:
    """Metric values across releases, oldest first; failed points marked with a cross."""
    points = [h for h in history if h.get("values")]
    if len(points) < 1:
        return None
    ids = [m for m in metric_ids if any(m in h["values"] for h in points)]
    if not ids:
        return None
    fig = Figure(figsize=(8.0, 3.6))
    ax = fig.add_subplot()
    xs = list(range(len(points)))
    for mid in ids:
        ys = [h["values"].get(mid) for h in points]
        line = ax.plot(
            [x for x, y in zip(xs, ys, strict=True) if y is not None],
            [y for y in ys if y is not None],
            "o-",
            lw=1.4,
            ms=4,
            label=mid,
        )[0]
        bad = [
            (x, y)
            for x, y, h in zip(xs, ys, points, strict=True)
            if y is not None and mid in h.get("failed", ())
        ]
        if bad:
            ax.plot([b[0] for b in bad], [b[1] for b in bad], "x", color=line.get_color(), ms=10, mew=2)
    labels = [str(h.get("release", ""))[:14] for h in points]
    ax.set_xticks(xs, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("risk value")
    ax.set_xlabel("release (oldest → newest); × = failed its threshold")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_title("Metric history across releases", fontsize=11)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)
