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
from importlib import metadata
from pathlib import Path
from typing import Any

from ..data.release_ids import default_release_id
from ..engine.distance_summary import DistanceSummary
from ..evaluation import Evaluation
from ..results import MetricResult, Status
from . import plots
from .decision import badge as _status
from .decision import decision_section, summary_section
from .decision import figure as _f
from .lineage import lineage_section
from .policy_diff import differences_html
from .risks import risk_class, verdict_groups
from .sources import cite
from .threat import threat_model_html

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


def _ci(r: MetricResult) -> str:
    return "—" if r.ci is None else f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}]"


def _threshold(r: MetricResult) -> str:
    if r.threshold is None:
        return "— (informs only)"
    return f"{r.threshold:g}" + (" on CI upper" if r.on == "ci_upper" else "")


def _severity(r: MetricResult) -> str:
    """ERROR gates; WARN informs: marked as a proxy, never a gate."""
    if r.severity.value == "WARN":
        return 'WARN <span class="note">(proxy: informs only)</span>'
    return escape(r.severity.value)


def _reason(r: MetricResult) -> str:
    return escape(r.reason) if r.reason else ""


def _img(b64: str | None, alt: str, caption: str, missing: str) -> str:
    if b64 is None:
        return f'<p class="note">{escape(missing)}</p>'
    return (
        f'<figure><img alt="{escape(alt)}" src="data:image/png;base64,{b64}">'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


def _history_points(
    ev: Evaluation, history: Sequence[Mapping[str, Any]] | None, release_id: str
) -> list[dict]:
    points = [dict(h) for h in (history or []) if h.get("release") != release_id or h.get("values")]
    current = {
        "release": release_id,
        "values": {r.id: r.value for r in ev.results if r.value is not None},
        "failed": [r.id for r in ev.results if not r.passed],  # as check_history records earlier ones
        "verdict": ev.verdict.value,
        "current": True,
    }
    return [*points, current]


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
    sha = ev.tables.get("synthetic", {}).get("sha256")
    release = release_id or (default_release_id(sha) if sha else "unknown")
    utc = dt.timezone.utc
    when = (generated_at or dt.datetime.now(utc)).astimezone(utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    v = ev.verdict
    counts = {s: sum(1 for r in ev.results if r.status is s) for s in Status}
    gating = [r for r in ev.results if r.severity.value == "ERROR"]
    blockers = [r for r in gating if r.blocks]
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

    # -- WP29 mapping
    w('<h2 id="wp29">Risks measured, as the verdict decides them</h2>')
    w(
        "<p>The Article 29 Working Party names three risks an anonymisation must prevent (Opinion 05/2014; "
        f"{escape(cite('seed 004 §2.3.1'))}): singling out, linkability and inference; the verdict "
        "decides those and membership (§2.3.2), toward which the exact-match, count and distance "
        "figures of re-identification count. Gates are in bold; the distinguishability proxies inform "
        "only. A risk no gate assessed was <b>not measured</b>: the verdict says nothing about it.</p>"
    )
    w(
        '<table id="wp29-table"><thead><tr><th>risk</th><th>framework</th><th>what it '
        "means</th><th>metrics</th><th>the verdict on it</th></tr></thead><tbody>"
    )
    risks = ev.risks
    for rc, rs, name in verdict_groups(ev.results):
        ms = (
            ", ".join(
                f"<b><code>{escape(r.id)}</code></b>"
                if r.severity.value == "ERROR"
                else f"<code>{escape(r.id)}</code>"
                for r in rs
            )
            or '<span class="note">none</span>'
        )
        said = (risks[name].status if name in risks else "not assessed") if name else "informs only"
        w(
            f"<tr><td>{escape(rc.title)}</td><td>{escape(cite(rc.framework))}</td><td>{escape(rc.meaning)}</td>"
            f"<td>{ms}</td><td>{escape(said)}</td></tr>"
        )
    w("</tbody></table>")

    # -- figures
    w('<h2 id="figures">Figures</h2>')
    w('<h3 id="fig-distances">Distance to the closest training record</h3>')
    w(
        _img(
            plots.distances_figure(distances) if distances else None,
            "distance distributions",
            "Figure 2. How far each synthetic row, and each holdout row, lies from its nearest training "
            "row. Holdout rows show what closeness to expect from new people of the same population; "
            "synthetic rows piling up nearer than that (or at 0, identical to a training row) are the "
            "warning sign. Shares of rows per bin; histograms, not records.",
            "Distance distributions are not available for this report (they need the evaluation's "
            "tables; the pipeline and `dagster-privacy evaluate --report` provide them).",
        )
    )
    if distances and distances.sides:
        w(_distance_table(distances))
    w('<h3 id="fig-attacks">Attack success: training vs control</h3>')
    rates = plots.attack_rates(ev.results)
    w(
        _img(
            plots.attacks_figure(rates),
            "attack success on training vs control records",
            "Figure 3. Success rate of each simulated attack on records the generator was trained on and "
            "on control (holdout) records it never saw, with 95 % Wilson intervals. Risk is the excess of "
            f"the first over the second ({cite('seed 004 eq. 8')}); overlapping bars mean no measurable "
            "excess.",
            "No attack metric with training and control success rates ran in this evaluation.",
        )
    )
    w('<h3 id="fig-membership">Membership inference at low false-positive rates</h3>')
    w(
        _img(
            plots.membership_roc_figure(ev.results),
            "membership inference ROC on log axes",
            "Figure 3b. True-positive rate against false-positive rate of the strongest membership attack, "
            "both axes logarithmic; the dashed line is chance, the grey lines mark 0.1 % and 1 % FPR. A "
            "curve above the line at low FPR means some training records are recognisably members.",
            "membership_inference did not run in this evaluation.",
        )
    )
    w('<h3 id="fig-history">History across releases</h3>')
    points = _history_points(ev, history, release)
    w(
        _img(
            plots.history_figure(points, ev.ids) if len(points) > 1 else None,
            "metric history",
            "Figure 4. Metric values of the recorded evaluations of earlier releases and this one.",
            "No earlier evaluation is recorded (the history comes from the Dagster instance the "
            "checks run in).",
        )
    )

    # -- per-metric table
    w('<h2 id="metrics">Every metric (technical)</h2>')
    summary = ", ".join(f"{n} {s.value.replace('_', ' ')}" for s, n in counts.items() if n)
    w(f"<p>{len(ev.results)} metrics: {escape(summary) or 'none'}. ")
    if blockers:
        w("Blocking: " + ", ".join(f"<code>{escape(r.id)}</code>" for r in blockers) + ".")
    else:
        w("No gating metric blocks this release.")
    w("</p>")
    w(f'<details id="technical"><summary>The {len(ev.results)} metrics, their figures and sources</summary>')
    w(
        "<p>Values are risks in [0, 1]: 0 = private, 1 = no privacy; the interval is a 95 % confidence "
        "interval of the value. <i>raw</i> is the formula's own figure (for an attack, its success rate on "
        "training records) and <i>baseline</i> the same figure measured on the holdout — records the "
        "generator never saw — where the metric defines one: compare raw with baseline. A gate decides on "
        'its excess over the holdout and that excess\'s bounds (see <a href="#decision">What the '
        "verdict decided</a>); a metric without bounds is compared with its threshold as it is. ERROR "
        "metrics gate publication, WARN metrics inform.</p>"
    )
    w(
        '<div class="scroll"><table id="metric-table"><thead><tr><th>metric</th><th>risk (WP29 / other)</th>'
        "<th>value</th>"
        "<th>95 % CI</th><th>raw</th><th>baseline</th><th>threshold</th><th>severity</th><th>status</th>"
        "<th>source</th><th>rows used</th><th>note</th></tr></thead><tbody>"
    )
    for r in ev.results:
        sizes = ", ".join(f"{k} {n:,}" for k, n in r.sizes.items())
        w(
            f'<tr id="metric-{escape(r.id)}"><td><code>{escape(r.id)}</code></td>'
            f"<td>{escape(risk_class(r).title)}</td><td class=num>{_f(r.value)}</td><td "
            f"class=num>{_ci(r)}</td>"
            f"<td class=num>{_f(r.raw, '.4g')}</td><td class=num>{_f(r.baseline, '.4g')}</td>"
            f"<td>{escape(_threshold(r))}</td>"
            f"<td>{_severity(r)}</td><td>{_status(r.status)}</td><td>{escape(cite(r.source))}</td>"
            f"<td>{escape(sizes)}</td><td>{_reason(r)}</td></tr>"
        )
    w("</tbody></table></div>")
    w(
        _img(
            plots.metrics_figure(ev),
            "metric values against thresholds",
            "Figure 1. Each metric's value (dot, coloured by status) with its 95 % interval and the policy "
            "threshold (tick).",
            "No metric produced a value.",
        )
    )
    w("</details>")

    # -- threat model and policy
    w('<h2 id="threat-model">Threat model and policy</h2><dl>' + threat_model_html(ev.threat_model))
    w(
        f"<dt>policy</dt><dd><code>{escape(str(ev.policy.get('name', '?')))}</code> (preset "
        f"<code>{escape(str(ev.policy.get('preset') or 'none'))}</code>)</dd>"
    )
    w(f'<dt>policy sha256</dt><dd class="hash">{escape(str(ev.policy.get("sha256", "—")))}</dd>')
    if signoff is not None:
        w(f"<dt>sign-off required</dt><dd>{'yes' if signoff else 'no'}</dd>")
    w(differences_html(policy) + "</dl>" if policy is not None else "</dl>")
    w(
        '<table id="policy-table"><thead><tr><th>metric</th><th>threshold</th><th>applies to</th>'
        "<th>severity</th><th>optional (n/a allowed)</th><th>parameters</th></tr></thead><tbody>"
    )
    for r in ev.results:
        params = _params(policy, r.id)
        w(
            f"<tr><td><code>{escape(r.id)}</code></td><td class=num>{_f(r.threshold, 'g')}</td>"
            f"<td>{escape(r.on)}</td><td>{escape(r.severity.value)}</td>"
            f"<td>{'yes' if r.optional else 'no'}</td><td>{escape(params)}</td></tr>"
        )
    w("</tbody></table>")

    # -- data and reproducibility
    w('<h2 id="data">Data evaluated (fingerprints, not values)</h2>')
    w(
        '<table id="tables-table"><thead><tr><th>role</th><th>rows</th><th>columns</th><th>sha256 '
        "of the content"
        "</th></tr></thead><tbody>"
    )
    for role, t in ev.tables.items():
        label = {"real": "real (training)", "holdout": "holdout (control)"}.get(role, role)
        w(
            f"<tr><td>{escape(label)}</td><td class=num>{t.get('rows', 0):,}</td>"
            f"<td class=num>{t.get('columns', 0)}</td><td "
            f"class=hash>{escape(str(t.get('sha256', '')))}</td></tr>"
        )
    w("</tbody></table>")
    schema = ev.schema_ or {}
    cols = schema.get("columns", [])
    if cols:
        kinds = ", ".join(f"<code>{escape(c['name'])}</code> ({escape(c['kind'])})" for c in cols)
        w(f"<p><b>{len(cols)} columns used:</b> {kinds}.</p>")
    for ex in schema.get("excluded", []):
        w(f"<p>Excluded: <code>{escape(ex['name'])}</code> — {escape(ex['reason'])}</p>")
    for note in schema.get("notes", []):
        w(f'<p class="note">{escape(note)}</p>')

    w('<h2 id="reproducibility">Reproducibility</h2><dl>')
    w(f"<dt>release id</dt><dd><code>{escape(release)}</code></dd><dt>seed</dt><dd>{ev.seed}</dd>")
    total = ev.timings.get("total")
    if isinstance(total, (int, float)):
        w(f"<dt>evaluation time</dt><dd>{total:.1f} s</dd>")
    versions = {**ev.versions, "matplotlib (figures)": _version("matplotlib")}
    w(
        "<dt>library versions</dt><dd>"
        + ", ".join(f"{escape(k)} {escape(str(x))}" for k, x in versions.items())
        + "</dd></dl>"
    )

    # -- sign-off
    w('<h2 id="signoff">Sign-off</h2><div class="box">')
    if not pipeline:
        w(
            "<p>This report was written by <code>dagster-privacy evaluate</code>, outside a Dagster release "
            "pipeline: no evaluation of a release is recorded for it, so it cannot be signed off. To record "
            "a decision, run the release through the pipeline (docs/pipeline.md); its privacy check writes "
            "the report a decision binds.</p></div>"
        )
    else:
        _signoff_text(w, release)
    w(f'<p class="sub">{FORMAT} · dagster-privacy {escape(str(ev.versions.get("dagster_privacy", "")))}</p>')
    w("</main></body></html>")
    return "\n".join(out) + "\n"


def _signoff_text(w: Any, release: str) -> None:
    w(
        "<p>A release is approved by a person. Read this report, then record the decision in the privacy "
        "console (<code>dagster-privacy console</code>: sign in, open this release, Approve or Reject with a "
        "reason); it is attributed, timestamped, tied to this report's sha256 and appended to the audit "
        "table. From a shell on the Dagster machine, the same decision:</p>"
    )
    w(
        f"<p><code>dagster-privacy signoff --release {escape(release)} --decision approve|reject "
        "--by NAME --reason TEXT --report THIS_FILE.html</code></p>"
    )
    w(
        "<p>A new evaluation writes a new report and invalidates an earlier approval; a rejection keeps the "
        "release blocked.</p></div>"
    )


def _distance_table(s: DistanceSummary) -> str:
    rows = [
        '<table id="distance-table"><thead><tr><th>side</th><th>rows</th><th>identical to a training row'
        "</th><th>5th pct</th><th>25th pct</th><th>median</th></tr></thead><tbody>"
    ]
    for side in ("synthetic", "holdout"):
        d = s.sides.get(side)
        if d is None:
            continue
        q = d.quantiles
        rows.append(
            f"<tr><td>{side} → train</td><td class=num>{d.n:,}</td>"
            f"<td class=num>{d.zeros:,} ({d.zero_share:.1%})</td><td class=num>{_f(q.get('q05'), '.4f')}</td>"
            f"<td class=num>{_f(q.get('q25'), '.4f')}</td><td class=num>{_f(q.get('q50'), '.4f')}</td></tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _policy_label(ref: Any) -> str:
    """The policy in the report's header: its name and preset, never "policy policy" (a policy file
    named policy.yaml is named "policy")."""
    name, preset = str(ref.get("name") or "?"), ref.get("preset")
    of = f" (preset <code>{escape(str(preset))}</code>)" if preset and preset != name else ""
    if name.lower() == "policy":
        return f"policy file{of}"
    return f"policy <code>{escape(name)}</code>{of}"


def _params(policy: Any, metric_id: str) -> str:
    entry = getattr(policy, "metrics", {}).get(metric_id)
    return ", ".join(f"{k}={v!r}" for k, v in entry.params.items()) if entry else ""


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def write_report(
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
