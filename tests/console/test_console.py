"""The officer console (issue 33) on a real Dagster instance, served by uvicorn on a free port: the whole
flow in headless Chromium (sign in, list, open the report, approve with a reason, see it in the audit
page and in Dagster, publish, withdraw), and the attacks over plain HTTP: no identity, a forged proxy
header, a missing or wrong CSRF token, a reason holding a script, a report whose column name holds a
script, a release id with ../, a decision on a report that is not current, and a canary of the real
table on no page."""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
import uvicorn
from browser import Browser, needs_chromium
from test_signoff import CANARY, SYN, Env, _published

from dagster_privacy.console import ConsoleSettings, build_console
from dagster_privacy.console.identity import Users
from dagster_privacy.pipeline.governance.signoff import SIGNOFF_CHECK, current_evaluation

PASSWORD = "correct horse battery staple"
#: the reverse proxy's shared secret (issue 44, break 1: the proxy proves itself, not its address)
PROXY_SECRET = "s3cret-of-the-proxy-" + "x" * 24
SECRET = {"X-Dagster-Privacy-Proxy-Secret": PROXY_SECRET}
HOSTILE_COLUMN = "occ<script>window.__pwned=1</script>"
SHOTS = os.environ.get("DAGSTER_PRIVACY_CONSOLE_SHOTS")  # docs/img/console-*.png were taken with it


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    def __init__(self, settings: ConsoleSettings) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(build_console(settings), host="127.0.0.1", port=self.port, log_level="error",
                                proxy_headers=False)  # as the CLI runs it  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "console did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class _LocalSecure(http.cookiejar.DefaultCookiePolicy):
    """Send Secure cookies to 127.0.0.1 over http, as browsers do for a local address."""

    def return_ok_secure(self, cookie, request):  # noqa: ANN001, ANN201
        return request.host.split(":")[0] == "127.0.0.1" or super().return_ok_secure(cookie, request)


class Client:
    """A cookie-keeping HTTP client that does not follow redirects (so a 303 is seen as one)."""

    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.base, self.headers = base, dict(headers or {})
        self.jar = http.cookiejar.CookieJar(policy=_LocalSecure())

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):  # noqa: ANN002, ANN003
                return None

        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)

    def request(self, path: str, form: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        req = urllib.request.Request(self.base + path, data=data, headers=self.headers)
        try:
            with self.opener.open(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def csrf(self, path: str) -> str:
        body = self.request(path)[2]
        return body.split('name="csrf" value="', 1)[1].split('"', 1)[0]

    def login(self, user: str, password: str = PASSWORD) -> int:
        token = self.csrf("/login")
        return self.request("/login", {"csrf": token, "user": user, "password": password})[0]


def sign_in(b: Browser, url: str, user: str = "dana") -> None:
    """Sign in through the console's form in the browser ``b``."""
    b.goto(url + "/login")
    b.wait_for("!!document.querySelector('input[name=password]')")
    b.js(f"""(() => {{ document.querySelector('input[name=user]').value = {user!r};
        document.querySelector('input[name=password]').value = {PASSWORD!r};
        document.querySelector('form.decide').submit(); }})()""")
    b.wait_for(f"document.body.innerText.includes('{user} (officer)')")


@contextlib.contextmanager
def own_console(settings: ConsoleSettings, tmp_path: Path, name: str = "dana", role: str = "officer"):
    """A console of its own over the world's instance, with a users file naming one user."""
    users = tmp_path / "users.json"
    Users(users).add(name, role, PASSWORD)
    own = Served(ConsoleSettings(**{**settings.__dict__, "users": str(users)}))
    try:
        yield own, users
    finally:
        own.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[tuple[Env, Served, ConsoleSettings]]:
    import test_signoff

    root = tmp_path_factory.mktemp("console")
    frames = test_signoff._frames

    def hostile_frames():  # the real table's canary stays; one column name holds a script
        return {k: f.rename({"occupation": HOSTILE_COLUMN}) for k, f in frames().items()}

    test_signoff._frames = hostile_frames
    try:
        env = Env(root)
    finally:
        test_signoff._frames = frames
    os.environ["DAGSTER_PRIVACY_AUDIT"] = str(env.audit.path)
    users = root / "users.json"
    Users(users).add("dana", "officer", PASSWORD)
    Users(users).add("vic", "viewer", PASSWORD)
    settings = ConsoleSettings(
        instance_dir=str(env.home), audit=str(env.audit.path), target=str(env.target), users=str(users),
        proxy_header="X-Forwarded-User", trusted_proxies=("10.9.9.9",), proxy_secret=PROXY_SECRET,
    )  # fmt: skip
    served = Served(settings)
    res = env.release("v1", "clean")
    assert not _published(res)  # awaiting sign-off
    yield env, served, settings
    served.stop()
    env.instance.dispose()
    os.environ.pop("DAGSTER_PRIVACY_AUDIT", None)


def test_no_identity_no_page_and_no_decision(world) -> None:
    env, served, _ = world
    anon = Client(served.url)
    status, headers, _ = anon.request("/")
    assert status == 303 and headers["location"] == "/login"
    assert anon.request("/release/v1/decision", {"decision": "approve", "reason": "x"})[0] == 401
    assert anon.request("/audit.csv")[0] == 303
    assert anon.login("dana", "wrong password") == 401
    assert anon.login("nobody") == 401
    assert env.audit.rows() == []


def test_a_proxy_header_from_an_address_that_is_not_the_proxy_is_refused(world, tmp_path) -> None:
    env, served, settings = world
    forged = Client(served.url, {"X-Forwarded-User": "dana"})
    status, _, body = forged.request("/")
    assert status == 403 and "configured proxy only" in body
    # the same header from the configured proxy (here: this host) with its secret names the user
    trusted = Served(ConsoleSettings(**{**settings.__dict__, "trusted_proxies": ("127.0.0.1",)}))
    try:
        status, _, body = Client(trusted.url, {"X-Forwarded-User": "dana", **SECRET}).request("/")
        assert status == 200 and "dana (officer)" in body
        status, _, body = Client(trusted.url, {"X-Forwarded-User": "someone", **SECRET}).request("/")
        assert status == 200 and "someone (viewer)" in body
        # issue 44, break 1: any local process reaches the console from the proxy's address; without the
        # proxy's secret (or with a wrong one) its identity header is refused, not trusted
        for forged in ({}, {"X-Dagster-Privacy-Proxy-Secret": "guess"},
                       {"X-Dagster-Privacy-Proxy-Secret": PROXY_SECRET[:-1] + "y"}):  # fmt: skip
            status, _, body = Client(trusted.url, {"X-Forwarded-User": "dana", **forged}).request("/")
            assert status == 403 and "needs the proxy" in body and "dana (officer)" not in body
    finally:
        trusted.stop()


def test_proxy_mode_without_a_secret_is_refused(world, tmp_path) -> None:
    import subprocess
    import sys

    _, _, settings = world
    with pytest.raises(ValueError, match="shared secret"):
        build_console(ConsoleSettings(**{**settings.__dict__, "proxy_secret": None}))
    base = [sys.executable, "-m", "dagster_privacy.cli", "console", "--instance", settings.instance_dir,
            "--port", str(_free_port()), "--proxy-header", "X-Forwarded-User",
            "--trusted-proxy", "127.0.0.1"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_PRIVACY_PROXY_SECRET"}
    res = subprocess.run(base, capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 2 and "shared secret" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    short = tmp_path / "short"
    short.write_text("too short")
    short.chmod(0o600)
    res = subprocess.run([*base, "--proxy-secret-file", str(short)], capture_output=True, text=True,
                         timeout=60, env=env)  # fmt: skip
    assert res.returncode == 2 and "at least 32" in res.stderr
    # a secret every local user can read, or a link to one, proves nothing (second review)
    shared = tmp_path / "shared"
    shared.write_text(PROXY_SECRET)
    shared.chmod(0o644)
    link = tmp_path / "link"
    link.symlink_to(shared)
    for path, why in ((shared, "readable by others"), (link, "not a regular file")):
        res = subprocess.run([*base, "--proxy-secret-file", str(path)], capture_output=True, text=True,
                             timeout=60, env=env)  # fmt: skip
        assert res.returncode == 2 and why in res.stderr, res.stderr


def test_forms_need_the_sessions_csrf_token_and_an_officer(world) -> None:
    env, served, _ = world
    dana = Client(served.url)
    assert dana.login("dana") == 303
    sha = current_evaluation(env.instance, SYN).report_sha256
    form = {"decision": "approve", "reason": "read it", "report_sha256": sha}
    assert dana.request("/release/v1/decision", form)[0] == 403  # no token
    assert dana.request("/release/v1/decision", {**form, "csrf": "forged"})[0] == 403
    other = Client(served.url)
    other.login("dana")
    assert dana.request("/release/v1/decision", {**form, "csrf": other.csrf("/")})[0] == 403  # not ours
    vic = Client(served.url)
    assert vic.login("vic") == 303
    status, _, body = vic.request("/release/v1/decision", {**form, "csrf": vic.csrf("/")})
    assert status == 403 and "only an officer decides" in body
    assert env.audit.rows() == []


def test_release_ids_are_looked_up_never_used_as_paths(world) -> None:
    _, served, _ = world
    dana = Client(served.url)
    dana.login("dana")
    for path in ("/release/..%2F..%2Fetc%2Fpasswd", "/release/%2e%2e/report", "/release/v1%2F..%2F..",
                 "/release/nope", "/release/v1%00/report"):  # fmt: skip
        assert dana.request(path)[0] in (404, 405), path


def test_a_decision_on_a_report_that_is_not_current_is_refused(world) -> None:
    env, served, _ = world
    dana = Client(served.url)
    dana.login("dana")
    form = {"decision": "approve", "reason": "x", "report_sha256": "0" * 64, "csrf": dana.csrf("/")}
    status, _, body = dana.request("/release/v1/decision", form)
    assert status == 409 and "is not the current evaluation" in body
    assert env.audit.rows() == []


def test_the_cli_server_trusts_the_tcp_peer_not_x_forwarded_for(world, tmp_path) -> None:
    """Review: uvicorn's proxy_headers (on by default) replaced the peer address with what a local
    client wrote in X-Forwarded-For, so any local process could pass as the proxy and approve."""
    import subprocess
    import sys

    env, _, settings = world
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster_privacy.cli", "console", "--instance", settings.instance_dir,
         "--users", str(settings.users), "--port", str(port), "--proxy-header", "X-Forwarded-User",
         "--trusted-proxy", "10.9.9.9"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "DAGSTER_PRIVACY_PROXY_SECRET": PROXY_SECRET},
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/login", timeout=2).read()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
                time.sleep(0.2)
        forged = Client(url, {"X-Forwarded-User": "dana", "X-Forwarded-For": "10.9.9.9"})
        status, _, body = forged.request("/")
        assert status == 403 and "configured proxy only" in body
    finally:
        proc.terminate()
        proc.wait(10)
    busy = subprocess.run(
        [sys.executable, "-m", "dagster_privacy.cli", "console", "--instance", settings.instance_dir,
         "--port", str(port), "--trusted-proxy", "localhost", "--proxy-header", "X"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert busy.returncode == 2 and "give the proxy's IP address" in busy.stderr
    assert len(busy.stderr.strip().splitlines()) == 1


def test_hostile_requests_get_a_refusal_with_the_headers_not_a_crash(world, tmp_path) -> None:
    env, served, settings = world
    # a body past the limit is refused from its declared length, before it is read
    req = urllib.request.Request(served.url + "/login", data=b"x" * 10, method="POST", headers={
        "Content-Type": "application/x-www-form-urlencoded", "Content-Length": str(10 * 2**20)})  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 413
    # two identity headers from the proxy: refused, not the first one taken
    trusted = Served(ConsoleSettings(**{**settings.__dict__, "trusted_proxies": ("127.0.0.1",)}))
    try:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", trusted.port, timeout=10)
        conn.putrequest("GET", "/")
        conn.putheader("X-Forwarded-User", "dana")
        conn.putheader("X-Forwarded-User", "vic")  # a proxy that appends: the client's value is first
        conn.putheader("X-Dagster-Privacy-Proxy-Secret", PROXY_SECRET)
        conn.endheaders()
        assert conn.getresponse().status == 403
        conn.close()
    finally:
        trusted.stop()
    # a users file that is not ours: a 500 page with the security headers, no traceback
    bad = tmp_path / "bad-users.json"
    bad.write_text('{"users": null}')
    broken = Served(ConsoleSettings(**{**settings.__dict__, "users": str(bad)}))
    try:
        c = Client(broken.url)
        status, headers, body = c.request("/login", {"csrf": "x", "user": "dana", "password": "y"})
        assert status == 403  # the login CSRF token is checked first
        token = c.csrf("/login")
        status, headers, body = c.request("/login", {"csrf": token, "user": "dana", "password": PASSWORD})
        assert status == 500 and "frame-ancestors 'none'" in headers["content-security-policy"]
        assert "Traceback" not in body and "users file" in body
    finally:
        broken.stop()


def test_a_session_ends_when_its_user_is_removed_and_sign_in_is_rate_limited(world, tmp_path) -> None:
    env, served, settings = world
    with own_console(settings, tmp_path, "dana", "officer") as (own, users):
        dana = Client(own.url)
        assert dana.login("dana") == 303 and dana.request("/")[0] == 200
        users.write_text('{"users": []}')
        assert dana.request("/")[0] == 303  # signed out: the file no longer names her
        Users(users).add("dana", "officer", PASSWORD)
        assert dana.login("dana") == 303 and dana.request("/")[0] == 200  # her browser: a device cookie
        tries = [Client(own.url).login("dana", "wrong password") for _ in range(6)]
        assert tries[:5] == [401] * 5 and tries[5] == 429
        assert Client(own.url).login("dana") == 429  # a new browser at this address waits 15 minutes


def test_a_flood_of_wrong_passwords_never_locks_the_officer_out(world, tmp_path) -> None:
    """Issue 44, break 7: five wrong passwords for a name from one address (behind a proxy: every
    visitor's) made the right one fail for 15 minutes. The browser that signed in before keeps its own
    count; the flood is refused without a password check after the fifth try."""
    env, served, settings = world
    with own_console(settings, tmp_path, "dana", "officer") as (own, users):
        dana = Client(own.url)
        assert dana.login("dana") == 303
        attacker = Client(own.url)
        token = attacker.csrf("/login")
        codes = {}
        for _ in range(1000):
            code = attacker.request("/login", {"csrf": token, "user": "dana", "password": "guess"})[0]
            codes[code] = codes.get(code, 0) + 1
            if code == 401:
                token = attacker.csrf("/login")
        assert codes == {401: 5, 429: 995}
        assert dana.login("dana") == 303 and dana.request("/")[0] == 200


def test_a_password_change_ends_the_sessions_of_the_old_password(world, tmp_path) -> None:
    """Issue 44, break 6: `console add-user` with a new password left existing sessions working."""
    env, served, settings = world
    with own_console(settings, tmp_path, "dana", "officer") as (own, users):
        dana, other = Client(own.url), Client(own.url)
        assert dana.login("dana") == 303 and other.login("dana") == 303
        Users(users).add("dana", "officer", "a brand new passphrase")
        assert dana.request("/")[0] == 303 and other.request("/")[0] == 303  # both signed out
        assert dana.login("dana") == 401 and dana.login("dana", "a brand new passphrase") == 303
        assert dana.request("/")[0] == 200


def test_a_burst_of_parallel_guesses_gets_five_password_checks(world, tmp_path) -> None:
    """Second review: the count was read before the password check and written after it, so 200
    parallel tries were all checked. Each try is counted before its check now."""
    from concurrent.futures import ThreadPoolExecutor

    env, served, settings = world
    with own_console(settings, tmp_path, "vic", "viewer") as (own, users):
        attacker = Client(own.url)
        token = attacker.csrf("/login")
        cookie = "; ".join(f"{c.name}={c.value}" for c in attacker.jar)  # the one login token, fixed:
        body = urllib.parse.urlencode({"csrf": token, "user": "vic", "password": "guess"}).encode()

        def guess(_: int) -> int:  # a shared cookie jar would take each 401's fresh token mid-burst
            req = urllib.request.Request(own.url + "/login", data=body, headers={"Cookie": cookie})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    return r.status
            except urllib.error.HTTPError as e:
                return e.code

        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(guess, range(60)))
        assert codes.count(401) <= 5 and codes.count(401) + codes.count(429) == 60, codes


def test_the_failure_table_is_capped(monkeypatch) -> None:
    from dagster_privacy.console import app as console_app

    monkeypatch.setattr(console_app, "MAX_FAIL_KEYS", 3)
    holder = console_app.Console.__new__(console_app.Console)
    holder._fails = {}
    for i in range(10):
        holder._failed((f"user{i}", "10.0.0.1"), [float(i)], float(i))
    assert len(holder._fails) == 3 and ("user9", "10.0.0.1") in holder._fails


def test_no_decision_on_a_report_the_console_cannot_show(world) -> None:
    env, served, _ = world
    cur = current_evaluation(env.instance, SYN)
    report = Path(cur.report_path)
    moved = report.with_suffix(".moved")
    report.rename(moved)
    try:
        dana = Client(served.url)
        dana.login("dana")
        form = {"decision": "approve", "reason": "never read it", "report_sha256": cur.report_sha256,
                "csrf": dana.csrf("/")}  # fmt: skip
        status, _, body = dana.request("/release/v1/decision", form)
        assert status == 409 and "cannot be read" in body
        assert "approval recorded" not in dana.request("/release/v1?done=approve")[2]
    finally:
        moved.rename(report)
    assert env.audit.rows() == []


@pytest.mark.slow
@needs_chromium()
def test_the_whole_flow_in_a_browser(world, tmp_path) -> None:
    env, served, _ = world
    shots = Path(SHOTS) if SHOTS else tmp_path
    url = served.url
    with Browser(width=1024, height=900) as b:
        b.goto(url + "/")
        b.wait_for("!!document.querySelector('input[name=password]')")
        b.js(f"""(() => {{ document.querySelector('input[name=user]').value = 'dana';
            document.querySelector('input[name=password]').value = {PASSWORD!r};
            document.querySelector('form.decide').submit(); }})()""")
        b.wait_for("document.body.innerText.includes('dana (officer)')")
        assert b.js("document.body.innerText.includes('Awaiting decision')")
        assert b.js("document.documentElement.scrollWidth <= 1024")  # no horizontal overflow
        b.screenshot(shots / "console-releases.png")
        b.goto(url + "/release/v1")
        b.wait_for("!!document.querySelector('form.decide textarea')")
        sha = current_evaluation(env.instance, SYN).report_sha256
        assert b.js(f"document.body.innerText.includes({sha!r})")  # the hash the decision binds
        # the evidence report: served sandboxed; its column name's script does not run
        b.goto(url + "/release/v1/report")
        b.wait_for("document.body && document.body.innerText.includes('Verdict')")
        assert b.js("window.__pwned === undefined")
        assert b.js(f"document.body.innerText.includes({HOSTILE_COLUMN!r})")  # shown as text
        b.screenshot(shots / "report-summary.png")
        b.goto(url + "/release/v1")
        b.wait_for("!!document.querySelector('form.decide textarea')")
        reason = "Read the report <script>window.__pwned=1</script> & the audit"
        b.js(f"""(() => {{ document.querySelector('textarea[name=reason]').value = {reason!r};
            document.querySelector('button[value=approve]').click(); }})()""")
        b.wait_for("document.body.innerText.includes('approval recorded')")
        assert b.js("window.__pwned === undefined")
        assert b.js(f"document.body.innerText.includes({reason!r})")  # the reason, as text
        b.screenshot(shots / "console-release.png")
        # Dagster holds the same decision (one code path with the CLI)
        rec = env.instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(SYN, SIGNOFF_CHECK))
        meta = {k: v.value for k, v in rec.evaluation.metadata.items()}
        assert rec.evaluation.passed and meta["approver"] == "dana" and meta["reason"] == reason
        b.goto(url + "/audit")
        b.wait_for("document.body.innerText.includes('hash chain intact')")
        assert b.js("document.body.innerText.includes('approve')")
        b.screenshot(shots / "console-audit.png")
        published = env.publish()
        assert published.success and _published(published)
        b.goto(url + "/release/v1")
        b.wait_for("document.body.innerText.includes('Withdraw the publication')")
        b.js("""(() => { document.querySelector('textarea[name=reason]').value = 'consent withdrawn';
            document.querySelector('form[action$="/withdraw"] button').click(); })()""")
        b.wait_for("document.body.innerText.includes('withdrawn')")
        assert b.js("document.body.innerText.includes('consent withdrawn')")
    rows = env.audit.rows()
    assert [(r.decision, r.approver) for r in rows] == [("approve", "dana"), ("withdraw", "dana")]
    obs = env.instance.fetch_observations(dg.AssetKey("published_release"), limit=5).records
    assert obs and "withdrawn by dana" in (obs[0].asset_observation.description or "")


def test_no_canary_on_any_console_page(world) -> None:
    env, served, _ = world
    assert (env.frames["real"][HOSTILE_COLUMN] == CANARY).any()
    dana = Client(served.url)
    dana.login("dana")
    for path in ("/", "/release/v1", "/release/v1/report", "/audit", "/audit.csv", "/login", "/release/x"):
        status, headers, body = dana.request(path)
        assert CANARY not in body and CANARY not in str(headers), path
        if path.endswith("/report") and status == 200:
            assert headers["content-security-policy"].startswith("sandbox")
        elif status == 200 and not path.endswith(".csv"):
            assert "frame-ancestors 'none'" in headers["content-security-policy"]
            assert "script-src" not in headers["content-security-policy"]  # default-src 'none' governs
