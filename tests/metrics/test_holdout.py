"""Holdout-referenced indicators (seed 004 §4.2, seeds 001, 003) and remediation.

Known answers are computed by hand on one-column tables; the leaky risk model (seed 004 §5.1.1) on a
seeded 4,000-row subset of the demo data checks that each metric rises with the leaked fraction f,
sits within its CI of 0 at f = 0, and that ims and dcr_percentile track f.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo
from dagster_privacy.engine.pairs import knn_self
from dagster_privacy.evaluate import prepare
from dagster_privacy.metrics import get as get_metric
from dagster_privacy.metrics.holdout import _share, _tail
from dagster_privacy.metrics.proximity import SPLIT_K, _split_distances, _split_keys
from dagster_privacy.metrics.registration import run as run_metric

IDS = [
    "ims",
    "dcr_percentile",
    "knn_percentile",
    "dcr_holdout_diff",
    "nndr_holdout_diff",
    "proximity_ratio_score",
]
FRACTIONS = (0.0, 0.2, 0.5, 1.0)


def run_one(mid: str, real, synthetic, holdout=None, **params) -> dp.MetricResult:
    ctx, _ = prepare(real, synthetic, holdout)
    return run_metric(get_metric(mid), ctx, params)


# ------------------------------------------------------------------------------- known answers

# One numerical column, in units of 1/90 of the real range (train spans 0..90):
#   train T = 0, 30, 60, 90; holdout H = 5, 40, 70, 95; synthetic S = 0, 31, 50, 80.
TRAIN = pl.DataFrame({"a": [0.0, 30.0, 60.0, 90.0]})
HOLD = pl.DataFrame({"a": [5.0, 40.0, 70.0, 95.0]})
SYN = pl.DataFrame({"a": [0.0, 31.0, 50.0, 80.0]})


def test_tail_weights_exact_ties_so_the_reference_share_is_alpha() -> None:
    ref = np.array([5.0, 5.0, 10.0, 15.0])
    q, t = _tail(ref, 0.25)  # inverted CDF: the smallest value with F ≥ 0.25 is 5; P(<5) = 0, P(=5) = 1/2
    assert q == 5.0 and t == pytest.approx(0.5)
    assert _share(ref, q, t) == pytest.approx(0.25)
    assert _share(np.array([0.0, 5.0, 10.0, 10.0]), q, t) == pytest.approx(0.25 + 0.5 * 0.25)


def test_dcr_percentile_known_answer() -> None:
    r = run_one("dcr_percentile", TRAIN, SYN, HOLD, alpha=0.25)
    # eq. 4: RRD (holdout→train) = 5, 10, 10, 5 → RRD_0.25 = 5; SRD (syn→train) = 0, 1, 10, 10 → 2 below
    assert r.raw == pytest.approx(2 / (0.25 * 4))
    assert sorted(r.flagged.tolist()) == [0, 1]
    # value: train→syn = 0, 1, 10, 10; holdout→syn = 5, 9, 10, 15 → q = 5, p_train = 2/4
    assert r.details["p_train"] == pytest.approx(0.5)
    assert r.value == pytest.approx((0.5 - 0.25) / 0.75)
    assert r.baseline == 0.25 and r.ci[0] <= r.value <= r.ci[1]


def test_ims_known_answer() -> None:
    real = pl.DataFrame({"a": [1, 2, 3, 4], "b": ["x", "y", "x", "y"]})
    hold = pl.DataFrame({"a": [5, 6, 7, 8], "b": ["x", "y", "x", "y"]})
    syn = pl.DataFrame({"a": [1, 2, 5, 9, 1], "b": ["x", "y", "x", "y", "x"]})
    r = run_one("ims", real, syn, hold)
    assert r.raw == pytest.approx(3 / 5)  # formula: synthetic rows 0, 1, 4 are training rows
    assert r.details["ims_text_real_share"] == pytest.approx(2 / 4)  # text: training rows 1 and 2 copied
    assert r.baseline == pytest.approx(1 / 4)  # holdout row (5, x) has a synthetic twin
    assert r.value == pytest.approx((0.5 - 0.25) / (1 - 0.25))
    assert sorted(r.flagged.tolist()) == [0, 1, 4]


def test_dcr_holdout_diff_known_answer() -> None:
    r = run_one("dcr_holdout_diff", TRAIN, SYN, HOLD)
    syn_mean, hold_mean = (0 + 1 + 10 + 10) / 4, (5 + 10 + 10 + 5) / 4  # ×1/90, which cancels
    diff = (hold_mean - syn_mean) / hold_mean * 100  # = 30
    assert r.raw == pytest.approx(diff, abs=1e-4)  # float32 encoding
    assert r.details["privacy_score"] == pytest.approx(100 - diff, abs=1e-4)
    assert r.details["band"] == "Medium"
    assert r.value == pytest.approx(0.30, abs=1e-6)
    assert r.baseline == pytest.approx(hold_mean / 90)
    assert r.flagged.tolist() == [0]  # DCR = 0: the copy of training row 0


def test_nndr_holdout_diff_known_answer() -> None:
    r = run_one("nndr_holdout_diff", TRAIN, SYN, HOLD)
    syn = [0.0, 1 / 29, 10 / 20, 10 / 20]  # S=0 is a copy (0); 31: 1/29; 50: 10/20; 80: 10/20
    hold = [5 / 25, 10 / 20, 10 / 20, 5 / 35]
    diff = (np.mean(hold) - np.mean(syn)) / np.mean(hold) * 100
    assert r.raw == pytest.approx(diff, abs=1e-4)  # float32 encoding
    assert r.value == pytest.approx(diff / 100, abs=1e-6)
    assert r.details["band"] == "Medium"


def test_diff_band_and_sign_when_synthetic_is_farther() -> None:
    far = pl.DataFrame({"a": [15.0, 45.0, 75.0, 105.0]})  # DCR 15 each: farther than the holdout
    r = run_one("dcr_holdout_diff", TRAIN, far, HOLD)
    assert r.raw == pytest.approx((7.5 - 15) / 7.5 * 100, abs=1e-4)  # negative: more private
    assert r.value == 0.0 and r.details["band"] == "High"


def test_proximity_ratio_extremes() -> None:
    df = load_demo().head(300)
    copy = run_one("proximity_ratio_score", df, df)
    # every training record has a copy: TSPR = 0 < threshold for all, b = 1, score = 100·α
    assert copy.raw == pytest.approx(10.0) and copy.value == pytest.approx(0.9)
    assert copy.details["tspr_share"] == pytest.approx(1.0)
    far = df.with_columns(pl.col("age") + 1000)  # every synthetic row far away: b = 0, score 100
    r = run_one("proximity_ratio_score", df, far)
    assert r.raw == pytest.approx(100.0) and r.value == 0.0 and r.flagged.size == 0


def test_split_is_seeded_halves_independent_of_row_and_column_order() -> None:
    df = load_demo().head(200)
    df = pl.concat([df, df.head(10)])  # duplicates too
    ctx, _ = prepare(df, df)
    k1 = _split_keys(ctx, 123)
    perm = np.random.default_rng(0).permutation(df.height)
    ctx2, _ = prepare(df[perm].select(df.columns[::-1]), df)
    k2 = _split_keys(ctx2, 123)
    # prepare() puts rows in content order and columns in name order: the same context either way
    assert np.array_equal(k1, k2)
    assert not np.array_equal(np.argsort(k1), np.argsort(_split_keys(ctx, 124)))
    assert np.unique(k1).size == df.height  # duplicates get distinct keys


@pytest.mark.parametrize("k", [1, 2, SPLIT_K])
def test_split_distances_are_the_halves_nearest_whatever_the_shared_k(k: int) -> None:
    # the shared real→real query serves the splits where a row's k nearest reach both halves; the
    # other rows get their own exact query (k = 1: most rows): either way d(r, R2) and d(r, R1 ∖ r)
    df = load_demo().head(300)
    df = pl.concat([df, df.head(12)])  # exact copies: distances of 0 within and across the halves
    ctx, _ = prepare(df, df)
    x = ctx.euclidean("real")
    order = np.random.default_rng(5).permutation(x.shape[0])
    r1, r2 = order[: x.shape[0] // 2], order[x.shape[0] // 2 :]
    d12, d11 = _split_distances(ctx, x, knn_self(x, k), r1, r2)
    x64 = x.astype(np.float64)  # exact distances as the engine defines them (exact.squared's einsum)
    d = np.sqrt(np.stack([np.einsum("ij,ij->i", x64 - x64[i], x64 - x64[i]) for i in r1]))
    d[np.arange(r1.size), r1] = np.inf  # never the row itself
    assert np.array_equal(d12, d[:, r2].min(axis=1))
    assert np.array_equal(d11, d[:, r1].min(axis=1))


def test_holdout_metrics_need_a_holdout() -> None:
    ev = dp.evaluate(TRAIN, SYN, metrics=IDS, policy="report-only", progress=False)
    for mid in IDS[:-1]:
        assert ev[mid].status is dp.Status.NOT_APPLICABLE and ev[mid].reason == "needs a holdout table"
    assert ev["proximity_ratio_score"].status is not dp.Status.NOT_APPLICABLE


def test_bad_parameter_is_an_error_not_a_zero() -> None:
    r = run_one("dcr_percentile", TRAIN, SYN, HOLD, alpha=1.5)
    assert r.status is dp.Status.ERROR and r.value is None and "alpha" in r.reason


# ------------------------------------------------------------------------- leaky risk model


def _subset() -> pl.DataFrame:
    df = load_demo()
    return df[np.random.default_rng(0).permutation(df.height)[:4000]]


SUBSET = _subset()


def _evaluate(split) -> dp.Evaluation:
    return dp.evaluate(
        split.train, split.synthetic, split.control, metrics=IDS, policy="report-only", progress=False
    )


@pytest.fixture(scope="module")
def leaky() -> dict[float, tuple]:
    out = {}
    for f in FRACTIONS:
        sp = leaky_split(SUBSET, f, seed=0)
        out[f] = (sp, _evaluate(sp))
    return out


@pytest.mark.parametrize("mid", IDS)
def test_monotone_in_leaked_fraction(leaky, mid: str) -> None:
    values = [leaky[f][1][mid].value for f in FRACTIONS]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:], strict=False)), values
    assert values[-1] > values[0]


@pytest.mark.parametrize("mid", IDS)
def test_within_ci_of_zero_without_leak(leaky, mid: str) -> None:
    # A 95 % interval misses the truth about 1 time in 40 per metric; the subset and seed are fixed.
    r = leaky[0.0][1][mid]
    assert r.status is dp.Status.PASS and r.ci is not None
    assert r.ci[0] <= 1e-12 <= r.ci[1] + 1e-12, (mid, r.value, r.ci)


@pytest.mark.parametrize("mid", ["ims", "dcr_percentile"])
@pytest.mark.parametrize("f", FRACTIONS)
def test_ims_and_dcr_percentile_track_the_leaked_fraction(leaky, mid: str, f: float) -> None:
    r = leaky[f][1][mid]
    assert abs(r.value - f) <= 0.05, (mid, f, r.value)
    if f == 1.0:
        assert r.value >= 0.95
    assert r.ci[0] <= r.value <= r.ci[1]


def test_flagged_rows_cover_every_leaked_copy(leaky) -> None:
    sp, ev = leaky[0.2]
    train_hashes = set(sp.train.hash_rows().to_list())
    copies = {i for i, h in enumerate(sp.synthetic.hash_rows().to_list()) if h in train_hashes}
    assert len(copies) >= sp.leaked.size
    assert set(ev["ims"].flagged.tolist()) == copies
    assert copies <= set(ev["dcr_percentile"].flagged.tolist())
    assert set(ev["dcr_holdout_diff"].flagged.tolist()) == copies


def test_remediation_brings_ims_and_dcr_percentile_within_ci_of_zero(leaky) -> None:
    sp, ev = leaky[0.2]
    clean = dp.remediate(ev, sp.synthetic)
    assert isinstance(clean, pl.DataFrame)
    assert (
        clean.height == sp.synthetic.height - np.union1d(ev["ims"].flagged, ev["dcr_percentile"].flagged).size
    )
    again = dp.evaluate(
        sp.train, clean, sp.control, metrics=["ims", "dcr_percentile"], policy="report-only", progress=False
    )
    for mid in ("ims", "dcr_percentile"):
        r = again[mid]
        assert r.ci[0] <= 1e-12, (mid, r.value, r.ci)
    assert again["ims"].details["synthetic_copies"] == 0


def test_remediation_keeps_pandas_and_refuses_what_it_cannot_trust(leaky) -> None:
    sp, ev = leaky[0.2]
    pdf = sp.synthetic.to_pandas()
    ev_pd = dp.evaluate(sp.train, pdf, sp.control, metrics=["ims"], policy="report-only", progress=False)
    out = dp.remediate(ev_pd, pdf, metrics=["ims"])
    assert type(out) is type(pdf) and len(out) == len(pdf) - ev_pd["ims"].flagged.size
    with pytest.raises(ValueError, match="memory"):
        dp.remediate(dp.Evaluation.from_json(ev.to_json()), sp.synthetic)
    with pytest.raises(ValueError, match="fingerprint|rows"):
        dp.remediate(ev, sp.synthetic.head(sp.synthetic.height - 1))
    with pytest.raises(ValueError, match="no knn"):
        dp.remediate(ev_pd, pdf, metrics=["knn_percentile"])
    assert "flagged" not in json.dumps(json.loads(ev.to_json())["metrics"])


def test_standard_preset_gates_a_leak_and_passes_a_clean_release(leaky) -> None:
    from dagster_privacy.decision.policy import judge, load_policy

    std = load_policy("standard")
    # judged on the excess over the holdout and its bounds; ims informs (WARN) since issue 45
    for mid, severity in (("ims", dp.Severity.WARN), ("dcr_percentile", dp.Severity.ERROR)):
        assert std.entry(mid).severity is severity and std.entry(mid).threshold == 0.02
        clean, leak = (judge(std.entry(mid), leaky[f][1][mid], fail_level=0.05 / 8) for f in (0.0, 0.2))
        assert clean.status is dp.Status.PASS and clean.decision["upper"] <= 0.02
        assert leak.decision["lower"] > 0.02
        assert leak.status is (dp.Status.FAIL if severity is dp.Severity.ERROR else dp.Status.WARN)


def test_remediation_of_a_shuffled_reload_drops_the_same_rows(leaky) -> None:
    """Issue 21 case 4: rows were dropped by position, but the reload was checked by an order-free
    fingerprint: the same content in another order kept real copies and dropped innocent rows."""
    sp, ev = leaky[0.2]
    shuffled = sp.synthetic[np.random.default_rng(5).permutation(sp.synthetic.height)]
    out = dp.remediate(ev, shuffled)
    assert sorted(out.hash_rows().to_list()) == sorted(dp.remediate(ev, sp.synthetic).hash_rows().to_list())
    train = set(sp.train.hash_rows().to_list())
    assert not any(h in train for h in out.hash_rows().to_list())  # no copy of a training row is kept
