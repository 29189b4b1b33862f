"""The console behind a real reverse proxy (nginx, as docs/officer-guide.md sets it up; issue 44, break
1): the proxy authenticates the user and overwrites the identity and secret headers a client sends, so a
client-set `X-Forwarded-User` never reaches the console as such; a local process that talks to the
console directly from the proxy's address has no secret and is refused."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_blocks import block
from test_console import PASSWORD, PROXY_SECRET, Client, Served, _free_port, world  # noqa: F401

from dagster_privacy.console import ConsoleSettings

NGINX_CONF = """
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {root}/body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{port};
{location}
    }}
}}
"""


def guide_location(root: Path, upstream: int) -> str:
    """docs/officer-guide.md's `location` block as printed, but for the password file, the console's
    port and the secret, which are this test's."""
    text = block("docs/officer-guide.md", 1).text
    assert text.startswith("location / {") and "$remote_user" in text
    mine = {
        "/etc/nginx/privacy-console.htpasswd": f"{root}/htpasswd",
        "127.0.0.1:8088": f"127.0.0.1:{upstream}",
        "<the secret>": PROXY_SECRET,
    }
    for printed, ours in mine.items():
        assert text.count(printed) == 1, printed
        text = text.replace(printed, ours)
    return text


def _nginx() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nginx is not installed: .ci/run installs it with apt")
        pytest.skip("nginx is not installed (Debian: apt-get install nginx)")
    return found


@pytest.fixture()
def proxied(world) -> Iterator[tuple[str, Served]]:  # noqa: F811 - the module fixture
    env, _, settings = world
    console = Served(ConsoleSettings(**{**settings.__dict__, "trusted_proxies": ("127.0.0.1",)}))
    root = Path(tempfile.mkdtemp(prefix="dp_nginx_"))
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (root / d).mkdir()
    os.chmod(root, 0o755)
    for d in root.iterdir():
        os.chmod(d, 0o777)  # nginx's workers run as nobody when started by root
    (root / "htpasswd").write_text(f"vic:{{PLAIN}}{PASSWORD}\ndana:{{PLAIN}}{PASSWORD}\n")
    os.chmod(root / "htpasswd", 0o644)
    port = _free_port()
    conf = root / "nginx.conf"
    conf.write_text(NGINX_CONF.format(root=root, port=port, location=guide_location(root, console.port)))
    proc = subprocess.Popen([_nginx(), "-c", str(conf), "-p", str(root)], stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/login", timeout=2)
            except urllib.error.HTTPError:  # 401 from nginx: it is up
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"nginx did not start: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.1)
        yield url, console
    finally:
        proc.terminate()
        proc.wait(10)
        console.stop()
        shutil.rmtree(root, ignore_errors=True)


def _basic(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()}


def test_a_client_set_identity_header_through_the_proxy_is_not_trusted(proxied) -> None:
    url, console = proxied
    forged = {"X-Forwarded-User": "dana", "X-Dagster-Privacy-Proxy-Secret": "anything"}
    status, _, body = Client(url, {**_basic("vic"), **forged}).request("/")
    assert status == 200 and "vic (viewer)" in body and "dana (officer)" not in body
    status, _, body = Client(url, _basic("dana")).request("/")  # the proxy's own word names the officer
    assert status == 200 and "dana (officer)" in body
    assert Client(url, forged).request("/")[0] == 401  # nobody unauthenticated passes the proxy
    # a local process beside the proxy, straight to the console from the proxy's address
    status, _, body = Client(console.url, {"X-Forwarded-User": "dana"}).request("/")
    assert status == 403 and "dana (officer)" not in body
