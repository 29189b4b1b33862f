"""Seed 000 metrics respond to a leak (more copied training rows, higher value), and their JSON carries no
record value."""

from __future__ import annotations

import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo


def ev(real, synthetic, ids, **kw) -> dp.Evaluation:
    return dp.evaluate(
        pl.DataFrame(real), pl.DataFrame(synthetic), metrics=ids, policy="report-only", progress=False, **kw
    )


# -------------------------------------------------------------------------- leaky vs clean direction

MOVING = ["zcap", "gcap", "air", "cvp", "identifiability", "nsnd", "hitting_rate"]


@pytest.fixture(scope="module")
def leaky_and_clean() -> tuple[dp.Evaluation, dp.Evaluation]:
    df = load_demo()[:2400]
    out = []
    for f in (0.0, 0.3):
        s = leaky_split(df, f, seed=0)
        out.append(dp.evaluate(s.train, s.synthetic, metrics=MOVING, policy="report-only", progress=False))
    return out[0], out[1]


@pytest.mark.parametrize("mid", MOVING)
def test_leaky_release_scores_higher_than_clean(leaky_and_clean, mid: str) -> None:
    clean, leaky = leaky_and_clean
    assert leaky[mid].value > clean[mid].value, (mid, leaky[mid].value, clean[mid].value)


def test_no_real_value_in_the_json() -> None:
    real = {"k": ["secret-a", "secret-b", "secret-c"], "s": ["hidden-x", "hidden-y", "hidden-x"]}
    syn = {"k": ["secret-a", "secret-b"], "s": ["hidden-x", "hidden-x"]}
    e = ev(
        real,
        syn,
        ["zcap", "gcap", "air", "hitting_rate", "identifiability"],
        key_columns=["k"],
        sensitive_columns=["s"],
    )
    text = e.to_json()
    assert "secret" not in text and "hidden-" not in text
