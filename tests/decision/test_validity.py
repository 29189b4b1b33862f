"""The gate's false-alarm rate and detection over seeds on real records (issue 32): clean releases
(real rows the generator never saw) never fail a gate, leaks at or above the reported detection
floor are caught. The many-table version is benchmarks/bench_validity.py."""

from __future__ import annotations

import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.decision import policy as pol
from dagster_privacy.demo import load_demo

GATES = [m for m, e in pol.load_policy("standard").metrics.items() if e.blocks_on_failure]


@pytest.fixture(scope="module")
def demo():
    return load_demo().head(8000)


def _run(df, f: float, seed: int) -> dp.Evaluation:
    s = leaky_split(df, f, seed=seed)
    return dp.evaluate(s.train, s.synthetic, holdout=s.control, metrics=GATES, seed=seed, progress=False)


def test_clean_releases_never_fail_a_gate_and_pass_on_a_few_thousand_rows(demo) -> None:
    for seed in range(4):
        ev = _run(demo, 0.0, seed)
        failing = [r.id for r in ev.results if r.status in (dp.Status.FAIL, dp.Status.ERROR)]
        assert not failing, (seed, failing)  # a false alarm: evidence of risk where there is none
        assert ev.verdict is not dp.Status.FAIL, (seed, ev.blocked_by)  # 2,000 holdout rows decide
        assert set(ev.risks) == {"singling out", "linkability", "inference", "membership"}


def test_a_leak_at_the_reported_floor_is_caught_and_a_copy_leak_fails_a_gate(demo) -> None:
    """The floor in people (issue 45): that many unique training records copied verbatim fail the
    count; a 20 % copy leak fails membership."""
    import polars as pl

    base = leaky_split(demo, 0.0, seed=0)
    people = _run(demo, 0.0, 0).detection_floor["people"]["verbatim"]
    assert people is not None and people <= 50  # 2,000 holdout rows, few natural twins
    unique = base.train.filter(~base.train.is_duplicated())
    for seed in range(2):
        syn = pl.concat([base.release, unique.sample(people, seed=seed)])
        ev = dp.evaluate(base.train, syn, holdout=base.control, metrics=GATES, seed=seed, progress=False)
        assert ev.verdict is dp.Status.FAIL and "exposed_records" in ev.blocked_by, (seed, ev.blocked_by)
        assert _run(demo, 0.2, seed).risks["membership"].status == "fail"
