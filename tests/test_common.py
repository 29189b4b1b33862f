"""Properties every registered metric must have (style.md: scikit-learn's test_common).

Each metric id needs an entry in EXPECTED, mirroring what docs/metrics.md says it gives at
synthetic = real and at an independent synthetic table (each column of a disjoint sample shuffled on
its own). A new metric gets the invariance tests for free and fails here until it is documented.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest
from threadpoolctl import threadpool_info

import dagster_privacy as dp
from dagster_privacy.demo import load_demo

N = 400
KEYS = ["age", "sex", "race", "marital-status"]
SENSITIVE = ["income", "occupation"]


@dataclass(frozen=True)
class Expect:
    copy_min: float | None  # value at synthetic = real is at least this (None: not applicable there)
    indep_max: float | None  # value on an independent synthetic table is at most this
    copy_max: float = 1.0  # value at synthetic = real is at most this (a classifier cannot see a copy)


EXPECTED: dict[str, Expect] = {
    "crp": Expect(copy_min=0.999, indep_max=0.02),
    "dcr": Expect(copy_min=0.999, indep_max=0.95),  # 1/(1+DCR) cannot reach 0 (docs/metrics.md)
    "mdcr": Expect(copy_min=0.999, indep_max=0.2),
    "nndr": Expect(copy_min=0.999, indep_max=0.95),  # an independent row scores d1/d2 ≈ 0.6–0.9
    "authenticity": Expect(copy_min=0.999, indep_max=0.65),  # ≈ 0.5 for a same-size sample
    "nnaa": Expect(copy_min=0.999, indep_max=0.2),
    "ims": Expect(copy_min=0.999, indep_max=0.02),
    "dcr_percentile": Expect(copy_min=0.999, indep_max=0.1),
    "knn_percentile": Expect(copy_min=0.01, indep_max=0.1),  # k = 5 means dilute a copy (docs/metrics.md)
    "dcr_holdout_diff": Expect(copy_min=0.999, indep_max=0.1),
    "nndr_holdout_diff": Expect(copy_min=0.999, indep_max=0.1),
    "proximity_ratio_score": Expect(copy_min=0.89, indep_max=0.2),  # at most 1 − α = 0.9
    # attacks (seed 004 §4.3): E of eq. 8
    "singling_out_univariate": Expect(copy_min=0.9, indep_max=0.15),
    "singling_out_multivariate": Expect(copy_min=0.9, indep_max=0.15),
    "linkability": Expect(copy_min=0.9, indep_max=0.1),
    "inference_distance": Expect(copy_min=0.9, indep_max=0.2),
    "inference_ml": Expect(copy_min=0.5, indep_max=0.25),
    "gtcap": Expect(copy_min=0.8, indep_max=0.3),
    "domias": Expect(copy_min=0.3, indep_max=0.2),  # KDE on Φ^k: a copy is one kernel
    # seed 000 §2.1–2.2 (docs/metrics.md). CAP family with 4 coarse keys: at a copy a real row shares its
    # key values with others holding other sensitive values, and an independent table still guesses
    # at the chance agreement Σ p² of the sensitive column (≈ 0.63 for income).
    "zcap": Expect(copy_min=0.8, indep_max=0.4),  # 0.84 / 0.32 measured
    "gcap": Expect(copy_min=0.8, indep_max=0.7),  # 0.84 / 0.61: GCAP always guesses
    "air": Expect(copy_min=0.6, indep_max=0.55),  # 0.65 / 0.48: a mixed tie scores F1 ≈ 0
    "cvp": Expect(copy_min=0.999, indep_max=0.15),
    "dvp": Expect(copy_min=0.999, indep_max=1.0),  # saturates at 1 on real data (d_max normalisation)
    "identifiability": Expect(copy_min=0.999, indep_max=0.3),
    "nsnd": Expect(copy_min=0.999, indep_max=0.75),  # normalised NN distance ≈ 0.36 → value ≈ 0.64
    "hidden_rate": Expect(copy_min=None, indep_max=None),  # needs the source-row mapping g
    "hitting_rate": Expect(copy_min=0.999, indep_max=0.05),
    # a classifier cannot tell a copy from the real table (value 0 there); this test's independent
    # table shuffles each column on its own, which a classifier does tell apart (≈ 0.6 measured)
    "detection_mlp": Expect(copy_min=0.0, copy_max=0.05, indep_max=0.9),
    "mir": Expect(copy_min=0.0, copy_max=0.05, indep_max=0.9),
}


def _parts() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    df = load_demo()
    perm = np.random.default_rng(7).permutation(df.height)
    real, holdout, other = df[perm[:N]], df[perm[N:2 * N]], df[perm[2 * N:3 * N]]
    rng = np.random.default_rng(8)
    independent = pl.DataFrame({c: other.get_column(c).to_numpy()[rng.permutation(N)] for c in other.columns},
                               schema=other.schema)
    return real, holdout, independent


REAL, HOLDOUT, INDEPENDENT = _parts()


def blas_threads() -> set[int]:
    """Threads of the BLAS libraries loaded in this process (scipy's loads later: compared by count)."""
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


#: BLAS threads before any metric ran in this process
BLAS_THREADS = blas_threads()
IDS = list(dp.registry())


def run(real, synthetic, holdout=HOLDOUT, *, seed=0, **kw) -> dp.Evaluation:
    return dp.evaluate(real, synthetic, holdout, metrics=IDS, policy="report-only", key_columns=KEYS,
                       sensitive_columns=SENSITIVE, seed=seed, progress=False, **kw)


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


def test_every_metric_is_documented_here() -> None:
    assert set(IDS) == set(EXPECTED), "add each new metric id to EXPECTED (and to docs/metrics.md)"


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
    exp, r = EXPECTED[mid], copy[mid]
    if exp.copy_min is None:
        assert r.status is dp.Status.NOT_APPLICABLE
    else:
        assert r.value is not None and r.value >= exp.copy_min, (mid, r.value, r.reason)
        assert r.value <= exp.copy_max, (mid, r.value)


@pytest.mark.parametrize("mid", IDS)
def test_independent_synthetic_gives_documented_value(base: dp.Evaluation, mid: str) -> None:
    exp, r = EXPECTED[mid], base[mid]
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
        alone = dp.evaluate(REAL, INDEPENDENT, HOLDOUT, metrics=[mid], policy="report-only", key_columns=KEYS,
                            sensitive_columns=SENSITIVE, progress=False)[mid]
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
