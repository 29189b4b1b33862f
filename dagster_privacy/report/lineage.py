"""The report's lineage section (issue 56): the release judged with the earlier releases of its lineage —
the decision in a sentence, every release with what it exposed and added, the union's parts against
chance. Counts, release ids and times only: a record is never named here (its row numbers are in the
JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from ..decision.exposure_count import SUBSTRATA
from ..lineage import sentence


def _n(x: Any) -> str:
    return "—" if x is None else f"{x:,}" if isinstance(x, int) else f"{float(x):.3g}"


def lineage_section(lineage: Mapping[str, Any]) -> str:
    """The section's HTML (escaped throughout)."""
    d = dict(lineage)
    tone = "fail" if d.get("status") == "fail" else "pass"
    out = [
        '<h2 id="lineage">Every release counts: the lineage</h2>',
        f'<p class="box verdict-{tone}" id="lineage-decision">{escape(sentence(d))}</p>',
    ]
    if d.get("reason"):
        out.append(f'<p class="box" id="lineage-reason"><b>Blocked:</b> {escape(str(d["reason"]))}</p>')
    out.append(
        "<p>A record one release exposes stays exposed: the records every counted release of the lineage "
        "exposed (reserved, published or withdrawn; a refused release does not count) are judged together "
        "with this release's, against the holdout records exposed the same way (chance), by the same exact "
        f"test per part, at this look's share of the gate's level ({_n(d.get('level'))}: the i-th look gets "
        "6/(π² i²) of it, so a lineage's looks together stay within the gate's false-alarm level).</p>"
    )
    this = {"release_id": d.get("release_id"), "status": "this release", "recorded_at": "now",
            "people": d.get("candidate_people"), "added_people": d.get("added_people")}  # fmt: skip
    rows = [*d.get("releases", []), this]
    out.append(
        '<table id="lineage-releases"><thead><tr><th>release</th><th>status</th><th>recorded</th>'
        "<th>rare records it exposed</th><th>not exposed before it</th></tr></thead><tbody>"
    )
    for r in rows:
        out.append(
            f"<tr><td><code>{escape(str(r.get('release_id')))}</code></td><td>{escape(str(r.get('status')))}</td>"
            f"<td>{escape(str(r.get('recorded_at')))}</td><td>{_n(r.get('people'))}</td>"
            f"<td>{_n(r.get('added_people'))}</td></tr>"
        )
    out.append("</tbody></table>")
    out.append(
        '<table id="lineage-parts"><thead><tr><th>part</th><th>training records exposed (union)</th>'
        "<th>rare</th><th>holdout records exposed</th><th>rare</th><th>p</th><th>level</th></tr>"
        "</thead><tbody>"
    )
    for p in d.get("parts", []):
        if p["part"] in SUBSTRATA:  # a band is tested within its part (that row's p), no level of its own
            continue
        name = str(p["part"]) + (" (with its far band)" if p.get("band") else "")
        out.append(
            f"<tr><td>{escape(name)}</td><td>{_n(p['exposed'])}</td><td>{_n(p['rare'])}</td>"
            f"<td>{_n(p['exposed_holdout'])}</td><td>{_n(p['rare_holdout'])}</td><td>{_n(p['p_value'])}</td>"
            f"<td>{_n(p['level'])}</td></tr>"
        )
    out.append("</tbody></table>")
    return "\n".join(out)


__all__ = ["lineage_section"]
