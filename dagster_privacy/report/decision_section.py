"""The report's decision sections: the summary that opens it (the verdict in a sentence, one row per
risk in plain words, what to do next) and "What the verdict decided" (per-risk status, what blocks,
what the verdict guarantees: false-alarm level, assurance, detection floor; every gate's bounds)."""

from __future__ import annotations

import re
from html import escape

from ..evaluation import Evaluation
from ..results import Status
from .summary import floor_sentence, next_steps, people_sentence, plain_words, risk_lines, verdict_sentence


def figure(x: float | None, fmt: str = ".3f") -> str:
    """A figure in a report cell: '—' when missing."""
    return "—" if x is None else format(x, fmt)


def badge(s: Status | None) -> str:
    """A status as the report's coloured badge."""
    if s is None:
        return '<span class="st st-none">not measured</span>'
    return f'<span class="st st-{s.value}">{escape(s.value.replace("_", " "))}</span>'


def decision_section(ev: Evaluation) -> str:
    """What the verdict decided on, per risk, and what it guarantees (docs/metrics.md, the decision
    rule): the levels, the detection floor, what blocks it."""
    lv, floor = ev.levels, ev.detection_floor.get("verbatim_copy_fraction")
    rows = []
    by_id = {r.id: r for r in ev.results}
    for name, d in ev.risks.items():
        for g in d.gates:
            r = by_id[g]
            dec = r.decision or {}
            if "exposed" in dec:  # a count of people: exposed beyond chance, the test, the floor
                excess = f"{dec['exposed']} people, chance {dec['chance']:.0f}"
                bounds = count_test(dec)
                limit = f"floor {(dec.get('floor_people') or {}).get('verbatim') or 'none'} people"
            else:
                excess = figure(dec.get("excess"))
                bounds = f"{figure(dec.get('lower'))} – {figure(dec.get('upper'))}"
                limit = figure(r.threshold)
            rows.append(
                f"<tr><td>{escape(name)}</td><td><code>{escape(g)}</code></td><td>{badge(r.status)}</td>"
                f"<td class=num>{escape(excess)}</td><td class=num>{escape(bounds)}</td>"
                f"<td class=num>{escape(limit)}</td>"
                f"<td class=num>{escape(str(dec.get('trials', '—')))}</td></tr>"
            )
    risks = "".join(
        f"<li><b>{escape(n)}</b>: {escape(d.status)}{'' if d.required else ' (not required)'}</li>"
        for n, d in ev.risks.items()
    )
    blocked = "".join(f"<li>{escape(b)}</li>" for b in ev.blocked_by)
    floor_text = (
        "no exact-match gate ran, or none could catch a verbatim copy on these tables"
        if floor is None
        else f"{floor:.1%} of the training rows copied verbatim is caught with 95 % probability; a smaller "
        "leak may pass unseen"
    )
    return (
        '<h2 id="decision">What the verdict decided</h2>'
        f"<ul>{risks}</ul>"
        + (f"<p><b>Blocked by:</b></p><ul>{blocked}</ul>" if blocked else "")
        + '<table id="guarantee-table"><thead><tr><th>this verdict</th><th>guarantee</th></tr></thead><tbody>'
        f"<tr><td>false alarm</td><td>a release that leaks nothing fails a gate with probability at most "
        f"{lv.get('false_alarm', '—')} (over {lv.get('gates', '—')} "
        f"gate{'' if lv.get('gates') == 1 else 's'}, each at "
        f"{figure(lv.get('fail_level_per_gate'), '.4g')}{_weighted(lv)})"
        + (
            f"; except {lv['gates_without_bounds']} gate(s) this policy judges on a point figure, "
            "without bounds, which carry no such guarantee"
            if lv.get("gates_without_bounds")
            else ""
        )
        + "</td></tr>"
        f"<tr><td>assurance</td><td>a gate passes when its upper bound at {lv.get('assurance', '—')} "
        "is within its threshold — or, where the table is too small, within the policy's accepted excess "
        "and with no sign of risk (its lower bound at 5 %, the gate and each part alone, within the "
        f"threshold), which its reason states as a weaker guarantee{_weaker(ev)}; the count of people "
        "passes on its floor (below); otherwise a gate fails or lacks evidence</td></tr>"
        # one floor, in people, where the count ran (issue 57: "6.9 % of the training rows" beside "88
        # people" read as two floors that disagree); the exact-match share only where it did not
        + (
            ""
            if ev.detection_floor.get("people")
            else f"<tr><td>detection floor</td><td>{escape(floor_text)}</td></tr>"
        )
        + f"<tr><td>people</td><td>{escape(_people_guarantee(ev))}</td></tr>"
        f"<tr><td>not assessed</td><td>{escape(', '.join(ev.risks_not_assessed) or 'none')}</td></tr>"
        "</tbody></table>"
        '<table id="decision-table"><thead><tr><th>risk</th><th>gate</th><th>status</th><th>excess over '
        "holdout</th><th>bounds</th><th>threshold</th><th>trials</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        "<p>The excess is how much more often an attack succeeds on training records than on records the "
        "generator never saw. A gate fails when even the lower bound exceeds its threshold, passes when "
        "the upper bound is within it, and otherwise lacks evidence (more rows would decide).</p>"
    )


def count_test(dec: dict) -> str:
    """A count gate's test in one phrase: its smallest p-value against that part's level."""
    parts = [p for p in dec.get("parts", []) if p.get("p_value") is not None]
    if not parts:
        return "no rare holdout record to measure chance"
    p = min(parts, key=lambda q: q["p_value"] / q["level"])
    return f"{p['part']}: p = {p['p_value']:.2g} (fails at ≤ {p['level']:.2g})"


def _weaker(ev: Evaluation) -> str:
    """The gates that passed with a weaker guarantee here, by name."""
    weak = [r.id for r in ev.results if (r.decision or {}).get("guarantee") in ("weaker", "not run")]
    return f" (here: {', '.join(weak)})" if weak else ""


def _weighted(levels: dict) -> str:
    """The gates whose share of the false alarm is not the common one (weighted Bonferroni)."""
    common = levels.get("fail_level_per_gate")
    other = {g: x for g, x in (levels.get("gate_levels") or {}).items() if common and abs(x - common) > 1e-12}
    return "".join(f"; {g} at {x:.4g}" for g, x in other.items())


def _people_guarantee(ev: Evaluation) -> str:
    """The guarantee table's row in people (issue 45)."""
    people = ev.detection_floor.get("people")
    if not people:
        return "no count of exposed records ran: the verdict says nothing in people"
    k = people.get("verbatim")
    return (
        (
            f"a release that copies {k} or more rare training records verbatim fails with 95 % probability; "
            if k is not None
            else "no number of verbatim copies is sure to fail on these tables; "
        )
        + "a record is counted only when no other training record equals it (copies of records many "
        "people share are not exposures), and only beyond what the holdout shows by chance"
    )


def summary_section(ev: Evaluation, release: str, *, signoff: bool) -> str:
    """The report's first section: the verdict in a sentence, one row per risk with the gate that
    decided it (value, bounds, threshold, the holdout's own figure) in plain words, the floor and the
    false-alarm level, and what to do next."""
    rows = []
    for line in risk_lines(ev):
        g = line.decisive
        if g is None:
            rows.append(
                f"<tr><td>{escape(line.risk)}</td><td>{_word_badge(line.status)}</td>"
                "<td>—</td><td>no gate of this policy assesses it: the verdict says nothing about it"
                "</td></tr>"
            )
            continue
        dec = g.decision or {}
        gate = (
            f"<code>{escape(g.id)}</code>: {escape(count_test(dec))}"
            if "exposed" in dec
            else f"<code>{escape(g.id)}</code>: excess {figure(dec.get('excess'))} (bounds "
            f"{figure(dec.get('lower'))} – {figure(dec.get('upper'))}), threshold {figure(g.threshold)}"
        )
        others = len(line.gates) - 1
        rows.append(
            f"<tr><td>{escape(line.risk)}</td><td>{_word_badge(line.status)}</td><td>{gate}"
            + (f"<br><span class=note>and {others} other gate(s)</span>" if others > 0 else "")
            + f"</td><td>{escape(plain_words(g))}</td></tr>"
        )
    return (
        '<section id="summary"><h2>Summary</h2>'
        f'<p class="lead">{escape(verdict_sentence(ev, release))}</p>'
        '<table id="summary-table"><thead><tr><th>risk</th><th>status</th><th>decided by</th>'
        "<th>in plain words (training records vs never-seen real records)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        f"<p>{escape(people_sentence(ev))} {escape(floor_sentence(ev))}</p>"
        f'<p class="box"><b>What to do next.</b> {_code_spans(next_steps(ev, signoff=signoff))}</p></section>'
    )


def _code_spans(text: str) -> str:
    """Escaped text with its `backtick` spans as <code> (the sentence is shared with Markdown)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text))


def _word_badge(status: str) -> str:
    cls = {"pass": "pass", "fail": "fail", "fail (error)": "error", "lacking evidence": "inconclusive"}
    return f'<span class="st st-{cls.get(status, "none")}">{escape(status)}</span>'
