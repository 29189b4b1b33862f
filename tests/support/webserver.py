"""dagster-webserver for UI tests: started on a free port (no daemon, read-only), ready once its code
location is LOADED, stopped with its whole process group (the webserver and its code server)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)["data"]


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the whole process group (webserver + its code server), SIGKILL if it lingers."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


@contextmanager
def webserver(location: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path) -> Iterator[int]:
    """dagster-webserver with ``location`` (``-m module`` or ``-f file``); yields its port once loaded."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [BIN / "dagster-webserver", *location, "-h", "127.0.0.1", "-p", str(port), "--read-only"],
            cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                ws = graphql(
                    port, "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"
                )
                if [e["loadStatus"] for e in ws["workspaceOrError"]["locationEntries"]] == ["LOADED"]:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.25)
        yield port
    finally:
        stop(proc)
