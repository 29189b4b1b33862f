"""The outcome of a calibration (:class:`Calibration`) and its serialisations."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..decision import policy as pol
from ..results import to_jsonable
from .analysis import OutlierShift, Response, Threshold, fmt_figure, level_label, threshold_cells
from .sweep import Sweep

FORMAT = "dagster-privacy/calibration/1"


@dataclass
class Calibration:
    """Everything a calibration produced: figures only, never a value of a record."""

    sweep: Sweep
    responses: list[Response]
    correlation: np.ndarray
    policy: pol.Policy
    thresholds: dict[str, Threshold] | None = None
    leak_level: float | None = None
    confidence: float = 0.95
    table: dict[str, Any] = field(default_factory=dict)  # rows, columns, sha256 of the input table
    outliers: list[OutlierShift] = field(default_factory=list)
    generator: str | None = None

    @property
    def detection_floor(self) -> float | None:
        """The verbatim-copy detection floor of the no-risk releases (their median; None: no gate can
        catch a copy on this data)."""
        got = sorted(f for f in self.sweep.floors if f is not None)
        return got[len(got) // 2] if got else None

    @property
    def flagged(self) -> list[Response]:
        return [r for r in self.responses if r.flag]

    def response(self, metric_id: str) -> Response:
        return next(r for r in self.responses if r.id == metric_id)

    def to_dict(self) -> dict[str, Any]:
        s = self.sweep
        corr = [[None if math.isnan(v) else float(v) for v in row] for row in self.correlation]
        return to_jsonable(
            {
                "format": FORMAT,
                "risk_model": s.model,
                "generator": self.generator,
                "parameter": s.parameter,
                "levels": s.levels,
                "seeds": s.seeds,
                "leak_level": self.leak_level,
                "detection_floor": self.detection_floor,
                "confidence": self.confidence,
                "table": self.table,
                "sizes": s.sizes,
                "policy": {"name": self.policy.name, "sha256": self.policy.sha256},
                "responses": [r.to_dict() for r in self.responses],
                "thresholds": None
                if self.thresholds is None
                else {k: t.to_dict() for k, t in self.thresholds.items()},
                "correlation": {"metrics": s.metrics, "matrix": corr},
                "runs": {
                    "metrics": s.metrics,
                    "gate_on": s.gate_on,
                    "values": s.values.tolist(),
                    "gated": s.gated.tolist(),
                },
                "not_computed": s.reasons,
                "outliers": [o.to_dict(self.responses) for o in self.outliers],
                "seconds": s.seconds + sum(o.sweep.seconds for o in self.outliers),
            }
        )

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    def response_frame(self) -> pl.DataFrame:
        """The response table (one row per metric) as a polars frame."""
        thr = self.thresholds or {}
        rows = []
        for r in self.responses:
            t = thr.get(r.id)
            rows.append(
                {
                    "metric": r.id,
                    "no_risk": r.no_risk,
                    "at_leak": r.at_leak,
                    "max_risk": r.max_risk,
                    "stdev_max_risk": r.stdev,
                    "monotone": r.monotone,
                    "responds": r.responds,
                    "gate_on": self.sweep.gate_on.get(r.id),
                    "previous_threshold": t.previous if t else None,
                    "calibrated_threshold": t.threshold if t and t.calibrated else None,
                    "separates": t.separates if t else None,
                    "flag": r.flag,
                }
            )
        return pl.DataFrame(
            rows,
            schema_overrides={
                k: pl.Float64
                for k in (
                    "no_risk",
                    "at_leak",
                    "max_risk",
                    "stdev_max_risk",
                    "previous_threshold",
                    "calibrated_threshold",
                )
            },
        )

    def response_head(self, leak_label: str) -> list[str]:
        """The response table's columns; ``leak_label`` names the leak level's, shown when it was swept."""
        at_leak = [leak_label] if self.leak_level is not None else []
        figures = ["max risk", "stdev", "monotone", "responds", "threshold", "note"]
        return ["metric", "gate", "no risk", *at_leak, *figures]

    def response_cells(
        self, figure: Callable[..., str], yes: Callable[[bool, bool], str]
    ) -> list[tuple[Response, list[str]]]:
        """Each metric's cells after its id, as ``response_head`` orders them (the printed table and the
        Markdown one format figures and yes/no their own way: ``figure(x, digits=3)``, ``yes(flag,
        known)``)."""
        thr, out = self.thresholds or {}, []
        for r in self.responses:
            th, note = threshold_cells(r, thr.get(r.id))
            known, at_leak = r.no_risk is not None, [figure(r.at_leak)] if self.leak_level is not None else []
            out.append((r, [self.sweep.gate_on.get(r.id, "value"), figure(r.no_risk), *at_leak,
                            figure(r.max_risk), figure(r.stdev, 4), yes(r.monotone, known),
                            yes(r.responds, known), th, note]))  # fmt: skip
        return out

    def to_markdown(self) -> str:
        """The response table as Markdown (Dagster metadata, summaries): figures and metric ids only."""
        s, leak = self.sweep, self.leak_level
        head = self.response_head(f"at {s.parameter} = {level_label(leak)}")
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

        def yes(flag: bool, known: bool) -> str:
            return ("yes" if flag else "**no**") if known else "—"

        for r, cells in self.response_cells(fmt_figure, yes):
            note = ("**flag**: " + cells[-1] if r.flag else cells[-1]).replace("|", "/")
            lines.append("| " + " | ".join([f"`{r.id}`", *cells[:-1], note]) + " |")
        return "\n".join(lines) + "\n"

    def loosened(self) -> list[str]:
        """Every gate of the input policy that the calibrated policy loosens — a threshold raised, or a
        gate (ERROR) made to inform (WARN) — with by how much and why; one line each. The YAML header
        and the CLI print these same lines (issue 46: a raised gate was said nowhere, and a metric that
        already informed was printed as "demoted")."""
        from ..results import Severity

        out = []
        for mid, t in (self.thresholds or {}).items():
            before = self.policy.entry_or_inform(mid)
            if not t.calibrated or before.severity is not Severity.ERROR or t.threshold is None:
                continue  # not moved, or it informed before: no gate is loosened
            prev = "none" if t.previous is None else f"{t.previous:g}"
            if t.demoted:
                why = t.note.removeprefix("demoted to WARN: ")
                out.append(f"{mid}: gate made WARN (threshold {prev} → {t.threshold:g}): {why}")
            elif t.previous is not None and t.threshold > t.previous:
                out.append(
                    f"{mid}: threshold raised {prev} → {t.threshold:g} (+{t.threshold - t.previous:.3g}): "
                    f"{t.note}"
                )
        return out

    def calibrated_policy(self) -> pol.Policy:
        """The input policy with every calibrated threshold replaced (load_policy of the YAML equals it)."""
        data = self.policy.model_dump(mode="json")
        for mid, t in (self.thresholds or {}).items():
            if t.calibrated:
                # a swept metric the policy does not name gets the entry the engine would apply to it
                entry = data["metrics"].setdefault(
                    mid, self.policy.entry_or_inform(mid).model_dump(mode="json")
                )
                entry["threshold"] = t.threshold
                if t.demoted:  # cannot separate the tested leak from no leak: informs, with the reason
                    entry["severity"] = "WARN"
        data["name"] = "calibrated"
        data["preset"] = None
        # every field looser than standard (the base of a policy without a preset) is written as a waiver
        # with the calibration's reason, which forces a sign-off (issue 54)
        unsigned = pol.Policy.model_validate(data, context={"preset": True})
        notes = {f"metrics.{m}.threshold": t.note for m, t in (self.thresholds or {}).items()}
        notes.update({f"metrics.{m}.severity": t.note for m, t in (self.thresholds or {}).items()})
        found = [x.path for x in unsigned.loosenings()]
        kept = {k: v for k, v in data["waivers"].items() if "." not in k or k.startswith("new_values.")}
        for path in found:  # a field waiver of the input that standard does not need is dropped (review)
            why = data["waivers"].get(path) or notes.get(path) or "kept from the input policy"
            kept[path] = why if path in data["waivers"] else f"calibrated on this table: {why}"
        data["waivers"] = kept
        return pol.Policy.model_validate(data)

    def policy_yaml(self) -> str:
        """The calibrated policy as YAML, self-contained (no preset: later preset changes do not leak in)."""
        import yaml

        p = self.calibrated_policy()
        thr = self.thresholds or {}
        s = self.sweep
        levels = ", ".join(level_label(v) for v in s.levels)
        if s.leaks:
            how = "leaky risk model" if s.model == "leaky" else f"leaky risk model with {self.generator}"
            model = f"seed 004 §5.1.1 {how}, leak fractions {levels}"
            caught = f"a {self.leak_level or 0:.0%} leak"
        else:
            model = f"seed 004 §5.1.2-5.1.3 generator sweep ({self.generator}), {s.parameter} = {levels}"
            caught = f"a release generated at {s.parameter} = {level_label(self.leak_level)}"
        lines = [
            f"# Calibrated by dagster_privacy.calibration: {model};",
            f"# a table of {self.table.get('rows', '?')} rows (sha256 "
            f"{str(self.table.get('sha256', '?'))[:16]}…), "
            f"{len(s.seeds)} repeat(s), seeds {s.seeds[0]}…{s.seeds[-1]}.",
            f"# A calibrated threshold is exceeded by {caught} with probability ≈ "
            f"{self.confidence:.0%} on this",
            "# data (docs/calibration.md). Metrics that do not respond keep the input policy's threshold.",
            *(
                ["# Gates this policy loosens against the input policy:"]
                + [f"#   {line}" for line in self.loosened()]
                if self.loosened()
                else ["# No gate of the input policy is loosened."]
            ),
            "# Detection floor on this data: verbatim copies of "
            + ("no share" if self.detection_floor is None else f"{self.detection_floor:.3f}")
            + " of the training rows are caught with 95 % probability (docs/metrics.md).",
            f"name: {p.name}",
            f"seed: {p.seed}",
        ]
        tm = p.threat_model.model_dump(mode="json", exclude_defaults=True)
        if tm:
            lines.append("threat_model: " + yaml.safe_dump(tm, default_flow_style=True, width=10_000).strip())
        lines.append("metrics:")
        width = max((len(m) for m in p.metrics), default=0) + 1
        for mid, entry in p.metrics.items():
            d: dict[str, Any] = {
                "threshold": entry.threshold,
                "on": entry.on,
                "severity": entry.severity.value,
            }
            if entry.optional:
                d["optional"] = True
            if entry.params:
                d["params"] = entry.params
            if entry.weight != 1.0:  # its share of the false alarm (weighted Bonferroni)
                d["weight"] = entry.weight
            flow = yaml.safe_dump(d, default_flow_style=True, width=10_000, sort_keys=False).strip()
            note = thr[mid].note if mid in thr else "not swept"
            if mid in thr and thr[mid].demoted and self.policy.entry_or_inform(mid).severity.value != "ERROR":
                note = "informs (WARN) as before; " + note.removeprefix("demoted to WARN: ")
            lines.append(f"  {(mid + ':').ljust(width)} {flow}  # {note}")
        lines.append(f"require_signoff: {'true' if p.require_signoff else 'false'}")
        shown = {"name", "preset", "seed", "threat_model", "metrics", "require_signoff"}
        rest = p.model_dump(mode="json", exclude=shown, exclude_defaults=True)  # levels, waivers, floors
        for key, value in rest.items():
            lines.append(f"{key}: " + yaml.safe_dump(value, default_flow_style=True, width=10_000).strip())
        return "\n".join(lines) + "\n"

    def write(self, out: str | Path = ".", *, plots: bool = True) -> dict[str, Path]:
        """Write the table (CSV, JSON), correlation (CSV), calibrated policy (YAML) and plots (PNG)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "json": out / "calibration.json",
            "table": out / "calibration_response.csv",
            "correlation_csv": out / "calibration_correlation.csv",
        }
        _replace(paths["json"], lambda p: p.write_text(self.to_json()))
        _replace(paths["table"], lambda p: self.response_frame().write_csv(p))
        corr = pl.DataFrame(
            {
                "metric": self.sweep.metrics,
                **{
                    m: [None if math.isnan(v) else float(v) for v in self.correlation[:, i]]
                    for i, m in enumerate(self.sweep.metrics)
                },
            }
        )
        _replace(paths["correlation_csv"], lambda p: corr.write_csv(p))
        if self.thresholds is not None:
            paths["policy"] = out / "calibrated_policy.yaml"
            _replace(paths["policy"], lambda p: p.write_text(self.policy_yaml()))
        if plots:
            from .plots import plot_correlation, plot_responses

            paths["plot"] = out / "calibration_response.png"
            _replace(paths["plot"], lambda p: plot_responses(self, p))
            paths["correlation_plot"] = out / "calibration_correlation.png"
            _replace(paths["correlation_plot"], lambda p: plot_correlation(self, p))
        return paths


#: the files ``Calibration.write`` puts in its folder
OUTPUT_NAMES = (
    "calibration.json",
    "calibration_response.csv",
    "calibration_correlation.csv",
    "calibrated_policy.yaml",
    "calibration_response.png",
    "calibration_correlation.png",
)


def _replace(path: Path, write: Any) -> None:
    """Write beside ``path`` and rename onto it: a symlink planted at ``path`` is replaced itself, its
    target never written (issue 31 case 8)."""
    from ..data.atomic import replace_atomically

    replace_atomically(path, write, suffix=path.suffix)  # the extension: matplotlib picks the format
