"""The officer console: a Starlette app over the Dagster instance, the audit table and the publication
log. Pages are server-rendered (pages.py); decisions take the CLI's code path (``record_signoff``,
``withdraw_release``), bound to the report hash the officer was shown.

Security: identity from a session (users file) or from a configured header sent by a configured proxy
address only; a CSRF token on every form; every page with a script-free CSP and ``frame-ancestors
'none'``; the evidence report served under ``sandbox`` (no script runs in it, whatever its column or
policy names hold); cookies HttpOnly, SameSite=Strict and Secure; sessions time out.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import secrets
import time
import urllib.parse
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ..errors import safe_reason
from ..pipeline.governance.audit import AuditError, AuditLog
from ..pipeline.resources import ReleaseIdError, valid_release_id
from . import lineages, pages
from .identity import (
    PROXY_SECRET_HEADER,
    PROXY_SECRET_MIN,
    Session,
    Sessions,
    User,
    Users,
    credential_of,
    same_token,
)
from .refusal import Refused
from .release_views import ReleaseView, audit_of, privacy_assets, releases_of

MAX_FORM = 64 * 1024

#: failed sign-ins per (name, address), or per (name, device), within FAIL_WINDOW seconds before that
#: pair waits; a browser that signed in as the user before (its device cookie) has its own count, so a
#: flood from the proxy's address never locks out the officer's browser (issue 44, break 7)
MAX_FAILS, FAIL_WINDOW = 5, 15 * 60
#: the failure table's cap (entries of at most MAX_FAILS times each: a few MB)
MAX_FAIL_KEYS = 10_000
#: how long a device cookie vouches for a browser
DEVICE_DAYS = 90
#: every response: no framing, no sniffing, no referrer, no caching of decisions or reports
HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
#: the evidence report: a sandboxed document (no script, no form, no same-origin access)
REPORT_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"


@dataclass
class ConsoleSettings:
    instance_dir: str
    #: the synthetic asset whose releases it shows (None: every asset with privacy checks, issue 46)
    asset: str | None = None
    audit: str | None = None
    target: str | None = None
    users: str | None = None
    proxy_header: str | None = None
    trusted_proxies: tuple[str, ...] = ()
    #: the secret the proxy proves itself with, in PROXY_SECRET_HEADER (issue 44: an address proves
    #: nothing on a shared host); proxy mode without one is refused
    proxy_secret: str | None = field(default=None, repr=False)
    #: the privacy checks' own prefix (several policies on one asset: build_privacy_checks(name_prefix=))
    name_prefix: str = ""
    #: the lineages' ledger (issue 56; default: beside the instance, as the lineage check writes it)
    ledger: str | None = None
    secure_cookies: bool = True
    idle_minutes: float = 30.0


def _page(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status)


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


class _SecurityHeaders:
    """HEADERS and the pages' CSP on every response, the router's own 404 and 405 included; a
    response that sets its own CSP (the sandboxed report) keeps it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.extra = [(k.lower().encode(), v.encode()) for k, v in
                      {**HEADERS, "Content-Security-Policy": pages.CSP}.items()]  # fmt: skip

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def send_with(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                have = {k for k, _ in message.get("headers", [])}
                added = [(k, v) for k, v in self.extra if k not in have]
                message = {**message, "headers": [*message.get("headers", []), *added]}
            await send(message)

        await self.app(scope, receive, send_with)


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form (the only kind the pages post), at most 64 KB, never read further; one value
    per name."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise Refused(415, "forms are posted urlencoded")
    declared = request.headers.get("content-length", "0")
    if not declared.isdigit() or int(declared) > MAX_FORM:
        raise Refused(413, "form too large")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:  # a chunked body past the limit: stop reading
            raise Refused(413, "form too large")
    try:
        pairs = urllib.parse.parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise Refused(400, "form not UTF-8") from None
    return dict(pairs)


def _one_line(text: str) -> str:
    """A textarea's lines joined (the audit refuses control characters, and CR LF are two)."""
    return " ".join(part.strip() for part in text.replace("\r", "\n").split("\n") if part.strip())


class Console:
    def __init__(self, settings: ConsoleSettings) -> None:
        if settings.proxy_header and len(settings.proxy_secret or "") < PROXY_SECRET_MIN:
            raise ValueError(
                f"proxy mode needs the proxy's shared secret (at least {PROXY_SECRET_MIN} characters): "
                "an address proves nothing on a shared host"
            )
        self.settings = settings
        self.instance = dg.DagsterInstance.from_config(settings.instance_dir)
        self.audit = AuditLog(settings.audit, instance=self.instance)
        self.users = Users(settings.users)
        self.sessions = Sessions(idle_seconds=settings.idle_minutes * 60)
        self.asset = dg.AssetKey.from_user_string(settings.asset) if settings.asset else None
        self.prefix = settings.name_prefix
        self._secret = secrets.token_bytes(32)  # proxy users' CSRF tokens; new on each start
        # __Host-: a cookie only this origin sets (no sibling subdomain can plant a login token)
        prefix = "__Host-" if settings.secure_cookies else ""
        self.session_cookie, self.login_cookie = f"{prefix}dp_session", f"{prefix}dp_login"
        self.device_cookie = f"{prefix}dp_device"
        self._fails: dict[tuple[str, str], list[float]] = {}
        self._devices: dict[str, tuple[str, str]] = {}  # device token → (user, credential fingerprint)

    # ------------------------------------------------------------------------------ identity

    def identify(self, request: Request) -> tuple[User | None, str | None]:
        """(the user, their CSRF token) or (None, None). A proxy header from an address that is not a
        configured proxy is refused outright (403), never ignored into a session login."""
        header = self.settings.proxy_header
        if header and header in request.headers:
            if not self._from_proxy(request):
                raise Refused(403, f"the {header} header is accepted from the configured proxy only")
            if not self._proxy_proven(request):
                raise Refused(403, f"the {header} header needs the proxy's secret ({PROXY_SECRET_HEADER})")
            values = request.headers.getlist(header)
            try:  # headers arrive as Latin-1; a proxy sends a UTF-8 name
                name = values[0].encode("latin-1").decode("utf-8").strip() if len(values) == 1 else ""
            except UnicodeError:
                name = ""
            if not name or not name.isprintable() or len(name) > 200:
                raise Refused(403, f"the {header} header does not name exactly one user")
            entry = self.users.get(name)
            user = User(name, entry["role"] if entry else "viewer")
            token = hmac.new(self._secret, b"csrf:" + name.encode(), "sha256").hexdigest()
            return user, token
        cookie = request.cookies.get(self.session_cookie)
        session: Session | None = self.sessions.get(cookie)
        if session is None:
            return None, None
        entry = self.users.get(session.user.name)  # a removed user, a new role or password: at once
        if (
            entry is None
            or entry["role"] != session.user.role
            or not hmac.compare_digest(credential_of(entry), session.user.credential)
        ):
            self.sessions.end(cookie)
            return None, None
        return session.user, session.csrf

    def _proxy_proven(self, request: Request) -> bool:
        """The request carries the proxy's shared secret, exactly once, compared in constant time."""
        secret = self.settings.proxy_secret
        sent = request.headers.getlist(PROXY_SECRET_HEADER)
        return bool(secret) and len(sent) == 1 and hmac.compare_digest(sent[0].encode(), str(secret).encode())

    def _from_proxy(self, request: Request) -> bool:
        """Whether the TCP peer is a configured proxy (the server must not rewrite the peer from
        X-Forwarded-For: the CLI runs uvicorn with proxy_headers off)."""
        return request.client is not None and request.client.host in self.settings.trusted_proxies

    def need(self, request: Request) -> tuple[User, str]:
        user, csrf = self.identify(request)
        if user is None:
            raise Refused(401, "sign in first")
        return user, str(csrf)

    async def decided(self, request: Request) -> tuple[User, dict[str, str]]:
        """An officer's form with a valid CSRF token (and, when the browser says, from this origin)."""
        user, csrf = self.need(request)
        origin = request.headers.get("origin")
        hosts = {request.headers.get("host")}
        if self._from_proxy(request):  # a proxy may rewrite Host and say the public one here
            hosts.add(request.headers.get("x-forwarded-host"))
        if origin and origin != "null" and urllib.parse.urlsplit(origin).netloc not in hosts:
            raise Refused(403, "the form was posted from another site")
        form = await _form(request)
        if not same_token(form.get("csrf"), csrf):
            raise Refused(403, "the form's CSRF token is missing or wrong: reload the page")
        if not user.may_decide:
            raise Refused(403, f"{user.name} is a viewer: only an officer decides")
        return user, form

    def view(self, release_id: str) -> ReleaseView:
        try:
            valid_release_id(release_id)
        except ReleaseIdError:
            raise Refused(404, "no such release") from None
        views, twice = self._releases()
        if release_id in twice:
            raise Refused(409, "a release id of several assets: start the console with --asset")
        if release_id not in views:
            raise Refused(404, "no such release")
        return views[release_id]

    def assets(self) -> list[dg.AssetKey]:  # the one given, else those whose privacy checks ran (now)
        return [self.asset] if self.asset else privacy_assets(self.instance, name_prefix=self.prefix)

    def _releases(self) -> tuple[dict[str, ReleaseView], set[str]]:
        return releases_of(
            self.instance, self.assets(), self.audit, self.settings.target, name_prefix=self.prefix
        )

    # ------------------------------------------------------------------------------ pages

    async def login_form(self, request: Request) -> Response:
        token = secrets.token_urlsafe(32)
        resp = _page(pages.login(token))
        self._cookie(resp, self.login_cookie, token, max_age=600)
        return resp

    async def login(self, request: Request) -> Response:
        form = await _form(request)
        if not same_token(form.get("csrf"), request.cookies.get(self.login_cookie)):
            raise Refused(403, "the sign-in form's CSRF token is missing or wrong: reload the page")
        name, peer = form.get("user", "").strip(), request.client.host if request.client else ""
        device = request.cookies.get(self.device_cookie) or ""
        key = (name, "device:" + device) if self._device_of(device, name) else (name, peer)
        now = time.monotonic()
        recent = [t for t in self._fails.get(key, []) if now - t < FAIL_WINDOW]
        if len(recent) >= MAX_FAILS:
            raise Refused(
                429,
                "too many failed sign-ins for this user from this address: wait 15 minutes, or sign in "
                "from a browser that has signed in as this user before",
            )
        # the try is counted before the password is checked (no await in between): parallel tries see
        # each other, so a burst gets MAX_FAILS checks, not one per request (second review)
        self._failed(key, [*recent, now], now)
        # scrypt on a worker thread: a burst of sign-ins does not stall every other page
        user = await run_in_threadpool(self.users.login, name, form.get("password", ""))
        if user is None:
            token = secrets.token_urlsafe(32)
            resp: Response = _page(pages.login(token, "unknown user or wrong password"), 401)
            self._cookie(resp, self.login_cookie, token, max_age=600)
            return resp
        self._fails.pop(key, None)
        resp = _redirect("/")
        self._cookie(resp, self.session_cookie, self.sessions.start(user))
        self._cookie(resp, self.login_cookie, "", max_age=0)
        self._cookie(resp, self.device_cookie, self._new_device(user), max_age=DEVICE_DAYS * 86400)
        return resp

    def _new_device(self, user: User) -> str:
        """A random token for this browser, held here with the user and the password it signed in with:
        one per device (its own failure count), void once the password changes."""
        token = secrets.token_urlsafe(32)
        while len(self._devices) >= MAX_FAIL_KEYS:
            del self._devices[next(iter(self._devices))]
        self._devices[token] = (user.name, user.credential)
        return token

    def _device_of(self, token: str, name: str) -> bool:
        """Whether ``token`` is a device that signed in as ``name`` with its current password."""
        held = self._devices.get(token) if token else None
        if held is None or held[0] != name:
            return False
        entry = self.users.get(name)
        return entry is not None and hmac.compare_digest(credential_of(entry), held[1])

    def _failed(self, key: tuple[str, str], times: list[float], now: float) -> None:
        """Record a failure; the table keeps at most MAX_FAIL_KEYS entries (expired ones go first, then
        the oldest), so a flood of names cannot grow it without bound."""
        self._fails.pop(key, None)
        if len(self._fails) >= MAX_FAIL_KEYS:
            for k in [k for k, ts in self._fails.items() if now - ts[-1] >= FAIL_WINDOW]:
                del self._fails[k]
        # then the oldest that is not locked: a flood of other names never frees a locked pair
        for k in [k for k, ts in self._fails.items() if len(ts) < MAX_FAILS]:
            if len(self._fails) < MAX_FAIL_KEYS:
                break
            del self._fails[k]
        while len(self._fails) >= MAX_FAIL_KEYS:
            del self._fails[next(iter(self._fails))]
        self._fails[key] = times

    async def logout(self, request: Request) -> Response:
        user, csrf = self.need(request)
        form = await _form(request)
        if not same_token(form.get("csrf"), csrf):
            raise Refused(403, "the form's CSRF token is missing or wrong")
        self.sessions.end(request.cookies.get(self.session_cookie))
        resp = _redirect("/login")
        self._cookie(resp, self.session_cookie, "", max_age=0)
        return resp

    async def index(self, request: Request) -> Response:
        user, csrf = self.need(request)
        return _page(pages.release_list(self._releases()[0].values(), user, csrf))

    def _report(self, view: ReleaseView) -> bytes | None:
        """The report's bytes, read once and checked against the recorded sha256 (None: missing or
        changed): what is hashed is what is served."""
        e = view.latest
        if e is None or not e.report_path:
            return None
        try:
            body = Path(e.report_path).read_bytes()
        except OSError:
            return None
        return body if hashlib.sha256(body).hexdigest() == e.report_sha256 else None

    async def release(self, request: Request) -> Response:
        user, csrf = self.need(request)
        view = self.view(request.path_params["release_id"])
        done = request.query_params.get("done", "")
        last = view.decisions[-1] if view.decisions else None  # said only when it is what happened
        message = None
        if last is not None and last.decision == done and last.approver == user.name:
            message = {"approve": "approval recorded", "reject": "rejection recorded"}.get(done, "withdrawn")
        return _page(
            pages.release_page(view, user=user, csrf=csrf, report_ok=self._report(view) is not None,
                               can_withdraw=bool(self.settings.target), message=message)
        )  # fmt: skip

    async def report(self, request: Request) -> Response:
        self.need(request)
        view = self.view(request.path_params["release_id"])
        body = self._report(view)
        if body is None or view.latest is None:
            raise Refused(409, "the report file is missing or no longer has its recorded sha256")
        return Response(body, media_type="text/html; charset=utf-8",
                        headers={"Content-Security-Policy": REPORT_CSP,
                                 "X-Report-SHA256": view.latest.report_sha256 or ""})  # fmt: skip

    async def decide(self, request: Request) -> Response:
        from ..pipeline.governance.signoff import SignoffError
        from ..pipeline.governance.signoff_record import record_signoff

        user, form = await self.decided(request)
        view = self.view(request.path_params["release_id"])
        if view.asset is None or view.latest is None or self._report(view) is None:  # none to read
            raise Refused(409, "not recorded: the report file is missing or changed, so it cannot be read")
        if view.state in ("approved", "rejected"):  # as the page offers: one decision per report (review)
            raise Refused(
                409, f"not recorded: this report is already {view.state}; a new evaluation is decided anew"
            )
        decision, reason = form.get("decision", ""), _one_line(form.get("reason", ""))
        try:
            record_signoff(release=view.release_id, decision=decision, by=user.name, reason=reason,
                           instance=self.instance, asset=view.asset, partition=view.latest.partition,
                           report_sha256=form.get("report_sha256") or "-", audit=self.audit,
                           name_prefix=self.prefix)  # fmt: skip
        except (SignoffError, AuditError) as exc:
            raise Refused(409, f"not recorded: {safe_reason(exc)}") from None
        return _redirect(pages.release_url(view.release_id, f"?done={decision}"))

    async def withdraw(self, request: Request) -> Response:
        from ..pipeline.governance.rejudge import withdraw_release
        from ..pipeline.publication.target import PublicationRefused, PublishTarget

        user, form = await self.decided(request)
        view = self.view(request.path_params["release_id"])
        if not self.settings.target:
            raise Refused(409, "this console was started without the publication target (--target)")
        try:
            row = withdraw_release(PublishTarget(path=self.settings.target), release_id=view.release_id,
                                   by=user.name, reason=_one_line(form.get("reason", "")), audit=self.audit,
                                   instance=self.instance)  # fmt: skip
        except (PublicationRefused, AuditError, ReleaseIdError) as exc:
            raise Refused(409, f"not withdrawn: {safe_reason(exc)}") from None
        del row
        return _redirect(pages.release_url(view.release_id, "?done=withdraw"))

    def _audit(self) -> tuple[list[Any], str, list[str]]:
        if not self.audit.path.is_file():
            return [], f"no decision recorded yet (audit table {self.audit.path})", []
        try:
            rows, anchors, problems = audit_of(self.audit, self.instance, self.assets(), self.settings.target)
        except AuditError as exc:
            return self.audit.rows(), "the audit table does not verify", [safe_reason(exc)]
        status = f"{len(rows)} decision(s), hash chain intact, {anchors} recorded head(s) compared"
        return rows, status + ("" if not problems else ": problems below"), problems

    async def audit_view(self, request: Request) -> Response:
        user, csrf = self.need(request)
        rows, status, problems = self._audit()
        return _page(pages.audit_page(rows, status, problems, user=user, csrf=csrf))

    async def audit_csv(self, request: Request) -> Response:
        self.need(request)
        rows, status, problems = self._audit()
        out = io.StringIO()
        w = csv.writer(out)
        w.writerow(["seq", "recorded_at", "release_id", "decision", "approver", "reason", "report_sha256",
                    "verdict", "row_hash", "chain"])  # fmt: skip
        for r in rows:
            chain = "broken" if problems else "intact"
            fields = (r.seq, r.recorded_at, r.release_id, r.decision, r.approver, r.reason,
                      r.report_sha256, r.verdict, r.row_hash, chain)  # fmt: skip
            w.writerow([_cell(v) for v in fields])
        attachment = {"Content-Disposition": 'attachment; filename="privacy-audit.csv"'}
        return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=attachment)

    def _cookie(self, resp: Response, key: str, value: str, *, max_age: int | None = None) -> None:
        resp.set_cookie(key, value, max_age=max_age, path="/", secure=self.settings.secure_cookies,
                        httponly=True, samesite="strict")  # fmt: skip

    # ------------------------------------------------------------------------------ the app

    def app(self) -> Starlette:
        def guarded(endpoint: Any) -> Any:
            async def run(request: Request) -> Response:
                try:
                    return await endpoint(request)
                except Refused as exc:
                    if exc.status == 401 and request.method == "GET":
                        return _redirect("/login")
                    try:
                        user, csrf = self.identify(request)
                    except Exception:  # the page says what was refused, signed in or not
                        user, csrf = None, None
                    return _page(pages.error(exc.status, exc.text, user=user, csrf=csrf), exc.status)
                except Exception as exc:  # a locked audit table, a bad users file: our page, our headers
                    return _page(pages.error(500, f"the console could not answer: {safe_reason(exc)}"), 500)

            return run

        routes = [
            Route("/login", guarded(self.login_form), methods=["GET"]),
            Route("/login", guarded(self.login), methods=["POST"]),
            Route("/logout", guarded(self.logout), methods=["POST"]),
            Route("/", guarded(self.index), methods=["GET"]),
            Route("/audit", guarded(self.audit_view), methods=["GET"]),
            Route("/audit.csv", guarded(self.audit_csv), methods=["GET"]),
            Route("/lineages", guarded(partial(lineages.lineages_view, self)), methods=["GET"]),
            Route("/lineage/{name:path}", guarded(partial(lineages.lineage_view, self)), methods=["GET"]),
            Route("/release/{release_id}", guarded(self.release), methods=["GET"]),
            Route("/release/{release_id}/report", guarded(self.report), methods=["GET"]),
            Route("/release/{release_id}/decision", guarded(self.decide), methods=["POST"]),
            Route("/release/{release_id}/withdraw", guarded(self.withdraw), methods=["POST"]),
        ]
        return Starlette(routes=routes, middleware=[Middleware(_SecurityHeaders)])


def _cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a leading = + - @ (a formula) gets a quote first."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def build_console(settings: ConsoleSettings) -> Starlette:
    return Console(settings).app()


__all__ = ["ConsoleSettings", "build_console"]
