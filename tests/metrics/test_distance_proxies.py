"""metrics/distance.py (seed 000 §2.2): CVP, DVP, NSND, identifiability, hidden and hitting rate by hand.

Every expected figure is worked out in the comments from the seed's formula, never copied from a run.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.evaluate import prepare
from dagster_privacy.metrics.identification import _entropy_weighted


def ev(real, synthetic, ids, **kw) -> dp.Evaluation:
    return dp.evaluate(
        pl.DataFrame(real), pl.DataFrame(synthetic), metrics=ids, policy="report-only", progress=False, **kw
    )


# ---------------------------------------------------------------------------- CVP, DVP, NSND

CVP_REAL = {"x": [0.0, 4.0, 30.0]}
CVP_SYN = {"x": [0.5, 1.0]}


def test_cvp_dvp_nsnd_by_hand() -> None:
    # pair distances (min-max scaling divides all by 30, the ratios below do not change):
    #   y0: 0.5, 1;  y4: 3.5, 3;  y30: 29.5, 29  → d_min = 0.5, d_max = 29.5, span 29
    # nearest: y0 0.5 → 0;  y4 3 → 2.5/29;  y30 29 → 28.5/29
    # CVP = #{≤ 0.2}/3 = 2/3;  DVP = #{≥ 0.8}/3 = 1/3 → value 2/3;  NSND = (0 + 2.5 + 28.5)/29/3 = 31/87
    e = ev(CVP_REAL, CVP_SYN, ["cvp", "dvp", "nsnd"], column_kinds={"x": "numerical"})
    assert e["cvp"].value == pytest.approx(2 / 3)
    assert e["dvp"].raw == pytest.approx(1 / 3) and e["dvp"].value == pytest.approx(2 / 3)
    assert e["nsnd"].raw == pytest.approx(31 / 87, abs=1e-6)
    assert e["nsnd"].value == pytest.approx(1 - 31 / 87, abs=1e-6)
    assert e["cvp"].details["d_max"] == pytest.approx(29.5 / 30, abs=1e-6)
    assert e["cvp"].details["d_min"] == pytest.approx(0.5 / 30, abs=1e-6)


def test_extreme_pair_is_exact_over_all_pairs_on_random_data() -> None:
    rng = np.random.default_rng(3)
    real = {"a": rng.normal(size=300), "b": rng.normal(size=300), "c": rng.choice(["p", "q", "r"], 300)}
    syn = {"a": rng.normal(size=200), "b": rng.normal(size=200), "c": rng.choice(["p", "q", "r"], 200)}
    ctx, _ = prepare(pl.DataFrame(real), pl.DataFrame(syn))
    x, z = ctx.euclidean("real").astype(np.float64), ctx.euclidean("synthetic").astype(np.float64)
    full = np.sqrt(((x[:, None, :] - z[None, :, :]) ** 2).sum(axis=2))  # small: the full matrix is fine here
    from dagster_privacy.metrics.distance import extremes

    ext = extremes(ctx)
    assert ext.d_max == pytest.approx(full.max(), rel=1e-6)
    assert ext.d_min == pytest.approx(full.min(), rel=1e-6)


# --------------------------------------------------------------------------------- Identifiability


def test_identifiability_weights_by_hand() -> None:
    # c: a (P = 2/3), b (1/3); x: 0 (P = 1/3), 10 (2/3).  H(1/3) = (1/3) log 3, H(2/3) = (2/3) log 1.5;
    # ŷ[a] ≈ y[a]·H(a, y[a]) (eq. 22 with w = 1/H).  One-hot dims (c=a, c=b), then x scaled to [0, 1]:
    # y1 (a, 0) → (H23, 0, 0); y2 (a, 10) → (H23, 0, H23); y3 (b, 10) → (0, H13, H23); z (b, 0) → (0, H13, 0)
    h13, h23 = math.log(3) / 3, (2 / 3) * math.log(1.5)
    real = {"c": ["a", "a", "b"], "x": [0.0, 10.0, 10.0]}
    syn = {"c": ["b"], "x": [0.0]}
    ctx, _ = prepare(pl.DataFrame(real), pl.DataFrame(syn), column_kinds={"x": "numerical"})
    w = {role: _entropy_weighted(ctx, role) for role in ("real", "synthetic")}

    def by_rows(a):  # the context holds rows in content order (evaluate.prepare): compare as a set
        a = np.asarray(a, dtype=float)
        return a[np.lexsort(a.T[::-1])]

    np.testing.assert_allclose(
        by_rows(w["real"]), by_rows([[h23, 0, 0], [h23, 0, h23], [0, h13, h23]]), rtol=1e-6
    )
    np.testing.assert_allclose(w["synthetic"], [[0, h13, 0]], rtol=1e-6)
    # y1: real y2 at H23 ≈ 0.270 < z at √(H23² + H13²) ≈ 0.455 → safe; y2: y1 at 0.270 < z at 0.529 → safe
    # y3: z at H23 ≈ 0.270 < y2 at √(H23² + H13²) ≈ 0.455 → identifiable.   ID = 1/3
    r = ev(real, syn, ["identifiability"], column_kinds={"x": "numerical"})["identifiability"]
    assert r.value == pytest.approx(1 / 3)


def test_identifiability_copy_and_duplicate() -> None:
    # y1, y2 identical: their nearest other real row is at 0, so a synthetic copy does not make them
    # identifiable (strict <); y3's copy does.  ID = 1/3
    real = {"c": ["a", "a", "b"], "x": [1.0, 1.0, 5.0]}
    syn = {"c": ["a", "b"], "x": [1.0, 5.0]}
    r = ev(real, syn, ["identifiability"], column_kinds={"x": "numerical"})["identifiability"]
    assert r.value == pytest.approx(1 / 3)


# ----------------------------------------------------------------------------------- Hidden rate


def test_hidden_rate_by_hand() -> None:
    # real x = 0, 10, 20, 30; synthetic 1 (from y0), 25 (from y1), 21 (from y2)
    # y0: nearest 1 (its own) → hidden;  y1: nearest 1 (at 9, from y0; its own 25 is at 15) → no;
    # y2: nearest 21 (its own) → hidden;  y3: nearest 25 (from y1) → no.   HiddR = 2 / |Z| = 2/3
    real = {"x": [0.0, 10.0, 20.0, 30.0]}
    syn = {"x": [1.0, 25.0, 21.0], "src": [0, 1, 2]}
    r = ev(real, syn, ["hidden_rate"], source_index_column="src")["hidden_rate"]
    assert r.value == pytest.approx(2 / 3)
    assert sorted(r.flagged.tolist()) == [0, 2]


def test_hidden_rate_needs_the_mapping() -> None:
    r = ev({"x": [0.0, 1.0, 2.0]}, {"x": [0.0, 1.0]}, ["hidden_rate"])["hidden_rate"]
    assert r.status is dp.Status.NOT_APPLICABLE and "source-row mapping" in (r.reason or "")


def test_hidden_rate_of_a_copy_is_one() -> None:
    real = {"x": [0.0, 10.0, 20.0], "c": ["a", "b", "c"]}
    syn = {"x": [20.0, 0.0, 10.0], "c": ["c", "a", "b"], "src": [2, 0, 1]}
    assert ev(real, syn, ["hidden_rate"], source_index_column="src")["hidden_rate"].value == pytest.approx(
        1.0
    )


# ---------------------------------------------------------------------------------- Hitting rate


def test_hitting_rate_by_hand_counts_pairs_and_bounds_by_rows() -> None:
    # h(x) = (30 − 0)/30 = 1; categories must be equal.
    # y (a, 0): z (a, 0.5) ✓, (a, 1) ✓ (|Δ| = 1 ≤ 1), (a, 0.2) ✓ → 3 pairs
    # y (a, 10): z (a, 10.9) ✓ → 1;  y (b, 30): z (b, 29) ✓, z (a, 30) ✗ (category) → 1;  y (a, 15): none
    # eq. 33: raw = 5 pairs / 4 = 1.25 (> 1); value = real rows hit / |Y| = 3/4
    real = {"c": ["a", "a", "b", "a"], "x": [0.0, 10.0, 30.0, 15.0]}
    syn = {"c": ["a", "a", "a", "b", "a", "a"], "x": [0.5, 1.0, 10.9, 29.0, 30.0, 0.2]}
    r = ev(real, syn, ["hitting_rate"], column_kinds={"c": "categorical"})["hitting_rate"]
    assert r.raw == pytest.approx(1.25)
    assert r.value == pytest.approx(0.75)
    assert r.details["hit_pairs"] == 5
    assert sorted(r.flagged.tolist()) == [0, 1, 2, 3, 5]


def test_hitting_rate_matches_brute_force_on_random_data() -> None:
    rng = np.random.default_rng(5)
    real = pl.DataFrame(
        {
            "c": rng.choice(["p", "q"], 250),
            "x": rng.integers(0, 60, 250).astype(float),
            "y": rng.normal(size=250),
        }
    )
    syn = pl.DataFrame(
        {
            "c": rng.choice(["p", "q"], 180),
            "x": rng.integers(0, 60, 180).astype(float),
            "y": rng.normal(size=180),
        }
    )
    r = dp.evaluate(real, syn, metrics=["hitting_rate"], policy="report-only", progress=False)["hitting_rate"]
    hx = (real["x"].max() - real["x"].min()) / 30
    hy = (real["y"].max() - real["y"].min()) / 30
    hit = (
        (real["c"].to_numpy()[:, None] == syn["c"].to_numpy()[None, :])
        & (np.abs(real["x"].to_numpy()[:, None] - syn["x"].to_numpy()[None, :]) <= hx)
        & (np.abs(real["y"].to_numpy()[:, None] - syn["y"].to_numpy()[None, :]) <= hy)
    )
    assert r.details["hit_pairs"] == int(hit.sum())
    assert r.value == pytest.approx(hit.any(axis=1).mean())
