"""Test helper: a real PostgreSQL server (Debian's ``postgresql`` package: ``initdb`` + ``pg_ctl``) in a
temporary directory on a free localhost port, for the tests of the PostgreSQL source and target.

As root (CI containers), the server runs as the ``postgres`` user the package creates: PostgreSQL
refuses to run as root. Where no server is installed the tests skip, except under CI=true, where a
missing server is a failure (``.ci/run`` installs it).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def bin_dir() -> Path | None:
    """The folder holding initdb and pg_ctl (PATH first, then Debian's /usr/lib/postgresql/N/bin)."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(candidates[-1]).parent if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server() -> Iterator[str]:
    """Start a server; yields ``postgresql://postgres@127.0.0.1:PORT`` (append ``/database``)."""
    bins = bin_dir()
    if bins is None:
        raise FileNotFoundError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="dp_pg_"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, user="postgres")
    data, port = root / "data", _free_port()

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)

    run(str(bins / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    run(str(bins / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start")
    uri = f"postgresql://postgres@127.0.0.1:{port}"
    try:
        yield uri
    finally:
        subprocess.run(
            [*as_user, str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        time.sleep(0.2)
        shutil.rmtree(root, ignore_errors=True)


def create_database(base: str, name: str) -> str:
    """A fresh database on the server at ``base``; returns its URI."""
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(f"{base}/postgres", autocommit=True) as con, con.cursor() as cur:
        cur.execute(f'drop database if exists "{name}"')
        cur.execute(f'create database "{name}"')
    return f"{base}/{name}"
