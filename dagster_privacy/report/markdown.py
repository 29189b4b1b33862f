"""A short Markdown summary of an evaluation, for check metadata (``MetadataValue.md``)."""

from __future__ import annotations

from ..evaluation import Evaluation
from ..results import MetricResult, Status
from .decision_section import count_test
from .risks import risk_class
from .summary import floor_sentence, next_steps, people_sentence, plain_words, risk_lines, verdict_sentence

ICONS = {
    Status.PASS: "pass",
    Status.WARN: "**warn**",
    Status.FAIL: "**FAIL**",
    Status.ERROR: "**ERROR**",
    Status.NOT_APPLICABLE: "n/a",
    Status.INCONCLUSIVE: "**inconclusive**",
    Status.NOTHING_TO_ATTACK: "nothing to attack",
}


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _row(r: MetricResult) -> str:
    ci = "—" if r.ci is None else f"[{r.ci[0]:.4g}, {r.ci[1]:.4g}]"
    thr = "—" if r.threshold is None else f"{r.threshold:g}" + (" (CI upper)" if r.on == "ci_upper" else "")
    note = r.reason.replace("|", "/") if r.reason else ""
    return (
        f"| `{r.id}` | {risk_class(r).title} | {_f(r.value)} | {ci} | {_f(r.raw)} | "
        f"{_f(r.baseline)} | {thr} | "
        f"{r.severity.value} | {ICONS[r.status] if r.status else ''} | {note} |"
    )


def markdown_summary(
    ev: Evaluation,
    *,
    release_id: str | None = None,
    report_path: str | None = None,
    report_sha256: str | None = None,
    signoff: bool = False,
) -> str:
    """Verdict, per-metric table, and where the full report is (path and sha256). Figures only."""
    release = release_id or ev.sha256() or "unknown"
    lines = [
        f"### Privacy verdict: **{ev.verdict.value.upper()}**",
        "",
        f"release `{release}` · policy `{ev.policy.get('name', '?')}` · seed {ev.seed}",
        "",
    ]
    if report_path:
        lines += [f"Report: `{report_path}`" + (f" (sha256 `{report_sha256}`)" if report_sha256 else ""), ""]
    lines += [f"**Blocking:** {f}" for f in ev.findings] + ([""] if ev.findings else [])
    lines += [
        verdict_sentence(ev, release),
        "",
        "| risk | status | decided by | in plain words |",
        "|---|---|---|---|",
    ]
    for line in risk_lines(ev):
        g = line.decisive
        dec = (g.decision or {}) if g else {}
        if g and "exposed" in dec:  # a count of people: the test, not an excess share
            by = f"`{g.id}`: {count_test(dec)}"
        elif g:
            by = (
                f"`{g.id}`: excess {_f(dec.get('excess'))} [{_f(dec.get('lower'))}, {_f(dec.get('upper'))}], "
                f"threshold {_f(g.threshold)}"
            )
        else:
            by = "—"
        words = plain_words(g).replace("|", "/") if g else "not assessed by this policy"
        lines.append(f"| {line.risk} | {line.status} | {by} | {words} |")
    lines += [
        "",
        people_sentence(ev),
        floor_sentence(ev).strip(),
        "",
        f"**Next:** {next_steps(ev, signoff=signoff)}",
        "",
    ]
    lines += [
        "| metric | risk | value | 95 % CI | raw | baseline | threshold | severity | status | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(r) for r in ev.results]
    tables = ", ".join(f"{role} {t.get('rows', 0):,} rows" for role, t in ev.tables.items())
    if tables:
        lines += ["", f"Tables: {tables}."]
    return "\n".join(lines) + "\n"
