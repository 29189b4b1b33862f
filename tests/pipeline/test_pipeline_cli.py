"""Slow smoke tests of the reference code location through Dagster's own CLIs (issue 11, "Must show").

- ``dg launch --assets '*' -f definitions.py`` (Dagster 1.13's launcher; ``dagster asset materialize`` is
  superseded): a leaky release exits non-zero with its
  failing checks recorded and nothing published; a clean one publishes; a canary planted in the real
  table is in no file under DAGSTER_HOME and in no line of the output.
- ``dagster dev -w workspace.yaml`` on a free port: the location loads (GraphQL), then every process the
  test started is stopped.
- ``dagster-privacy demo``: v1 published, v2 blocked.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from conftest import Release
from gates import STANDARD_GATES_YAML
from test_pipeline import CANARY, published_ids, write_db

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    home = tmp / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    policy = tmp / "policy.yaml"
    policy.write_text(
        "seed: 0\nmetrics:\n  crp: {threshold: 0.05, severity: WARN}\n"
        "  dcr: {threshold: 0.9, severity: WARN}\n" + STANDARD_GATES_YAML
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_PRIVACY_", "DAGSTER_HOME"))}
    env.update(
        DAGSTER_HOME=str(home),
        DAGSTER_PRIVACY_DATABASE=str(tmp / "release.duckdb"),
        DAGSTER_PRIVACY_POLICY=str(policy),
        DAGSTER_PRIVACY_PUBLISH_TARGET=str(tmp / "published.duckdb"),
        DAGSTER_PRIVACY_REPORTS=str(home / "reports"),
        **extra,
    )
    return env


def _materialize(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "dg"), "launch", "--assets", "*", "-f", "definitions.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_materialize_cli_blocks_a_leaky_release_and_publishes_a_clean_one(
    tmp_path: Path, release: Release
) -> None:  # noqa: F811
    real = release.real.with_columns(
        pl.when(pl.int_range(pl.len()) % 40 == 0)
        .then(pl.lit(CANARY))
        .otherwise(pl.col("workclass"))
        .alias("workclass")
    )
    leaky = release.clean.vstack(real.head(180))  # 30 % of the training rows, canary rows among them
    db = write_db(tmp_path / "release.duckdb", real=real, holdout=release.holdout, synthetic=leaky)
    env = _env(tmp_path)
    blocked = _materialize(env)
    assert blocked.returncode != 0
    home = Path(env["DAGSTER_HOME"])
    with dg.DagsterInstance.from_config(str(home)) as instance:
        rec = instance.get_latest_asset_check_evaluation_record(
            dg.AssetCheckKey(dg.AssetKey("synthetic_table"), "crp")
        )
        assert rec is not None and rec.evaluation is not None and not rec.evaluation.passed
        assert rec.evaluation.metadata["value"].value > 0.05
        assert rec.evaluation.metadata["threshold"].value == 0.05
        assert not instance.fetch_materializations(dg.AssetKey("published_release"), limit=1).records
    assert not (tmp_path / "published.duckdb").exists()
    output = blocked.stdout + blocked.stderr
    assert "crp" in output and CANARY not in output

    write_db(db, synthetic=release.clean)
    clean = _materialize(env)
    assert clean.returncode == 0, clean.stderr[-2000:]
    assert CANARY not in clean.stdout + clean.stderr
    assert len(published_ids(tmp_path / "published.duckdb")) == 1
    leaks = [
        str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and CANARY.encode() in p.read_bytes()
    ]
    assert leaks == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _location_loaded(port: int) -> bool:
    query = (
        "{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus "
        "locationOrLoadError { __typename } } } } }"
    )
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            data = json.load(resp)
    except OSError:
        return False
    entries = data.get("data", {}).get("workspaceOrError", {}).get("locationEntries", [])
    return any(
        e["name"] == "dagster_privacy"
        and e["loadStatus"] == "LOADED"
        and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"
        for e in entries
    )


def test_dagster_dev_loads_the_location_and_stops_every_process(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [str(BIN / "dagster"), "dev", "-w", "workspace.yaml", "-p", str(port)],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 150
        loaded = False
        while time.monotonic() < deadline and proc.poll() is None:
            seen |= _descendants(proc.pid)
            if _location_loaded(port):
                loaded = True
                break
            time.sleep(1)
        assert loaded, "the code location did not load"
        seen |= _descendants(proc.pid)
        assert seen, "dagster dev started no child process"
    finally:
        seen |= _descendants(proc.pid)
        for pid in [proc.pid, *seen]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(_alive(p) for p in [proc.pid, *seen]):
            seen |= {d for p in list(seen) for d in _descendants(p)}
            time.sleep(0.5)
        for pid in [proc.pid, *seen]:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=10)
    time.sleep(0.5)
    assert [p for p in seen if _alive(p)] == []


def test_demo_command_publishes_v1_and_blocks_v2(tmp_path: Path) -> None:
    env = _env(tmp_path)
    del env["DAGSTER_PRIVACY_REPORTS"]
    out = subprocess.run(
        [str(BIN / "dagster-privacy"), "demo", "--workdir", str(tmp_path / "demo")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "release v1" in out.stdout and "PUBLISHED" in out.stdout
    assert "release v2" in out.stdout and "BLOCKED" in out.stdout
    assert "demo: v1 published, v2 blocked" in out.stdout
    assert "dagster dev -m dagster_privacy.pipeline.location" in out.stdout  # no repository needed
    assert "repository root" not in out.stdout
    assert published_ids(tmp_path / "demo" / "published.duckdb") == ["v1"]
    # issue 46: a gate's line prints the figure its threshold was compared with (the excess and its
    # bounds), never a value the threshold was not compared with
    gates = [line for line in out.stdout.splitlines() if " ERROR " in line and "threshold" in line]
    assert gates and all("excess" in line or "exposed" in line for line in gates), gates
    assert not any(" value " in line for line in gates), gates
