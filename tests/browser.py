"""Test helper: render a report in headless Chromium (offline: no host resolves, no proxy reachable)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

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
