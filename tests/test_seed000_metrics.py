"""Seed 000 §2.1–2.2: the eleven metrics of issue 10 on tiny tables computed by hand, and their direction.

Every expected figure is worked out in the comments from the seed's formula, never copied from a run.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo
from dagster_privacy.evaluate import prepare
from dagster_privacy.metrics.distance import _entropy_weighted
from dagster_privacy.neighbors import MixedRows, mixed_chunks


def ev(real, synthetic, ids, **kw) -> dp.Evaluation:
    return dp.evaluate(pl.DataFrame(real), pl.DataFrame(synthetic), metrics=ids, policy="report-only",
                       progress=False, **kw)


# --------------------------------------------------------------------------------------- ZCAP


def test_zcap_by_hand() -> None:
    # y1 (a, x): G = {z1, z2, z3}, C = {z1, z2} → 2/3;  y2 (a, y): G = 3, C = {z3} → 1/3
    # y3 (b, x): G = {z4}, C = ∅ → 0;                   y4 (c, x): G = ∅ → 0 / max(1, 0) = 0
    # ZCAP = (2/3 + 1/3 + 0 + 0) / 4 = 1/4
    real = {"k": ["a", "a", "b", "c"], "s": ["x", "y", "x", "x"]}
    syn = {"k": ["a", "a", "a", "b"], "s": ["x", "x", "y", "y"]}
    r = ev(real, syn, ["zcap"], key_columns=["k"], sensitive_columns=["s"])["zcap"]
    assert r.value == pytest.approx(0.25)
    assert r.details["per_column"]["s"]["real_rows_matched"] == 3


def test_zcap_scores_every_sensitive_column_and_reports_the_worst() -> None:
    # column s as above (1/4); column t: y1..y4 = p, p, q, q; z = p, q, p, q
    # y1 (a, p): G = {z1, z2, z3}, C = {z1, z3} → 2/3; y2 (a, p): 2/3; y3 (b, q): G = {z4}, C = {z4} → 1;
    # y4 (c, q): no match → 0.   ZCAP_t = (2/3 + 2/3 + 1 + 0) / 4 = 7/12
    real = {"k": ["a", "a", "b", "c"], "s": ["x", "y", "x", "x"], "t": ["p", "p", "q", "q"]}
    syn = {"k": ["a", "a", "a", "b"], "s": ["x", "x", "y", "y"], "t": ["p", "q", "p", "q"]}
    r = ev(real, syn, ["zcap"], key_columns=["k"], sensitive_columns=["s", "t"])["zcap"]
    assert r.details["per_column"]["s"]["value"] == pytest.approx(0.25)
    assert r.details["per_column"]["t"]["value"] == pytest.approx(7 / 12)
    assert r.value == pytest.approx(7 / 12) and r.details["worst_column"] == "t"


def test_zcap_numerical_sensitive_is_exact_equality() -> None:
    # s numerical: y1 (a, 1.5) matches z1 (a, 1.5) exactly → 1; y2 (b, 2.5) vs z2 (b, 2.6) → 0;
    # y3 (c, 7.0) has no key match → 0.  ZCAP = 1/3
    real = {"k": ["a", "b", "c"], "s": [1.5, 2.5, 7.0]}
    syn = {"k": ["a", "b"], "s": [1.5, 2.6]}
    r = ev(real, syn, ["zcap"], key_columns=["k"], sensitive_columns=["s"])["zcap"]
    assert r.value == pytest.approx(1 / 3)
    assert r.details["per_column"]["s"]["kind"] == "numerical"


def test_threat_model_defaults_and_a_sensitive_key() -> None:
    # default sensitive column: the categorical one with the fewest distinct values (b: 2; a, c: 3),
    # wherever it stands — the input's column order does not choose it (issue 18, case 9)
    real = {"c": ["x", "y", "z", "x"], "b": ["u", "v", "u", "u"], "a": ["p", "q", "r", "p"]}
    for order in (["c", "b", "a"], ["a", "c", "b"]):
        r = ev({k: real[k] for k in order}, real, ["zcap"])["zcap"]
        assert r.details["sensitive_columns"] == ["b"]
        assert r.details["per_column"]["b"]["key_columns"] == ["a", "c"]  # every other column, by name
    tie = {"a": ["p", "q", "p"], "b": ["u", "v", "u"], "c": ["x", "y", "z"]}
    assert ev(tie, tie, ["zcap"])["zcap"].details["sensitive_columns"] == ["a"]  # a tie: the first name
    # a key that is also the sensitive column is dropped for it; none left → an error, never a 0.0
    bad = ev(real, real, ["zcap"], key_columns=["c"], sensitive_columns=["c"])["zcap"]
    assert bad.status is dp.Status.ERROR and "no key column left" in (bad.reason or "")


# --------------------------------------------------------------------------------------- GCAP


def test_gcap_counts_every_tied_nearest_row() -> None:
    # keys (k1, k2); Hamming distances:
    # y1 (a, p, x): z1 (a, q) 1, z2 (b, p) 1, z3 (c, r) 2 → G = {z1, z2}, C = {z1} → 1/2
    # y2 (b, q, y): z1 1, z2 1, z3 2 → G = {z1, z2}, C = {z2} → 1/2
    # y3 (c, r, y): z3 0 → G = {z3}, C = ∅ (x ≠ y) → 0.       GCAP = (1/2 + 1/2 + 0) / 3 = 1/3
    real = {"k1": ["a", "b", "c"], "k2": ["p", "q", "r"], "s": ["x", "y", "y"]}
    syn = {"k1": ["a", "b", "c"], "k2": ["q", "p", "r"], "s": ["x", "y", "x"]}
    r = ev(real, syn, ["gcap"], key_columns=["k1", "k2"], sensitive_columns=["s"])["gcap"]
    assert r.value == pytest.approx(1 / 3)
    assert r.details["per_column"]["s"]["mean_tied_rows"] == pytest.approx(5 / 3)


def test_hamming_blocks_count_differing_codes() -> None:
    rng = np.random.default_rng(0)
    q = np.column_stack([rng.integers(0, k, 300) for k in (2, 7, 90, 400)]).astype(np.int32)
    r = np.column_stack([rng.integers(0, k, 200) for k in (2, 7, 90, 400)]).astype(np.int32)
    empty = np.empty((0, 0), np.float32)
    blocks = np.vstack([b.copy() for _, b in mixed_chunks(MixedRows(empty.reshape(300, 0), q),
                                                          MixedRows(empty.reshape(200, 0), r))])
    expected = (q[:, None, :] != r[None, :, :]).sum(axis=2)  # small enough for the full matrix here
    np.testing.assert_array_equal(blocks, expected)


# ---------------------------------------------------------------------------------------- AIR


def test_air_by_hand_with_ties_and_false_negatives() -> None:
    # key k numerical (real range 16: scaled values are exact binary fractions), sensitive s.
    # y1 (0, x): nearest z (1, x) → TP 1, FP 0 → F1 = 1
    # y2 (8, y): z (7, x) and z (9, y) tie at 1 → TP 1, FP 1, FN = |M| = #{z : s = y} = 2
    #            → F1 = 2·1 / (2·1 + 1 + 2) = 0.4
    # y3 (16, x): nearest z (16, y) → TP 0 → F1 = 0
    # every row distinct → w(y) = −(1/3) log(1/3) / log 3 = 1/3;  AIR = (1 + 0.4 + 0) / 3
    real = {"k": [0.0, 8.0, 16.0], "s": ["x", "y", "x"]}
    syn = {"k": [1.0, 7.0, 9.0, 16.0], "s": ["x", "x", "y", "y"]}
    r = ev(real, syn, ["air"], key_columns=["k"], sensitive_columns=["s"])["air"]
    assert r.value == pytest.approx(1.4 / 3)
    assert r.details["per_column"]["s"]["mean_tied_rows"] == pytest.approx(4 / 3)


def test_air_entropy_weights() -> None:
    # Y = (0, x), (0, x), (8, y): patterns A (P = 2/3), B (P = 1/3); H = (2/3) log 1.5 + (1/3) log 3.
    # A's rows find z (0, x) → F1 = 1; B finds z (8, x) → F1 = 0.
    # AIR = w(A) = (2/3) log 1.5 / H ≈ 0.4247 (the unweighted mean would be 2/3)
    real = {"k": [0.0, 0.0, 8.0], "s": ["x", "x", "y"]}
    syn = {"k": [0.0, 8.0], "s": ["x", "x"]}
    h = (2 / 3) * math.log(1.5) + (1 / 3) * math.log(3)
    r = ev(real, syn, ["air"], key_columns=["k"], sensitive_columns=["s"],
           column_kinds={"k": "numerical"})["air"]
    assert r.value == pytest.approx((2 / 3) * math.log(1.5) / h)
    assert r.details["per_column"]["s"]["unweighted_mean_f1"] == pytest.approx(2 / 3)


def test_air_numerical_sensitive_uses_ten_percent_of_the_synthetic_value() -> None:
    # y1 (a, 100) ↔ z (a, 90.5): |9.5| ≤ 0.1·90.5 = 9.05? no → F1 = 0 (10 % of y would accept it)
    # y2 (b, 50) ↔ z (b, 40): |10| ≤ 4? no → 0;  y3 (c, 10) ↔ z (c, 10): yes → 1.   AIR = 1/3
    real = {"k": ["a", "b", "c"], "s": [100.0, 50.0, 10.0]}
    syn = {"k": ["a", "b", "c"], "s": [90.5, 40.0, 10.0]}
    r = ev(real, syn, ["air"], key_columns=["k"], sensitive_columns=["s"])["air"]
    assert r.value == pytest.approx(1 / 3)


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
    w = _entropy_weighted(ctx)

    def by_rows(a):  # the context holds rows in content order (evaluate.prepare): compare as a set
        a = np.asarray(a, dtype=float)
        return a[np.lexsort(a.T[::-1])]

    np.testing.assert_allclose(by_rows(w["real"]), by_rows([[h23, 0, 0], [h23, 0, h23], [0, h13, h23]]),
                               rtol=1e-6)
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
    assert ev(real, syn, ["hidden_rate"], source_index_column="src")["hidden_rate"].value == pytest.approx(1.0)


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
    real = pl.DataFrame({"c": rng.choice(["p", "q"], 250), "x": rng.integers(0, 60, 250).astype(float),
                         "y": rng.normal(size=250)})
    syn = pl.DataFrame({"c": rng.choice(["p", "q"], 180), "x": rng.integers(0, 60, 180).astype(float),
                        "y": rng.normal(size=180)})
    r = dp.evaluate(real, syn, metrics=["hitting_rate"], policy="report-only", progress=False)["hitting_rate"]
    hx = (real["x"].max() - real["x"].min()) / 30
    hy = (real["y"].max() - real["y"].min()) / 30
    hit = ((real["c"].to_numpy()[:, None] == syn["c"].to_numpy()[None, :])
           & (np.abs(real["x"].to_numpy()[:, None] - syn["x"].to_numpy()[None, :]) <= hx)
           & (np.abs(real["y"].to_numpy()[:, None] - syn["y"].to_numpy()[None, :]) <= hy))
    assert r.details["hit_pairs"] == int(hit.sum())
    assert r.value == pytest.approx(hit.any(axis=1).mean())


# ----------------------------------------------------------------------------------- classifiers


def _separable(n: int = 120) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(1)
    real = pl.DataFrame({"x": rng.uniform(0, 1, n), "c": rng.choice(["a", "b"], n)})
    syn = pl.DataFrame({"x": rng.uniform(2, 3, n), "c": rng.choice(["a", "b"], n)})
    return real, syn


def test_classifiers_on_separable_tables_give_one() -> None:
    # every synthetic x lies above every real x: AUC 1 (value 2·1 − 1 = 1), recall 1 and FPR 0 (value 1)
    real, syn = _separable()
    e = dp.evaluate(real, syn, metrics=["detection_mlp", "mir"], policy="report-only", progress=False)
    assert e["detection_mlp"].raw == pytest.approx(1.0) and e["detection_mlp"].value == pytest.approx(1.0)
    assert e["mir"].raw == pytest.approx(1.0) and e["mir"].value == pytest.approx(1.0)


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
    e = ev(real, syn, ["zcap", "gcap", "air", "hitting_rate", "identifiability"],
           key_columns=["k"], sensitive_columns=["s"])
    text = e.to_json()
    assert "secret" not in text and "hidden-" not in text
