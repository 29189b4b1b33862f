"""spaces.py: the encoders every metric shares, on a table small enough to encode by hand."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from dagster_privacy.data import tables as tb
from dagster_privacy.engine.spaces import MISSING, Encoder, Projection, joint_codes
from dagster_privacy.errors import MetricError

REAL = pl.DataFrame({"x": [0.0, 5.0, 10.0, None], "c": ["a", "b", "a", None]})


@pytest.fixture(scope="module")
def enc() -> Encoder:
    return Encoder.fit(REAL, tb.infer_schema(REAL, {"x": "numerical", "c": "categorical"}))


def test_fit_records_range_median_and_categories(enc: Encoder) -> None:
    assert enc.num_min["x"] == 0.0 and enc.num_range["x"] == 10.0 and enc.num_median["x"] == 5.0
    assert enc.num_missing["x"] is True
    assert enc.categories["c"] == [MISSING, "a", "b"]  # a missing category is a category of its own


def test_scaled_uses_the_real_range_fills_the_median_and_clips(enc: Encoder) -> None:
    df = pl.DataFrame({"x": [2.5, None, 100.0, -100.0]})
    # (2.5 − 0)/10 = .25; null → median 5 → .5; 100 → 10 clipped to 1 + 1 = 2; −100 → −10 clipped to −1
    assert enc.scaled(df, "x").tolist() == [0.25, 0.5, 2.0, -1.0]
    tiny = pl.DataFrame({"x": [0.0, 1e-300]})  # a range so small that 1e308 / range overflows
    tiny_enc = Encoder.fit(tiny, tb.infer_schema(tiny, {"x": "numerical"}))
    with pytest.raises(MetricError, match="too large"):
        tiny_enc.scaled(pl.DataFrame({"x": [1e308]}), "x")


def test_category_codes_and_one_hot(enc: Encoder) -> None:
    df = pl.DataFrame({"x": [0.0, 10.0, None], "c": ["b", "z", None]})
    assert enc.category_codes(df, "c").tolist() == [2, -1, 0]  # unseen "z" → −1
    e = enc.euclidean(df)
    # columns in name order: c (one-hot: missing, a, b), then x (scaled) and x's missing indicator
    labels = enc.euclidean_labels()
    assert labels == ["c", "c", "c", "x", "x"]
    assert e.dtype == np.float32
    assert e.tolist() == [[0, 0, 1, 0.0, 0], [0, 0, 0, 1.0, 0], [1, 0, 0, 0.5, 1]]  # unseen: all-zero block


def test_projection_keeps_the_variance_asked_for() -> None:
    rng = np.random.default_rng(0)
    t = rng.normal(size=(200, 1))
    x = np.hstack([t, 2 * t, -t])  # rank 1: one component carries all the variance
    p = Projection.fit(x, variance=0.95)
    assert p.k == 1 and p.explained == pytest.approx(1.0)
    z = p.transform(x)
    assert z.shape == (200, 1)
    assert np.var(z[:, 0], ddof=1) == pytest.approx(np.var(x, axis=0, ddof=1).sum(), rel=1e-5)
    assert p.components[0][np.argmax(np.abs(p.components[0]))] > 0  # sign fixed: deterministic


@pytest.mark.parametrize("n, d", [(6, 40), (12, 12), (30, 5)])
def test_projection_is_the_svd_pca_for_tall_square_and_wide_tables(n: int, d: int) -> None:
    """Reference: the right singular vectors of the centred data (a different algorithm), variance
    shares s² / Σ s². A wide table (d > n) takes the Gram path, which never forms a d × d matrix."""
    rng = np.random.default_rng(n * d)
    x = rng.normal(size=(n, d)) @ rng.normal(size=(d, d))
    p = Projection.fit(x, variance=0.9)
    xc = x - x.mean(axis=0)
    _, sv, vt = np.linalg.svd(xc, full_matrices=False)
    share = np.cumsum(sv**2) / np.sum(sv**2)
    k = int(np.searchsorted(share, 0.9 - 1e-12) + 1)
    assert p.k == k and p.explained == pytest.approx(share[k - 1])
    ref = vt[:k] * np.sign(vt[:k][np.arange(k), np.argmax(np.abs(vt[:k]), axis=1)])[:, None]
    assert np.allclose(p.components, ref, atol=1e-8)
    assert np.allclose(np.linalg.norm(p.components, axis=1), 1.0)


def test_a_wide_table_allocates_nothing_of_columns_squared() -> None:
    """Issue 31 case 6: 5 rows × 4,000 columns formed a 4,000² covariance (128 MB; 800 MB at 10,000)."""
    import tracemalloc

    x = np.random.default_rng(0).normal(size=(5, 4000))
    tracemalloc.start()
    try:
        p = Projection.fit(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert p.k <= 4 and peak < 8 * x.nbytes  # the data's own size times a few copies, not d²


def test_joint_codes_are_shared_across_frames() -> None:
    a = pl.DataFrame({"c": ["u", None], "x": [1.0, 2.0]})
    b = pl.DataFrame({"c": [None, "v"], "x": [2.0, 3.0]})
    schema = tb.infer_schema(a, {"c": "categorical", "x": "numerical"})
    ca, cb = joint_codes([a, b], schema)
    assert ca[1, 0] == cb[0, 0]  # null equals null
    assert ca[1, 1] == cb[0, 1] and ca[0, 1] != cb[1, 1]  # 2.0 == 2.0; 1.0 != 3.0
