"""The report's sections after the decision: the risks measured, the figures, every metric (folded),
the threat model and policy, the data evaluated and how to reproduce it, and the sign-off. Each returns
its HTML; ``html.render_report`` puts them in order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from importlib import metadata
from typing import Any

from ..engine.distance_summary import DistanceSummary
from ..evaluation import Evaluation
from ..results import MetricResult, Status
from . import plots
from .decision_section import badge as _status
from .decision_section import figure as _f
from .policy_diff import differences_html
from .risks import risk_class, verdict_groups
from .sources import cite
from .threat import threat_model_html


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


def history_points(
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


def _params(policy: Any, metric_id: str) -> str:
    entry = getattr(policy, "metrics", {}).get(metric_id)
    return ", ".join(f"{k}={v!r}" for k, v in entry.params.items()) if entry else ""


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def wp29_section(ev: Evaluation) -> str:
    """The WP29 risks and membership: each risk's metrics and what the verdict decided on it."""
    out: list[str] = []
    w = out.append
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
    return "\n".join(out)


def figures_section(ev: Evaluation, distances: DistanceSummary | None, points: list[dict]) -> str:
    """The figures: distances, attacks, membership at low false-positive rates, history."""
    out: list[str] = []
    w = out.append
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
    w(
        _img(
            plots.history_figure(points, ev.ids) if len(points) > 1 else None,
            "metric history",
            "Figure 4. Metric values of the recorded evaluations of earlier releases and this one.",
            "No earlier evaluation is recorded (the history comes from the Dagster instance the "
            "checks run in).",
        )
    )
    return "\n".join(out)


def metrics_section(ev: Evaluation) -> str:
    """Every metric's figures, folded: a technical table and its figure."""
    counts = {s: sum(1 for r in ev.results if r.status is s) for s in Status}
    blockers = [r for r in ev.results if r.severity.value == "ERROR" and r.blocks]
    out: list[str] = []
    w = out.append
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
    return "\n".join(out)


def policy_section(ev: Evaluation, policy: Any, signoff: bool | None) -> str:
    """The threat model and the policy: what was assumed and what each metric was judged by."""
    out: list[str] = []
    w = out.append
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
    return "\n".join(out)


def data_section(ev: Evaluation, release: str) -> str:
    """The tables evaluated (fingerprints, never values), the columns used, and how to reproduce the run."""
    out: list[str] = []
    w = out.append
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
    return "\n".join(out)


def signoff_section(release: str, pipeline: bool) -> str:
    """How this report is signed off (a pipeline's report) or why it cannot be."""
    out: list[str] = []
    w = out.append
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
    return "\n".join(out)
