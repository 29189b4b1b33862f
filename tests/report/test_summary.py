"""The report, decision first (issue 33 part 1): the summary opens it, one row per risk with the gate
that decided it in plain words (counts computed here by hand), sources by title, the technical table
collapsed, the sign-off text of a report written outside Dagster, the default release id as in Dagster,
and no horizontal overflow at 1,024 px in Chromium."""

from __future__ import annotations

import re

import pytest
from browser import Browser, needs_chromium
from test_report import failing, passing, tables  # noqa: F401  (module fixtures)

from dagster_privacy.report import render_report
from dagster_privacy.report.summary import plain_words, risk_lines
from dagster_privacy.results import MetricResult, Status


def test_plain_words_reads_the_worst_parts_counts() -> None:
    r = MetricResult(
        id="crp",
        status=Status.FAIL,
        evidence=[
            {"k_t": 31, "n_t": 1000, "k_c": 29, "n_c": 1000},
            {"k_t": 50, "n_t": 400, "k_c": 2, "n_c": 400},
        ],
    )
    # the second part has the larger excess: 12.5 % against 0.5 %
    assert plain_words(r) == (
        "12.5% of synthetic rows are identical to a training record; 0.5% of never-seen real records are "
        "too (of 400 and 400)"
    )
    one = MetricResult(
        id="crp", status=Status.PASS, evidence=[{"k_t": 31, "n_t": 1000, "k_c": 29, "n_c": 1000}]
    )
    assert plain_words(one).startswith("3.1% of synthetic rows are identical to a training record; 2.9% of")
    assert plain_words(MetricResult(id="x", status=Status.PASS, reason="judged on its value")) == (
        "judged on its value"
    )


def test_the_report_opens_with_the_decision(failing) -> None:  # noqa: F811
    ev, dist, p = failing
    html = render_report(ev, distances=dist, policy=p)
    order = [
        html.index(f'id="{s}"') for s in ("verdict", "summary", "decision", "fig-distances", "technical")
    ]
    assert order == sorted(order)  # verdict, summary, decision, evidence figures, then the technical table
    summary = html.split('id="summary"')[1].split("</section>")[0]
    sha = ev.tables["synthetic"]["sha256"]
    assert f"Release sha256:{sha[:16]} is blocked" in summary and "Do not publish" in summary
    for line in risk_lines(ev):
        assert f"<td>{line.risk}</td>" in summary
    assert '<details id="technical">' in html and "seed 00" not in html
    assert "Trudslev et al." in html and "(proxy: informs only)" in html
    assert "cannot be signed off" in html and "dagster-privacy signoff" not in html  # no Dagster here
    piped = render_report(ev, distances=dist, policy=p, pipeline=True, release_id="v7")
    assert "dagster-privacy signoff --release v7" in piped and "dagster-privacy console" in piped


def test_a_passing_report_says_what_to_do_next(passing) -> None:  # noqa: F811
    ev, dist, p = passing
    html = render_report(ev, distances=dist, policy=p, pipeline=True)
    summary = html.split('id="summary"')[1].split("</section>")[0]
    assert " passed" in summary and "approve or reject this report in the privacy console" in summary
    # one floor, in people where the count ran (issue 57), else the exact-match share
    assert (
        re.search(r"catches a release copying \d+ rare training records verbatim", summary)
        or re.search(r"catches verbatim copies of \d+\.\d% of the training rows", summary)
        or "No exact-match gate" in summary
    )
    assert "of none" not in summary


@pytest.mark.slow
@needs_chromium()
def test_no_horizontal_overflow_at_1024_px(failing, tmp_path) -> None:  # noqa: F811
    ev, dist, p = failing
    path = tmp_path / "r.html"
    path.write_text(render_report(ev, distances=dist, policy=p, pipeline=True))
    with Browser(width=1024, height=900) as b:
        b.goto(path.as_uri())
        b.wait_for("!!document.getElementById('summary')")
        assert b.js("document.documentElement.scrollWidth") <= 1024
        b.js("document.getElementById('technical').open = true")
        assert b.js("document.documentElement.scrollWidth") <= 1024


def test_evaluate_takes_a_release_id_and_refuses_a_path_as_one(tables, tmp_path) -> None:  # noqa: F811
    from click.testing import CliRunner

    from dagster_privacy.cli import cli

    for name in ("train", "control", "release"):
        tables[name].write_csv(tmp_path / f"{name}.csv")
    base = ["evaluate", "--real", str(tmp_path / "train.csv"), "--synthetic", str(tmp_path / "release.csv"),
            "--metrics", "crp", "--report", str(tmp_path / "r.html")]  # fmt: skip
    res = CliRunner().invoke(cli, [*base, "--release-id", "2026-11.v1"])
    assert res.exit_code == 1 and "not assessed: singling out" in res.output, res.output  # crp alone
    html = (tmp_path / "r.html").read_text()
    assert '<code id="release-id">2026-11.v1</code>' in html and "cannot be signed off" in html
    bad = CliRunner().invoke(cli, [*base, "--release-id", "../../etc"])
    assert bad.exit_code == 2 and "--release-id" in bad.output


def test_the_people_beyond_chance_read_as_words() -> None:
    from dagster_privacy.report.summary import beyond_words

    assert beyond_words(None) == "no holdout measures chance, so none can be said to be beyond it"
    assert beyond_words({"estimate": 0.0, "lower": 0.0, "upper": 0.0}) == "no more than chance explains"
    assert beyond_words({"estimate": 0.0, "lower": 0.0, "upper": 8.2}) == (
        "no more than chance would explain, at most 9 beyond it (95 %)"
    )
    assert beyond_words({"estimate": 20.0, "lower": 11.65, "upper": 20.0}) == (
        "about 20 beyond chance (at least 11, 95 %)"
    )
