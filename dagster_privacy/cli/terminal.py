"""The evaluation in the terminal: the results table, each risk's decision, waivers, the floor, the people
exposed and the lineage, what blocks the release."""

from __future__ import annotations

import math

from ..evaluation import Evaluation
from ..lineage import sentence
from ..results import RISK_NAMES

#: what a result reads as (issue 57: "passed  WARN" read as a contradiction): the outcome, never the
#: metric's severity, which the "if it fails" column says
RESULT_WORDS = {
    "pass": "passed",
    "nothing_to_attack": "nothing to attack",
    "warn": "warning",
    "inconclusive": "undecided",
    "fail": "FAILED",
    "error": "error",
    "not_applicable": "not run",
}
#: what a failing result does, by severity
ON_FAILURE = {"ERROR": "blocks", "WARN": "warns"}
#: the terminal width the table is laid out for when stdout is not a terminal (a log, a pipe)
WIDTH = 100


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _excess(d: dict | None) -> str:
    """The decision's excess over chance with its bounds, in people for the count."""
    if d is None:
        return "—"
    if "exposed" in d:  # a count of people (exposed_records): exposed beside what chance explains
        b = d.get("beyond") or {}
        return f"{d['exposed']} people, chance {d['chance']:.1f}" + (
            f", beyond {math.floor(b['lower'])}–{math.ceil(b['upper'])}" if b else ""
        )
    if d.get("excess") is None or d.get("lower") is None or d.get("upper") is None:
        return str(d.get("guarantee") or "—")  # a gate not run at this size has no excess (issue 54)
    return f"{d['excess']:.3f} [{d['lower']:.3f}, {d['upper']:.3f}]"


def print_table(ev: Evaluation) -> None:
    """The results as a rich table on stdout, readable at 100 columns: the reasons follow the table,
    one per line, instead of a column that folds every other one to a word per line."""
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
    console = Console(width=None if Console().is_terminal else WIDTH)
    t = Table(title=f"privacy evaluation — verdict: {ev.verdict.value.upper()}")
    for col in ("metric", "if it fails", "value [95 % CI]", "excess [bounds]", "threshold", "result"):
        # ids and words whole; the figures fold
        t.add_column(col, overflow="fold", no_wrap=col in ("metric", "if it fails", "result"))
    for r in ev.results:
        ci = "" if r.ci is None else f" [{r.ci[0]:.3f}, {r.ci[1]:.3f}]"
        st = r.status.value if r.status else "unjudged"
        t.add_row(
            r.id,
            ON_FAILURE.get(r.severity.value, r.severity.value),
            _fmt(r.value) + ci,
            _excess(r.decision),
            _fmt(r.threshold),
            f"[{colour.get(st, 'red')}]{RESULT_WORDS.get(st, st)}[/]",
        )
    console.print(t)
    for r in ev.results:
        if r.reason:
            console.print(f"{r.id}: {r.reason}", highlight=False, markup=False)
    for name, d in ev.risks.items():
        st = d.status
        tone = "green" if st == "pass" else "red" if st == "fail" else "yellow"
        extra = "" if d.required else " (not required)"
        console.print(
            f"risk {name}: [{tone}]{RESULT_WORDS.get(st, st)}[/]{extra}", markup=True, highlight=False
        )
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
