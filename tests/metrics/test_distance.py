"""Hand-computed values of the six engine-core metrics (seed 000 §2.1.4, §2.2.4, §2.2.7–2.2.10).

One numerical column, real x = 0, 1, 3, 7, 8 and synthetic x = 0, 2, 4. Min-max scaling with the real
range 8 gives real 0, .125, .375, .875, 1 and synthetic 0, .25, .5 (all exact in binary), so:

  real → synthetic NN:  0, .125, .125, .375, .5
  real → real NN:       .125, .125, .25, .125, .125      (self excluded)
  synthetic → real NN:  0, .125, .125;  2nd NN: —, .125, .375
  synthetic → synth NN: .25, .25, .25
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp

REAL = pl.DataFrame({"x": [0, 1, 3, 7, 8]})
SYN = pl.DataFrame({"x": [0, 2, 4]})


@pytest.fixture(scope="module")
def ev() -> dp.Evaluation:
    return dp.evaluate(
        REAL,
        SYN,
        metrics=["crp", "dcr", "mdcr", "nndr", "authenticity", "nnaa"],
        policy="report-only",
        progress=False,
    )


def test_crp(ev: dp.Evaluation) -> None:
    # one synthetic row (x = 0) is a real row: 1 / (5 + 1e-8)
    assert ev["crp"].raw == pytest.approx(1 / 5)
    assert ev["crp"].value == pytest.approx(0.2)
    assert ev["crp"].flagged.tolist() == [0]


def test_dcr(ev: dp.Evaluation) -> None:
    # one column: Φ^k keeps it (k = 1) and preserves distances; mean(0, .125, .125, .375, .5) = .225
    assert ev["dcr"].raw == pytest.approx(0.225, abs=1e-6)
    assert ev["dcr"].value == pytest.approx(1 / 1.225, abs=1e-6)
    assert ev["dcr"].value == pytest.approx(1 - 1 / (1 + math.exp(-math.log(0.225))), abs=1e-6)


def test_mdcr(ev: dp.Evaluation) -> None:
    # median(0, .125, .125, .375, .5) / median(.125, .125, .25, .125, .125) = .125 / .125 = 1
    assert ev["mdcr"].raw == pytest.approx(1.0)
    assert ev["mdcr"].value == pytest.approx(0.0)
    assert ev["mdcr"].details["mdcr_sigmoid"] == pytest.approx(1 / (1 + math.exp(-1)))


def test_nndr(ev: dp.Evaluation) -> None:
    # synthetic 0 is a copy → 1; .25: d1 = d2 = .125 → 1; .5: .125 / .375 = 1/3; mean = 7/9
    assert ev["nndr"].raw == pytest.approx(7 / 9, abs=1e-6)


def test_authenticity(ev: dp.Evaluation) -> None:
    # d_rr < d_rs only for .875 (.125 < .375) and 1 (.125 < .5): Auth = 2/5, value = 1 − Auth
    assert ev["authenticity"].raw == pytest.approx(0.4)
    assert ev["authenticity"].value == pytest.approx(0.6)


def test_nnaa(ev: dp.Evaluation) -> None:
    # term 1: d_rs > d_rr for .875 and 1 → 2/5; term 2: d_sr > d_ss never → 0; NNAA' = 1 − .4
    assert ev["nnaa"].details["term_real"] == pytest.approx(0.4)
    assert ev["nnaa"].details["term_synthetic"] == pytest.approx(0.0)
    assert ev["nnaa"].raw == pytest.approx(0.4)
    assert ev["nnaa"].value == pytest.approx(0.6)


def test_categorical_distance_is_one_hot() -> None:
    # two categories differ by √2 in the one-hot space; DCR of a fully mismatched table is √2
    real = pl.DataFrame({"c": ["a", "b", "a", "a", "c"] * 4})  # 20 rows: medians are reported from 20
    syn = pl.DataFrame({"c": ["d", "d"]})  # unseen category: an all-zero block, distance 1 to each
    ev = dp.evaluate(real, syn, metrics=["mdcr"], policy="report-only", progress=False)
    assert ev["mdcr"].details["median_real_to_synthetic"] == pytest.approx(1.0)
    assert ev["mdcr"].details["median_real_to_real"] == pytest.approx(0.0)  # "a" three times of five
    assert ev["mdcr"].value == 0.0  # median real→real 0 but real→synthetic > 0: documented


def test_copies_are_found_on_hashes_even_with_float_noise_elsewhere() -> None:
    rng = np.random.default_rng(3)
    base = rng.random(300)
    real = pl.DataFrame({"x": base, "y": rng.random(300), "z": rng.choice(["u", "v", "w"], 300)})
    syn = real[:50].with_columns(pl.col("x") + 1e-3)  # near-copies, not copies
    syn = pl.concat([syn, real[50:60]])  # ten true copies
    ev = dp.evaluate(real, syn, metrics=["crp", "nndr"], policy="report-only", progress=False)
    assert ev["crp"].details["common_rows"] == 10
    assert ev["nndr"].details["exact_copies"] == 10
    # numbers are compared at float32 precision (the engine's): a copy perturbed below it, or stored as
    # float32, is a copy (issue 18: float32-stored copies hid from crp and ims)
    noise = pl.concat(
        [
            real[:50].with_columns(pl.col("x") * (1 + 1e-9)),
            real[50:60],
            real[60:70].with_columns(pl.col("y").cast(pl.Float32).cast(pl.Float64)),
        ]
    )
    ev = dp.evaluate(real, noise, metrics=["crp"], policy="report-only", progress=False)
    assert ev["crp"].details["common_rows"] == 70


def test_order_statistics_in_details_are_rounded_or_withheld() -> None:
    """Issue 31 case 12: on a degenerate table mdcr's median real→synthetic distance was one real record's
    own scaled value (0.4242424), and it travels to Dagster metadata. Under 20 records it is withheld;
    otherwise rounded to 3 significant digits."""
    import polars as pl

    import dagster_privacy as dp

    real = pl.DataFrame({"x": [0.0, 0.4242424, 1.0, 1.0, 1.0]})
    syn = pl.DataFrame({"x": [0.0, 0.0, 0.0, 0.0, 0.0]})
    ev = dp.evaluate(real, syn, metrics=["mdcr", "dcr"], policy="report-only", progress=False)
    assert ev["mdcr"].details["median_real_to_synthetic"] is None and ev["dcr"].details["median"] is None
    big = pl.DataFrame({"x": [i / 29 for i in range(30)]})
    ev = dp.evaluate(big, big.head(1), metrics=["mdcr"], policy="report-only", progress=False)
    m = ev["mdcr"].details["median_real_to_synthetic"]
    assert m is not None and m == float(f"{m:.3g}")
