"""Properties every registered metric must have (style.md: scikit-learn's test_common).

Each metric declares beside itself (``@metric(..., expect=Expect(...))``) what docs/metrics.md says it
gives at synthetic = real and at an independent synthetic table (each column of a disjoint sample
shuffled on its own). A new metric gets these tests, and the invariance tests, for free.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from threadpoolctl import threadpool_info

import dagster_privacy as dp
from dagster_privacy.demo import load_demo

N = 400
KEYS = ["age", "sex", "race", "marital-status"]
SENSITIVE = ["income", "occupation"]


def _parts() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    df = load_demo()
    perm = np.random.default_rng(7).permutation(df.height)
    real, holdout, other = df[perm[:N]], df[perm[N : 2 * N]], df[perm[2 * N : 3 * N]]
    rng = np.random.default_rng(8)
    independent = pl.DataFrame(
        {c: other.get_column(c).to_numpy()[rng.permutation(N)] for c in other.columns}, schema=other.schema
    )
    return real, holdout, independent


REAL, HOLDOUT, INDEPENDENT = _parts()


def blas_threads() -> set[int]:
    """Threads of the BLAS libraries loaded in this process (scipy's loads later: compared by count)."""
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


#: BLAS threads before any metric ran in this process
BLAS_THREADS = blas_threads()
IDS = list(dp.registry())


def run(real, synthetic, holdout=HOLDOUT, *, seed=0, **kw) -> dp.Evaluation:
    return dp.evaluate(
        real,
        synthetic,
        holdout,
        metrics=IDS,
        policy="report-only",
        key_columns=KEYS,
        sensitive_columns=SENSITIVE,
        seed=seed,
        progress=False,
        **kw,
    )


@pytest.fixture(scope="module")
def base() -> dp.Evaluation:
    return run(REAL, INDEPENDENT)


@pytest.fixture(scope="module")
def copy() -> dp.Evaluation:
    return run(REAL, REAL)


@pytest.fixture(scope="module")
def shuffled_rows() -> dp.Evaluation:
    rng = np.random.default_rng(11)
    return run(REAL[rng.permutation(N)], INDEPENDENT[rng.permutation(N)], HOLDOUT[rng.permutation(N)])


@pytest.fixture(scope="module")
def shuffled_columns() -> dp.Evaluation:
    cols = list(np.random.default_rng(12).permutation(REAL.columns))
    return run(REAL.select(cols), INDEPENDENT.select(cols[::-1]), HOLDOUT.select(cols))


def test_every_metric_is_documented() -> None:
    text = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    missing = [m for m in IDS if f"`{m}`" not in text]
    assert not missing, f"document each metric in docs/metrics.md: {missing}"


@pytest.mark.parametrize("mid", IDS)
def test_value_in_unit_interval_or_not_applicable(base: dp.Evaluation, mid: str) -> None:
    r = base[mid]
    assert r.status is not dp.Status.ERROR, r.reason
    if r.status is dp.Status.NOT_APPLICABLE:
        assert r.reason
    else:
        assert r.value is not None and 0.0 <= r.value <= 1.0
        if r.ci is not None:
            assert 0.0 <= r.ci[0] <= r.ci[1] <= 1.0


@pytest.mark.parametrize("mid", IDS)
def test_synthetic_equal_to_real_gives_documented_value(copy: dp.Evaluation, mid: str) -> None:
    exp, r = dp.registry()[mid].expect, copy[mid]
    if exp.copy_min is None:
        assert r.status is dp.Status.NOT_APPLICABLE
    else:
        assert r.value is not None and r.value >= exp.copy_min, (mid, r.value, r.reason)
        assert r.value <= exp.copy_max, (mid, r.value)


@pytest.mark.parametrize("mid", IDS)
def test_independent_synthetic_gives_documented_value(base: dp.Evaluation, mid: str) -> None:
    exp, r = dp.registry()[mid].expect, base[mid]
    if exp.indep_max is None:
        assert r.status is dp.Status.NOT_APPLICABLE
    else:
        assert r.value is not None and r.value <= exp.indep_max, (mid, r.value)


def _figures(r: dp.MetricResult) -> list[float | None]:
    return [r.value, r.raw, r.baseline, *(r.ci or (None, None))]


@pytest.mark.parametrize("mid", IDS)
def test_row_order_does_not_matter(base: dp.Evaluation, shuffled_rows: dp.Evaluation, mid: str) -> None:
    """Issue 18 case 9: permuting the rows of every table leaves value, raw, baseline and interval
    unchanged (bootstrap resamples, seeded samples and tie rules all run in content order)."""
    a, b = base[mid], shuffled_rows[mid]
    assert a.status == b.status
    assert _figures(b) == pytest.approx(_figures(a), abs=1e-12), mid


@pytest.mark.parametrize("mid", IDS)
def test_column_order_does_not_matter(base: dp.Evaluation, shuffled_columns: dp.Evaluation, mid: str) -> None:
    a, b = base[mid], shuffled_columns[mid]
    assert a.status == b.status
    assert _figures(b) == pytest.approx(_figures(a), abs=1e-12), mid


def test_metrics_in_another_order_in_one_process_give_the_same_json(base: dp.Evaluation) -> None:
    """Nothing a metric leaves behind in the process (BLAS thread limits, caches) moves another's
    figures: each metric run alone, in reverse registry order, gives the JSON of the joint run."""
    assert blas_threads() == BLAS_THREADS, "the joint run changed BLAS threads"
    for mid in reversed(IDS):
        alone = dp.evaluate(
            REAL,
            INDEPENDENT,
            HOLDOUT,
            metrics=[mid],
            policy="report-only",
            key_columns=KEYS,
            sensitive_columns=SENSITIVE,
            progress=False,
        )[mid]
        assert alone.to_dict() == base[mid].to_dict(), mid
        assert blas_threads() == BLAS_THREADS, f"{mid} changed BLAS threads"


def test_same_seed_gives_identical_json_apart_from_timings(base: dp.Evaluation) -> None:
    again = run(REAL, INDEPENDENT)
    first, second = json.loads(base.to_json()), json.loads(again.to_json())
    first.pop("timings"), second.pop("timings")
    assert first == second


@pytest.mark.parametrize("mid", IDS)
def test_bad_input_is_one_clear_error(mid: str) -> None:
    with pytest.raises(dp.TableError, match="lacks column"):
        dp.evaluate(REAL, INDEPENDENT.drop("age"), HOLDOUT, metrics=[mid], progress=False)
