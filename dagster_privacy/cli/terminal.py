"""The evaluation in the terminal: the results table, each risk's decision, waivers, the floor, the people
exposed and the lineage, what blocks the release."""

from __future__ import annotations

import math

from ..lineage import sentence
from ..results import RISK_NAMES, Evaluation


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def print_table(ev: Evaluation) -> None:
    """The results as a rich table on stdout."""
    from rich.console import Console
    from rich.table import Table

    colour = {
        "pass": "green",
        "nothing_to_attack": "green",
        "warn": "yellow",
        "inconclusive": "yellow",
        "fail": "red",
        "error": "red",
        "not_applicable": "dim",
    }
    t = Table(title=f"privacy evaluation — verdict: {ev.verdict.value.upper()}")
    for col in ("metric", "value", "95 % CI", "excess [bounds]", "threshold", "severity", "status", "reason"):
        t.add_column(col, overflow="fold")
    for r in ev.results:
        ci = "—" if r.ci is None else f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}]"
        d = r.decision
        if d is None:
            excess = "—"
        elif "exposed" in d:  # a count of people (exposed_records): exposed beside what chance explains
            b = d.get("beyond") or {}
            excess = f"{d['exposed']} people, chance {d['chance']:.1f}" + (
                f", beyond it {math.floor(b['lower'])}–{math.ceil(b['upper'])}" if b else ""
            )
        elif d.get("excess") is None or d.get("lower") is None or d.get("upper") is None:
            excess = str(d.get("guarantee") or "—")  # a gate not run at this size has no excess (issue 54)
        else:
            excess = f"{d['excess']:.3f} [{d['lower']:.3f}, {d['upper']:.3f}]"
        st = r.status.value
        t.add_row(
            r.id,
            _fmt(r.value),
            ci,
            excess,
            _fmt(r.threshold),
            r.severity.value,
            f"[{colour.get(st, 'red')}]{st}[/]",
            r.reason or "",
        )
    console = Console(width=max(120, Console().width))
    console.print(t)
    for name, d in ev.risks.items():
        st = d["status"]
        tone = "green" if st == "pass" else "red" if st == "fail" else "yellow"
        extra = "" if d["required"] else " (not required)"
        console.print(f"risk {name}: [{tone}]{st}[/]{extra}", markup=True, highlight=False)
    for name, why in ev.waivers.items():
        what = f"risk {name}" if name in RISK_NAMES else f"policy {name}"  # a loosening, not a risk
        console.print(
            f"{what}: [yellow]waived by the policy[/] ({why}): publication needs a sign-off",
            markup=True,
            highlight=False,
        )
    if ev.detection_floor:  # one floor (issue 57): in people when the count ran (its sentence below)
        from ..report.summary import floor_sentence

        console.print(f"detection floor: {floor_sentence(ev).strip()}", highlight=False)
    if any(r.id == "exposed_records" and r.decision for r in ev.results):
        from ..report.summary import people_sentence

        console.print(f"exposed records: {people_sentence(ev)}", highlight=False)
    if ev.lineage:
        tone = "red" if ev.lineage["status"] == "fail" else "green"
        console.print(f"[{tone}]{sentence(ev.lineage)}[/]", markup=True, highlight=False)
        if ev.lineage.get("reason"):
            console.print(f"[red]lineage:[/] {ev.lineage['reason']}", markup=True, highlight=False)
    for b in ev.blocked_by:
        if b != "findings":
            console.print(f"[red]blocked by:[/] {b}", markup=True, highlight=False)
    for finding in ev.findings:
        console.print(f"[red]blocking:[/] {finding}", markup=True, highlight=False)


__all__ = ["print_table"]
