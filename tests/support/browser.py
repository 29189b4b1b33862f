"""Test helper: render a report in headless Chromium (offline: no host resolves, no proxy reachable), and
drive it over the DevTools protocol on a pipe (``Browser``: stdlib only, no port, no websocket) for the
Dagster UI test."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
)


def find_chromium() -> str | None:
    """The Chromium executable (``DAGSTER_PRIVACY_CHROMIUM`` first), or None."""
    env = os.environ.get("DAGSTER_PRIVACY_CHROMIUM")
    if env:
        return env if Path(env).is_file() else shutil.which(env)
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def needs_chromium() -> Any:
    """The marker of a browser test: it skips where no Chromium is installed, except under CI=true,
    where it runs and a missing browser fails it (issue 46: a browser test that cannot start fails in
    CI, it never skips)."""
    import pytest

    ci = os.environ.get("CI", "").lower() == "true"
    return pytest.mark.skipif(find_chromium() is None and not ci, reason="Chromium not installed")


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    exe = find_chromium()
    if exe is None:
        raise FileNotFoundError(
            "Chromium not found (install Debian's `chromium` or set DAGSTER_PRIVACY_CHROMIUM)"
        )
    with tempfile.TemporaryDirectory(prefix="dp-chromium-") as profile:
        return subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )


def screenshot(
    html: str | os.PathLike[str],
    png: str | os.PathLike[str],
    *,
    width: int = 1100,
    height: int = 2400,
    timeout: float = 90.0,
) -> Path:
    """Save a PNG screenshot of a local HTML file; returns the PNG path."""
    out = Path(png).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    _run([f"--screenshot={out}", f"--window-size={width},{height}", Path(html).resolve().as_uri()], timeout)
    if not out.is_file():
        raise RuntimeError("Chromium wrote no screenshot")
    return out


def dump_dom(html: str | os.PathLike[str], *, timeout: float = 90.0) -> str:
    """The DOM Chromium built from a local HTML file (after parsing; the report has no script)."""
    return _run(["--dump-dom", Path(html).resolve().as_uri()], timeout).stdout


# the project's offline flags, except that 127.0.0.1 must stay reachable (MAP * ~NOTFOUND also
# catches the IP literal -> ERR_NAME_NOT_RESOLVED; the dead proxy needs a bypass for it)
LOCAL_FLAGS = tuple(f for f in FLAGS if not f.startswith(("--host-resolver-rules=", "--proxy-server="))) + (
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=127.0.0.1",
)


class Browser:
    def __init__(self, *, width: int = 1400, height: int = 1000) -> None:
        exe = find_chromium()
        if exe is None:
            raise FileNotFoundError("Chromium not found")
        self._profile = tempfile.TemporaryDirectory(prefix="dp-cdp-")
        to_child_r, self._to_child = os.pipe()  # we write commands, chromium reads fd 3
        self._from_child, from_child_w = os.pipe()  # chromium writes fd 4, we read

        def fds() -> None:  # in the child, before exec: put the pipe ends on 3 and 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)  # (off 3/4 first, in case they clash)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [exe, *LOCAL_FLAGS, f"--user-data-dir={self._profile.name}",
             f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, pass_fds=(3, 4), start_new_session=True,
        )  # fmt: skip
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True,
                  width=width, height=height, deviceScaleFactor=1, mobile=False)  # fmt: skip

    def call(self, method: str, *, session: bool = False, timeout: float = 30.0, **params: Any) -> dict:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:  # skip events until our answer
            while b"\0" not in self._buf:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise TimeoutError(f"no answer to {method}")
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the pipe")
                self._buf += chunk
            raw, _, self._buf = self._buf.partition(b"\0")
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def goto(self, url: str) -> None:
        res = self.call("Page.navigate", session=True, url=url)
        if res.get("errorText"):
            raise RuntimeError(f"{url}: {res['errorText']}")

    def js(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", session=True, expression=expression,
                        returnByValue=True, awaitPromise=True)  # fmt: skip
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 60.0, every: float = 0.25) -> Any:
        """Poll a JS expression until it is truthy; its value."""
        deadline, last = time.monotonic() + timeout, None
        while True:
            try:  # a page still loading may have no body yet: an exception counts as "not yet"
                value = self.js(expression)
            except RuntimeError as e:
                value, last = None, e
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"still falsy after {timeout:g} s: {expression[:80]} ({last})")
            time.sleep(every)

    def screenshot(self, png: str | os.PathLike[str]) -> Path:
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        out = Path(png)
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        for fd in (self._to_child, self._from_child):
            os.close(fd)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
