"""The evidence report: one self-contained HTML file (inline CSS, figures as base64 PNG, no script,
no external font or image) that a privacy officer reads before signing a release off.

It shows what an Evaluation holds — verdict, per-metric figures with baselines and intervals, the WP29
mapping, threat model, policy, seed, versions, table fingerprints — and figures. It never shows a
value of a record: reasons are built without record values (errors.py) and metric details are not
dumped (only the attack rates the figure needs are read from them).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from ..data.release_ids import default_release_id
from ..engine.distance_summary import DistanceSummary
from ..evaluation import Evaluation
from ..results import Status
from .decision_section import decision_section, summary_section
from .lineage import lineage_section
from .sections import (
    data_section,
    figures_section,
    history_points,
    metrics_section,
    policy_section,
    signoff_section,
    wp29_section,
)

FORMAT = "dagster-privacy/report/1"

VERDICT_TEXT = {
    Status.PASS: "PASS — every gating metric is within its threshold",
    Status.WARN: "WARN — gates passed; an advisory metric is over its threshold",
    Status.FAIL: "FAIL — a gate showed risk or errored, or a required risk lacks evidence: publication is "
    "blocked",
    Status.ERROR: "ERROR — the evaluation did not complete: publication is blocked",
    Status.NOT_APPLICABLE: "NOT APPLICABLE",
    Status.INCONCLUSIVE: "INCONCLUSIVE",
    Status.NOTHING_TO_ATTACK: "NOTHING TO ATTACK",
}

#: marks a file as a report of ours (the CLI replaces an existing --report file only when it has it)
GENERATOR = "dagster-privacy"

CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1b1f23;
     margin:0;background:#f6f7f9;font-size:14px;line-height:1.45}
main{max-width:1040px;margin:0 auto;padding:20px 28px 48px;background:#fff}
h1{font-size:22px;margin:6px 0 2px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde1e6;
   padding-bottom:4px} h3{font-size:14px;margin:16px 0 6px}
.sub{color:#57606a;font-size:12.5px}
.verdict{border-radius:6px;padding:12px 16px;margin:14px 0;font-size:18px;font-weight:700;color:#fff}
.verdict-pass{background:#1e8449}.verdict-warn{background:#b9770e}.verdict-fail,.verdict-error{background:#c0392b}
table{border-collapse:collapse;width:100%;margin:6px 0 10px;font-size:12.5px}
th,td{border:1px solid #dde1e6;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#f0f2f5;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.st{font-weight:700;border-radius:3px;padding:1px 6px;color:#fff;font-size:11.5px;white-space:nowrap}
.st-pass{background:#1e8449}.st-warn{background:#b9770e}.st-fail{background:#c0392b}.st-error{background:#7b241c}
.st-not_applicable{background:#7f8c8d}.st-inconclusive{background:#b9770e}.st-nothing_to_attack{background:#1e8449}.st-none{background:#bdc3c7;color:#1b1f23}
figure{margin:12px 0 18px} figure img{max-width:100%;border:1px solid #e5e7eb}
figcaption{color:#57606a;font-size:12.5px;margin-top:4px}
code,.hash{font-family:"SFMono-Regular",Consolas,"Liberation Mono",monospace;font-size:12px}
.hash{word-break:break-all} .note{color:#57606a;font-style:italic}
.box{border:1px solid #dde1e6;border-radius:6px;padding:10px 14px;background:#fafbfc}
dl{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:6px 0} dt{font-weight:600}
dd{margin:0}
.lead{font-size:16px;font-weight:600} #summary-table td:nth-child(-n+2){white-space:nowrap}
.scroll{overflow-x:auto} td{overflow-wrap:anywhere}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}
@media print{body{background:#fff} main{padding:0;max-width:none} details::details-content{display:block;
 content-visibility:visible} .scroll{overflow:visible} h2{break-after:avoid} tr,figure{break-inside:avoid}}
"""


def render_report(
    ev: Evaluation,
    *,
    release_id: str | None = None,
    history: Sequence[Mapping[str, Any]] | None = None,
    distances: DistanceSummary | Mapping[str, Any] | None = None,
    policy: Any = None,
    generated_at: dt.datetime | None = None,
    title: str = "Privacy evidence report",
    pipeline: bool = False,
) -> str:
    """The report as one HTML string.

    ``release_id`` defaults to the synthetic table's fingerprint. ``history`` = earlier releases,
    oldest first: ``{"release": id, "values": {metric: value}, "failed": [metric, ...]}`` (this
    evaluation is appended). ``distances`` = a DistanceSummary (or its dict); by default the one the
    evaluation carries. ``policy`` = the Policy, to show its sign-off requirement and optional metrics.
    ``pipeline``: written by the pipeline's privacy check, whose evaluation a decision can be recorded on
    (else the report says it cannot be signed off).
    """
    if distances is None and ev.distances:
        distances = ev.distances
    if isinstance(distances, Mapping):
        distances = DistanceSummary.from_dict(distances)
    sha = ev.sha256()
    release = release_id or (default_release_id(sha) if sha else "unknown")
    utc = dt.timezone.utc
    when = (generated_at or dt.datetime.now(utc)).astimezone(utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    v = ev.verdict
    out: list[str] = []
    w = out.append
    w("<!DOCTYPE html>")
    w(f'<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="{GENERATOR}">')
    w('<meta name="viewport" content="width=device-width, initial-scale=1">')
    w(f'<meta name="generator" content="{FORMAT}">')
    w(f"<title>{escape(title)} — release {escape(release)}</title>")
    w(f"<style>{CSS}</style></head><body><main>")
    w(f"<h1>{escape(title)}</h1>")
    w(
        f'<div class="sub">release <code id="release-id">{escape(release)}</code> · generated {when} · '
        f"{_policy_label(ev.policy)} · seed {ev.seed}</div>"
    )
    w(f'<div class="verdict verdict-{v.value}" id="verdict">Verdict: {escape(VERDICT_TEXT[v])}</div>')
    for finding in ev.findings:
        w(f'<p class="box" id="finding"><b>Blocking:</b> {escape(finding)}</p>')
    signoff = getattr(policy, "require_signoff", None)
    if signoff:
        w(
            '<p class="box"><b>This policy requires a recorded sign-off.</b> Even with a passing '
            "verdict, the "
            "release is published only after an approval of <i>this</i> report (by its sha256) is recorded; "
            'see <a href="#signoff">Sign-off</a>.</p>'
        )

    w(summary_section(ev, release, signoff=bool(signoff)))
    w(decision_section(ev))
    if ev.lineage:
        w(lineage_section(ev.lineage))

    w(wp29_section(ev))
    w(figures_section(ev, distances, history_points(ev, history, release)))
    w(metrics_section(ev))
    w(policy_section(ev, policy, signoff))
    w(data_section(ev, release))
    w(signoff_section(release, pipeline))
    w(f'<p class="sub">{FORMAT} · dagster-privacy {escape(str(ev.versions.get("dagster_privacy", "")))}</p>')
    w("</main></body></html>")
    return "\n".join(out) + "\n"


def _policy_label(ref: Any) -> str:
    """The policy in the report's header: its name and preset, never "policy policy" (a policy file
    named policy.yaml is named "policy")."""
    name, preset = str(ref.get("name") or "?"), ref.get("preset")
    of = f" (preset <code>{escape(str(preset))}</code>)" if preset and preset != name else ""
    if name.lower() == "policy":
        return f"policy file{of}"
    return f"policy <code>{escape(name)}</code>{of}"


def write_report(  # noqa: PLR0913
    ev: Evaluation,
    path: str | os.PathLike[str],
    *,
    release_id: str | None = None,
    history: Sequence[Mapping[str, Any]] | None = None,
    distances: DistanceSummary | Mapping[str, Any] | None = None,
    policy: Any = None,
    generated_at: dt.datetime | None = None,
    pipeline: bool = False,
    inputs: Sequence[object] = (),
) -> str:
    """Write the HTML report (atomically, never through a link nor onto one of ``inputs``:
    data/atomic.py) and return its sha256."""
    data = render_report(
        ev,
        release_id=release_id,
        history=history,
        distances=distances,
        policy=policy,
        generated_at=generated_at,
        pipeline=pipeline,
    ).encode("utf-8")
    from ..data.atomic import write_bytes_atomically

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomically(target, data, inputs=inputs)
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a written report (what a sign-off approves)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
