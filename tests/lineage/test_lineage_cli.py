"""The lineage as a user scripts it (issue 56): ``evaluate --lineage --ledger --record`` on CSV files,
the lineage's decision in the verdict, the JSON and the terminal, ``lineage show`` and ``withdraw``, and
bad usage (exit 2, one line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from lineage_data import POLICY_YAML, copies, release, split
from lineage_data import evaluate as evaluate_api

from dagster_privacy.lineage import FileLedger, judge_lineage

K = 5


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "dagster_privacy.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("lineage_cli")
    s = split()
    out = {"real": d / "train.csv", "holdout": d / "holdout.csv", "policy": d / "policy.yaml"}
    s.train.write_csv(out["real"])
    s.holdout.write_csv(out["holdout"])
    out["policy"].write_text(POLICY_YAML)
    for i in range(6):
        out[f"r{i}"] = d / f"release{i}.csv"
        release(i, copies(i, K)).write_csv(out[f"r{i}"])
    return out


def _evaluate(files: dict[str, Path], i: int, ledger: Path, *extra: str) -> subprocess.CompletedProcess:
    return _cli("evaluate", "--real", str(files["real"]), "--holdout", str(files["holdout"]),
                "--synthetic", str(files[f"r{i}"]), "--policy", str(files["policy"]), "--lineage", "demo",
                "--ledger", str(ledger), "--release-id", f"r{i}", *extra)  # fmt: skip


def test_a_scripted_lineage_blocks_the_release_that_tips_the_union(files, tmp_path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    for i in range(4):  # the first four through the Python API: the CLI names records the same
        out = judge_lineage(evaluate_api(release(i, copies(i, K))), lineage="demo", ledger=FileLedger(ledger),
                            release_id=f"r{i}", record=True)  # fmt: skip
        assert out.lineage["status"] == "pass"
    passing = _evaluate(files, 4, ledger, "--record", "--json", str(tmp_path / "r4.json"))
    assert passing.returncode == 0, passing.stderr[-2000:]
    lin = json.loads((tmp_path / "r4.json").read_text())["lineage"]
    assert lin["status"] == "pass" and lin["look"] == 5 and lin["recorded"]["event"] == "published"
    assert "lineage demo: pass at look 5" in passing.stdout
    assert "not exposed before" in passing.stdout
    report = tmp_path / "r5.html"
    failing = _evaluate(
        files, 5, ledger, "--record", "--json", str(tmp_path / "r5.json"), "--report", str(report)
    )
    assert failing.returncode == 1, failing.stderr[-2000:]
    html = report.read_text()
    assert 'id="lineage-reason"' in html and 'id="lineage-releases"' in html and "<code>r4</code>" in html
    doc = json.loads((tmp_path / "r5.json").read_text())
    assert doc["verdict"] == "fail" and "privacy_lineage" in doc["blocked_by"]
    assert doc["lineage"]["recorded"]["event"] == "refused"
    assert {h["release_id"] for h in doc["lineage"]["held_by"]} == {f"r{i}" for i in range(5)}
    assert "blocked by: privacy_lineage" in failing.stdout
    shown = _cli("lineage", "show", "demo", "--ledger", str(ledger))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "6 release(s)" in lines[0] and "hash chain intact" in lines[0]
    assert [ln.split()[2] for ln in lines[1:]] == ["reserved"] * 4 + ["published", "refused"]
    gone = _cli("lineage", "withdraw", "demo", "r4", "--ledger", str(ledger))
    assert gone.returncode == 0 and "still counts" in gone.stdout
    again = _evaluate(files, 5, ledger, "--release-id", "r5-again")  # r4 withdrawn: still in the union
    assert again.returncode == 1 and "privacy_lineage" in again.stdout


def test_bad_lineage_usage_is_one_line_and_exit_2(files, tmp_path) -> None:
    ledger = tmp_path / "ledger.duckdb"
    base = ["evaluate", "--real", str(files["real"]), "--holdout", str(files["holdout"]), "--synthetic",
            str(files["r0"]), "--policy", str(files["policy"])]  # fmt: skip
    r = _cli(*base, "--record")
    assert r.returncode == 2 and "--record needs --lineage" in r.stderr and "Traceback" not in r.stderr
    r = _cli(*base, "--lineage", "demo")
    assert r.returncode == 2 and "go together" in r.stderr
    r = _cli(*base, "--lineage", "../etc", "--ledger", str(ledger))
    assert r.returncode == 2 and "lineage name" in r.stderr
    r = _cli(*base, "--lineage", "demo", "--ledger", str(tmp_path / "ledger.csv"))
    assert r.returncode == 2 and "DuckDB file" in r.stderr
    db = tmp_path / "real.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"create table t as select * from read_csv('{files['real']}')")
    rest = ["--synthetic", str(files["r0"]), "--policy", str(files["policy"]), "--lineage", "demo"]
    r = _cli("evaluate", "--real", f"{db}:t", "--holdout", str(files["holdout"]), *rest, "--ledger", str(db))
    assert r.returncode == 2 and "one of the input tables" in r.stderr
    # an edited ledger: one line, exit 2, the chain names the row
    ok = _evaluate(files, 0, ledger, "--record")
    assert ok.returncode == 0, ok.stderr[-2000:]
    with duckdb.connect(str(ledger)) as con:
        con.execute("update lineage_ledger set event = 'refused'")
    r = _cli("lineage", "show", "demo", "--ledger", str(ledger))
    assert r.returncode == 2 and "was altered" in r.stderr and "Traceback" not in r.stderr


def test_the_docs_commands_as_printed(files, tmp_path) -> None:
    """docs/lineage.md's shell block, run as printed in a folder holding its files."""
    from docs_blocks import block, clean_env, commands, sh

    for name, src in (("train.csv", "real"), ("holdout.csv", "holdout"), ("release-07.csv", "r0")):
        (tmp_path / name).write_bytes(files[src].read_bytes())
    ran = [sh(c, tmp_path, clean_env()) for c in commands(block("docs/lineage.md", 0).text)]
    assert [code for code, _ in ran][1:] == [0, 0], [out[-500:] for _, out in ran]
    assert ran[0][0] in (0, 1, 4) and "lineage adult-monthly" in ran[0][1], ran[0][1][-1500:]
    assert "1 release(s)" in ran[1][1] and "still counts" in ran[2][1]
    assert all("Traceback" not in out for _, out in ran)


def test_the_docs_dagster_block_defines_the_check() -> None:
    """docs/lineage.md's Python block defines privacy_lineage, blocking, on the asset it names."""
    import dagster as dg
    from docs_blocks import block

    scope = {
        "build_privacy_checks": __import__("dagster_privacy").build_privacy_checks,
        **{name: dg.AssetSpec(name) for name in ("synthetic_table", "real_table", "holdout_table")},
    }
    exec(compile(block("docs/lineage.md", 1).text, "lineage.md", "exec"), scope)  # noqa: S102 - our docs
    specs = {s.name: s for c in scope["checks"] for s in c.check_specs}
    assert specs["privacy_lineage"].blocking and specs["privacy_lineage"].asset_key == dg.AssetKey(
        "synthetic_table"
    )


def test_no_real_value_in_the_terminal_the_outputs_or_the_ledger(files, tmp_path) -> None:
    import numpy as np
    import polars as pl
    from lineage_data import with_canary

    canary = "CANARY-CLI-LINEAGE-3f8d"
    train, row = with_canary(canary)
    train.write_csv(tmp_path / "train.csv")
    pl.concat([release(0, np.array([], dtype=int)), train[[row]]]).write_csv(tmp_path / "release.csv")
    ledger, out, page = tmp_path / "ledger.duckdb", tmp_path / "out.json", tmp_path / "out.html"
    tables = ["--real", str(tmp_path / "train.csv"), "--holdout", str(files["holdout"]), "--synthetic",
              str(tmp_path / "release.csv"), "--policy", str(files["policy"])]  # fmt: skip
    outputs = ["--json", str(out), "--report", str(page)]
    runs = [
        _cli("evaluate", *tables, "--lineage", "demo", "--ledger", str(ledger), "--record", *outputs),
        _cli("lineage", "show", "demo", "--ledger", str(ledger)),
    ]
    assert runs[0].returncode in (0, 1) and runs[1].returncode == 0, runs[0].stderr[-1500:]
    assert row in json.loads(out.read_text())["lineage"]["records"]["rows"]  # counted, by row number
    for r in runs:
        assert canary not in r.stdout + r.stderr
    for f in [out, page, ledger, *Path(f"{ledger}.keys").iterdir()]:
        assert canary.encode() not in f.read_bytes(), f
