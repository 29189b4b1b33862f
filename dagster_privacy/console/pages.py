"""The console's pages: server-rendered HTML, no script. Every text that comes from a record, a user, a
file name or a release id goes through ``esc`` (HTML-escaped, quotes too); the one stylesheet is
allowed by its hash in the Content-Security-Policy, so no other style or script can run."""

from __future__ import annotations

import base64
import hashlib
import html
import time
import urllib.parse
from collections.abc import Iterable

from ..pipeline.governance.audit import AuditRow
from .identity import User
from .release_views import STATES, ReleaseView

CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1f3a5f;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center;
flex-wrap:wrap}
header a{color:#fff}header form{margin-left:auto}main{max-width:980px;margin:1rem auto;padding:0 1rem}
table{border-collapse:collapse;width:100%;background:#fff;table-layout:fixed}
td,th{border:1px solid #d5d9e0;padding:.35rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#eef1f5}.state{font-weight:600}.fail{color:#a01c1c}.pass{color:#1f6b2a}
.note{background:#fff8e1;border:1px solid #e6c86e;padding:.5rem .8rem}
.err{background:#fdecea;border:1px solid #e0a3a0;padding:.5rem .8rem}
form.decide{background:#fff;border:1px solid #d5d9e0;padding:.8rem;margin:.8rem 0}
textarea{width:100%;min-height:4rem;box-sizing:border-box}code{overflow-wrap:anywhere}
button{padding:.35rem .9rem}
@media print{header,form{display:none}body{background:#fff}}
"""
CSS_HASH = "sha256-" + base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
#: no script, no frames, no plugin; forms post here only
CSP = (
    f"default-src 'none'; style-src '{CSS_HASH}'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def release_url(release_id: str, suffix: str = "") -> str:
    return f"/release/{urllib.parse.quote(release_id, safe='')}{suffix}"


def _when(ts: float | str | None) -> str:
    if isinstance(ts, (int, float)):
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))
    return esc(ts)


def layout(title: str, body: str, *, user: User | None = None, csrf: str | None = None) -> str:
    who = ""
    if user is not None:
        who = (
            f"<span>{esc(user.name)} ({esc(user.role)})</span>"
            f'<form method="post" action="/logout"><input type="hidden" name="csrf" value="{esc(csrf)}">'
            "<button>Sign out</button></form>"
        )
    nav = (
        '<a href="/">Releases</a><a href="/lineages">Lineages</a><a href="/audit">Audit</a>'
        if user is not None
        else ""
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · privacy console'
        f'</title><meta name="viewport" content="width=device-width"><style>{CSS}</style></head><body>'
        f"<header><strong>Privacy console</strong>{nav}{who}</header><main><h1>{esc(title)}</h1>{body}"
        "</main></body></html>"
    )


def login(csrf: str, error: str | None = None) -> str:
    body = (f'<p class="err">{esc(error)}</p>' if error else "") + (
        '<form method="post" action="/login" class="decide">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        '<p><label>User <input name="user" autocomplete="username" required></label></p>'
        '<p><label>Password <input name="password" type="password" autocomplete="current-password" '
        "required></label></p><button>Sign in</button></form>"
    )
    return layout("Sign in", body)


def release_list(views: Iterable[ReleaseView], user: User, csrf: str) -> str:
    views = list(views)
    parts = []
    for state in STATES:
        group = [v for v in views if v.state == state]
        if not group:
            continue
        rows = "".join(_listed(v) for v in reversed(group))
        parts.append(
            f"<h2>{esc(state.capitalize())} ({len(group)})</h2><table><tr><th>release</th><th>asset</th>"
            "<th>verdict</th><th>last evaluated</th><th>run</th><th>rows</th><th>generator</th>"
            f"<th>decisions</th></tr>{rows}</table>"
        )
    body = "".join(parts) or (
        "<p>No release has been evaluated in this Dagster instance yet: no asset has privacy checks that "
        "ran (build_privacy_checks writes the evidence report the console lists).</p>"
    )
    return layout("Releases", body, user=user, csrf=csrf)


def _listed(v: ReleaseView) -> str:
    """A release's row in the list: its id, asset, verdict, time, run, rows and generator (issue 57:
    releases listed by content hash alone could not be told apart)."""
    e = v.latest
    cells = [
        f'<a href="{esc(release_url(v.release_id))}">{esc(v.release_id)}</a>' + (" (current)" * v.current),
        esc(v.asset.to_user_string() if v.asset else "—"),
        esc(e.verdict if e else "—"),
        _when(e.time) if e else "—",
        f"<code>{esc(e.run_id[:8])}</code>" if e else "—",
        esc(f"{e.rows:,}" if e and e.rows is not None else "—"),
        esc(e.generator if e and e.generator else "—"),
        str(len(v.decisions)),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _decisions(rows: list[AuditRow]) -> str:
    if not rows:
        return "<p>No decision recorded.</p>"
    body = "".join(
        f"<tr><td>#{r.seq}</td><td>{esc(r.recorded_at)}</td><td class=state>{esc(r.decision)}</td>"
        f"<td>{esc(r.approver)}</td><td>{esc(r.reason)}</td><td><code>{esc((r.report_sha256 or '')[:16])}"
        "</code></td></tr>"
        for r in rows
    )
    return (
        "<table><tr><th>#</th><th>when</th><th>decision</th><th>by</th><th>reason</th>"
        f"<th>report sha256</th></tr>{body}</table>"
    )


def release_page(
    view: ReleaseView,
    *,
    user: User,
    csrf: str,
    report_ok: bool,
    can_withdraw: bool,
    message: str | None = None,
    error: str | None = None,
) -> str:
    latest = view.latest
    out = [
        f'<p class="note">{esc(message)}</p>' if message else "",
        f'<p class="err">{esc(error)}</p>' if error else "",
    ]
    out.append(f"<p>State: <span class=state>{esc(view.state)}</span></p>")
    if latest is not None:
        verdict_class = "fail" if latest.verdict == "fail" else "pass"
        out.append(
            f"<p>Latest evaluation: <span class={verdict_class}>{esc(latest.verdict)}</span>, "
            f"{_when(latest.time)}, run <code>{esc(latest.run_id[:8])}</code>"
            + (f", {latest.rows:,} rows" if latest.rows is not None else "")
            + (f", generator {esc(latest.generator)}" if latest.generator else "")
            + ".</p>"
            + (f"<p>{esc(latest.exposed_records)}</p>" if latest.exposed_records else "")
            + f'<p>Evidence report: <a href="{esc(release_url(view.release_id, "/report"))}">'
            "open the report</a>"
            f" — sha256 <code>{esc(latest.report_sha256)}</code>"
            + ("" if report_ok else ' <span class="fail">(the file is missing or changed: not served)</span>')
            + "</p>"
        )
    decidable = view.state == "awaiting decision"  # not blocked by its gates, not decided on this report
    if user.may_decide and view.current and latest is not None and view.state == "blocked by its gates":
        out.append(
            "<p>Its gates block this release: it cannot be approved. A new evaluation of a corrected "
            "release can be decided.</p>"
        )
        if report_ok:  # a rejection and its reason on record (issue 57: a blocked release offered none)
            out.append(_form(view, csrf, latest.report_sha256, ("reject",)))
    elif user.may_decide and view.current and latest is not None and view.state in ("approved", "rejected"):
        out.append(f"<p>This report is {esc(view.state)}: see the decisions below.</p>")
    if user.may_decide and view.current and latest is not None and report_ok and decidable:
        out.append(_form(view, csrf, latest.report_sha256, ("approve", "reject")))
    elif user.may_decide and not view.current and not view.publications:
        out.append("<p>A later evaluation superseded this release: only the release of the latest "
                   "evaluation can be decided.</p>")  # fmt: skip
    if user.may_decide and can_withdraw and view.publications and view.state == "published":
        out.append(
            f'<form method="post" action="{esc(release_url(view.release_id, "/withdraw"))}" class="decide">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
            "<p><label>Reason for withdrawing (required)<br>"
            '<textarea name="reason" required maxlength="2000">'
            "</textarea></label></p><button>Withdraw the publication</button></form>"
        )
    out.append("<h2>Decisions</h2>" + _decisions(view.decisions))
    if view.publications:
        rows = "".join(
            f"<tr><td>{esc(p.get('published_at'))}</td><td>{esc(p.get('action'))}</td>"
            f"<td>{esc(_by(p))}</td><td>{esc(p.get('reason'))}</td></tr>"
            for p in view.publications
        )
        out.append(
            "<h2>Publication log</h2><table><tr><th>when</th><th>action</th><th>decided by</th>"
            "<th>reason</th></tr>"
            f"{rows}</table>"
        )
    return layout(f"Release {view.release_id}", "".join(out), user=user, csrf=csrf)


def _form(view: ReleaseView, csrf: str, sha: str | None, choices: tuple[str, ...]) -> str:
    """The decision form binding the report's sha256: the buttons ``choices`` offers."""
    buttons = " ".join(f'<button name="decision" value="{c}">{c.capitalize()}</button>' for c in choices)
    return (
        f'<form method="post" action="{esc(release_url(view.release_id, "/decision"))}" class="decide">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<input type="hidden" name="report_sha256" value="{esc(sha)}">'
        "<p>Your decision binds the report above (its sha256).</p>"
        '<p><label>Reason (required)<br><textarea name="reason" required maxlength="2000"></textarea>'
        f"</label></p>{buttons}</form>"
    )


def _by(row: dict) -> str:
    """Who a publication-log row names: a publication records the officer who approved it (whoever
    ran the publication), a withdrawal the person who withdrew it."""
    who = row.get("by")
    if not who:
        return "—"
    return f"approved by {who}" if row.get("action") == "publish" else f"withdrawn by {who}"


def audit_page(rows: list[AuditRow], status: str, problems: list[str], *, user: User, csrf: str) -> str:
    cls = "err" if problems else "note"
    body = f'<p class="{cls}">{esc(status)}</p>' + "".join(f'<p class="err">{esc(p)}</p>' for p in problems)
    body += '<p><a href="/audit.csv">Export every decision as CSV</a></p>' + _decisions(rows)
    return layout("Audit", body, user=user, csrf=csrf)


def lineage_url(name: str) -> str:
    return f"/lineage/{urllib.parse.quote(name, safe='')}"


def lineages_page(names: list[str], ledger: str, *, user: User, csrf: str) -> str:
    if not names:
        body = f'<p class="note">No lineage recorded yet (ledger {esc(ledger)}).</p>'
    else:
        items = "".join(f'<li><a href="{esc(lineage_url(n))}">{esc(n)}</a></li>' for n in names)
        body = f'<p class="note">Ledger {esc(ledger)}: {len(names)} lineage(s).</p><ul>{items}</ul>'
    return layout("Lineages", body, user=user, csrf=csrf)


def lineage_page(
    name: str, releases: list, status: str, problems: list[str], *, user: User, csrf: str
) -> str:
    """A lineage's releases, oldest first: status (withdrawn ones still count), people each exposed and
    added, and the union then — exposed, chance, the lineage's decision and the room the next release has."""
    cls = "err" if problems else "note"
    body = f'<p class="{cls}">{esc(status)}</p>' + "".join(f'<p class="err">{esc(p)}</p>' for p in problems)
    rows = []
    for r in releases:
        f = r.first.figures()
        tone = "fail" if f.get("status") == "fail" else "pass"
        rows.append(
            f"<tr><td>{esc(r.first.look)}</td><td><code>{esc(r.release_id)}</code></td><td>{esc(r.status)}</td>"
            f"<td>{esc(r.first.recorded_at)}</td><td>{esc(f.get('candidate_people'))}</td>"
            f"<td>{esc(f.get('added_people'))}</td><td>{esc(f.get('people'))}</td>"
            f'<td>{float(f.get("chance") or 0):.1f}</td><td class="state {tone}">{esc(f.get("status"))}</td>'
            f"<td>{esc(f.get('room_people'))}</td></tr>"
        )
    if rows:
        cols = ("look", "release", "status", "recorded", "exposed", "new", "union then", "chance", "lineage",
                "room left")  # fmt: skip
        head = "<tr>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>"
        body += (
            "<p>Rare real records each release exposed (verbatim, near or by a margin), what it added to "
            "the lineage's union, and the union against chance (holdout records exposed the same way). "
            "A withdrawn release still counts; a refused one does not. <i>Room left</i>: how many more "
            "records copied verbatim would fail the next look.</p>"
            f'<table id="lineage-releases"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
        )
    return layout(f"Lineage {name}", body, user=user, csrf=csrf)


#: the heading of an error page: what happened, in words, beside the code
TITLES = {400: "Bad request", 403: "Not allowed", 404: "Not found", 405: "Not allowed here",
          409: "Not possible now", 413: "Too large", 429: "Too many attempts"}  # fmt: skip


def error(status: int, text: str, *, user: User | None = None, csrf: str | None = None) -> str:
    title = f"{TITLES[status]} ({status})" if status in TITLES else f"{status}"
    return layout(title, f'<p class="err">{esc(text)}</p>', user=user, csrf=csrf)


__all__ = [
    "CSP",
    "audit_page",
    "error",
    "esc",
    "layout",
    "lineage_page",
    "lineage_url",
    "lineages_page",
    "login",
    "release_list",
    "release_page",
    "release_url",
]
