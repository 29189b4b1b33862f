"""A surrogate key told from an identifier (issue 46, item 6): a generator that numbers its rows shares
numbers with a real table of row numbers by chance, and that is no leak; the same column carried with
copied records, or an identifier that is not a row number, still fails the verdict."""

from __future__ import annotations

import json

import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo

CANARY_ID = 7_340_001  # the first real id of the gapped column: never printed


@pytest.fixture(scope="module")
def split():
    return leaky_split(load_demo().head(3000), 0.0, seed=0)


def _numbered(df: pl.DataFrame, start: int = 1) -> pl.DataFrame:
    return df.with_columns(pl.int_range(start, start + df.height, dtype=pl.Int64).alias("student"))


def _evaluate(train: pl.DataFrame, synthetic: pl.DataFrame, holdout: pl.DataFrame) -> dp.Evaluation:
    return dp.evaluate(train, synthetic, holdout, metrics=["crp"], policy="report-only", progress=False)


def test_row_numbers_of_a_generator_are_a_surrogate_key_and_no_finding(split) -> None:
    train, syn = _numbered(split.train), _numbered(split.synthetic)  # 1…1,500 and 1…750: all shared
    ev = _evaluate(train, syn, split.control)
    assert ev.findings == []
    schema = json.loads(ev.to_json())["schema"]
    note = next(n for n in schema["notes"] if "surrogate key" in n)
    assert "'student'" in note and "750 synthetic rows share a number" in note
    excluded = {e["name"]: e for e in schema["excluded"]}
    assert excluded["student"]["judged"] == "surrogate key"
    assert excluded["student"]["synthetic_values_in_real"] == 750


def test_numbers_carried_with_copied_records_are_an_identifier(split) -> None:
    """200 training records copied with their own numbers: the numbers link synthetic rows to people."""
    train = _numbered(split.train)
    syn = pl.concat([_numbered(split.synthetic, start=5_000)[200:], train[:200]])
    ev = _evaluate(train, syn, split.control)
    assert ev.verdict is dp.Status.FAIL
    finding = next(f for f in ev.findings if "'student'" in f)
    assert "judged an identifier, not a surrogate key" in finding


def test_an_identifier_with_gaps_is_never_a_surrogate_key(split) -> None:
    """Ids that are not a dense range (employee numbers, say) are values of people: overlap fails."""
    gapped = split.train.with_columns((pl.int_range(0, split.train.height) * 7 + CANARY_ID).alias("student"))
    syn = split.synthetic.with_columns(gapped.get_column("student")[: split.synthetic.height])
    ev = _evaluate(gapped, syn, split.control)
    assert ev.verdict is dp.Status.FAIL and any("'student'" in f for f in ev.findings)
    text = json.dumps(json.loads(ev.to_json())["schema"]) + " ".join(ev.findings)
    assert str(CANARY_ID) not in text and f"{CANARY_ID:,}" not in text


@pytest.mark.parametrize("copies, edited", [(5, False), (40, True)])
def test_a_few_copies_carried_with_their_numbers_are_an_identifier(split, copies, edited) -> None:
    """Review: 5 verbatim copies, or 40 with two cells edited, carrying their real numbers among 750
    self-numbered rows were diluted by the mean agreement and judged a surrogate key."""
    train = _numbered(split.train)
    copied = train[:copies]
    if edited:
        copied = copied.with_columns(pl.col("fnlwgt") + 137, pl.col("hours-per-week") + 1)
    syn = pl.concat([_numbered(split.synthetic)[copies:], copied])
    ev = _evaluate(train, syn, split.control)
    assert any("'student'" in f and "judged an identifier" in f for f in ev.findings), ev.findings


def test_consecutive_numbers_that_do_not_start_at_one_are_an_identifier(split) -> None:
    """Review: employee numbers 7,340,001… are dense too, but they name people: not row numbers."""
    train, syn = _numbered(split.train, start=CANARY_ID), _numbered(split.synthetic, start=CANARY_ID)
    ev = _evaluate(train, syn, split.control)
    assert ev.verdict is dp.Status.FAIL and any("'student'" in f for f in ev.findings)
