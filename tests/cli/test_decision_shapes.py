"""Every decision shape renders in every output (issue 54, item 3): a 101-row real table with a 60-row
holdout stopped the terminal with "internal error: KeyError" (a gate not run at this size has no
excess), and so did the Dagster check metadata. Each shape the decision rule gives is built and rendered
in the terminal, JSON, HTML report, Markdown summary and the Dagster translator; a small-table fuzz runs
the CLI over sizes, widths and column kinds and requires its JSON and report every time."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner

import dagster_privacy as dp
from dagster_privacy.cli import cli, print_table
from dagster_privacy.pipeline.translator import PrivacyCheckTranslator
from dagster_privacy.report import markdown_summary
from dagster_privacy.report.html import render_report

CANARY = "zq-canary-71"


def _table(n: int, cols: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    kinds = {
        "age": lambda: rng.integers(18, 90, n),
        "income": lambda: np.round(rng.lognormal(10, 1, n), 2),
        "city": lambda: rng.choice([CANARY, "b", "c", "d"], n),
        "member": lambda: rng.random(n) < 0.3,
        "since": lambda: [f"20{10 + int(x)}-0{1 + int(x) % 9}-1{int(x) % 9}" for x in rng.integers(0, 9, n)],
    }
    return pl.DataFrame({k: kinds[k]() for k in list(kinds)[:cols]})


@pytest.fixture(scope="module")
def small():
    real, hold, syn = _table(101, 2, 0), _table(60, 2, 1), _table(100, 2, 2)
    return dp.evaluate(real, syn, holdout=hold, policy="standard", progress=False)


def _shapes(ev: dp.Evaluation):
    """The evaluation with one result given each decision shape the rule produces."""
    base = next(r for r in ev.results if r.id == "membership_inference")
    shapes = {
        "none": None,
        "not run": {"guarantee": "not run", "fail_level": 0.007, "pass_level": 0.05},
        "evidence": {"excess": 0.01, "lower": -0.02, "upper": 0.04, "fail_level": 0.007, "pass_level": 0.05,
                     "parts": 1, "trials": 50, "sign_lower": -0.01, "sign_level": 0.05},
        "weaker": {"excess": 0.05, "lower": -0.05, "upper": 0.2, "fail_level": 0.007, "pass_level": 0.05,
                   "parts": 2, "trials": 40, "sign_lower": 0.0, "sign_level": 0.05, "guarantee": "weaker"},
        "count": {"test": "exact", "excess": 0.0, "lower": None, "upper": None, "fail_level": 0.007,
                  "pass_level": 0.05, "parts": [], "trials": 0, "exposed": 0, "chance": 0.0,
                  "floor_people": {"verbatim": None, "isolated_verbatim": None, "one_cell_edit": None}},
    }  # fmt: skip
    for name, d in shapes.items():
        r = base.model_copy(update={"decision": d})
        yield name, ev.model_copy(update={"results": [r if x.id == r.id else x for x in ev.results]}), r


def test_the_small_table_that_crashed_the_terminal_renders_everywhere(small, capsys) -> None:
    r = next(x for x in small.results if x.id == "membership_inference")
    assert (r.decision or {}).get("guarantee") == "not run"  # the shape that raised KeyError
    for name, ev, res in _shapes(small):
        print_table(ev)
        out = capsys.readouterr().out
        assert "verdict" in out and "internal error" not in out, name
        doc = json.loads(ev.to_json())
        assert dp.Evaluation.from_json(ev.to_json()).verdict.value == doc["verdict"]
        html = render_report(ev, release_id="r1")
        assert "membership_inference" in html and CANARY not in html
        assert CANARY not in markdown_summary(ev, release_id="r1") + out
        t = PrivacyCheckTranslator()
        meta = t.metadata(res, ev, release="r1", fingerprint="f")
        assert "excess" in meta and CANARY not in t.markdown(res, "r1")


@pytest.mark.parametrize(
    ("n", "cols", "hold"),
    [(10, 1, 6), (30, 3, 18), (60, 5, 36), (101, 2, 60), (150, 4, 90), (300, 3, 180), (60, 2, 0)],
)
def test_small_table_fuzz_every_output_is_written(tmp_path, n, cols, hold) -> None:
    paths = {}
    for name, rows, seed in (("real", n, 0), ("holdout", hold, 1), ("synthetic", n, 2)):
        if rows:
            paths[name] = tmp_path / f"{name}.csv"
            _table(rows, cols, seed).write_csv(paths[name])
    args = ["evaluate", "--real", str(paths["real"]), "--synthetic", str(paths["synthetic"]),
            "--json", str(tmp_path / "o.json"), "--report", str(tmp_path / "o.html")]  # fmt: skip
    if "holdout" in paths:
        args += ["--holdout", str(paths["holdout"])]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code in (0, 1, 4), res.output
    assert "internal error" not in res.output
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["verdict"] in ("pass", "warn", "fail")
    html = (tmp_path / "o.html").read_text()
    assert "privacy" in html and CANARY not in html + res.output + json.dumps(doc.get("results"))


def test_the_terminal_reads_at_100_columns_in_words_that_are_results(small, capsys) -> None:
    """Issue 57: the 8-column table folded to a word per line at 120 columns, and "passed  WARN" read as
    a contradiction. Every line fits 100 columns; each result is an outcome word; a metric's severity
    reads as what a failure does; the reasons follow the table whole."""
    from dagster_privacy.cli.terminal import RESULT_WORDS

    print_table(small)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    header = next(line for line in out.splitlines() if "metric" in line and "result" in line)
    assert "severity" not in header and "status" not in header and "if it fails" in header
    rows = [line for line in out.splitlines() if line.startswith("│") and "metric" not in line]
    named = [line for line in rows if line.split("│")[1].strip() in {r.id for r in small.results}]
    assert len(named) == len(small.results)
    for line in named:
        assert line.split("│")[-2].strip() in set(RESULT_WORDS.values())
        assert line.split("│")[2].strip() in ("blocks", "warns")
    with_reason = [r for r in small.results if r.reason]
    assert with_reason and all(f"{r.id}: {r.reason[:40]}" in out.replace("\n", " ") for r in with_reason)
