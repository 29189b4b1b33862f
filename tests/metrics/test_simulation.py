"""metrics/simulation.py (seed 000 §2.1): ZCAP, GCAP and AIR on tiny tables computed by hand.

Every expected figure is worked out in the comments from the seed's formula, never copied from a run.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.engine.chunks import map_chunks
from dagster_privacy.engine.neighbors import MixedRows


def ev(real, synthetic, ids, **kw) -> dp.Evaluation:
    return dp.evaluate(
        pl.DataFrame(real), pl.DataFrame(synthetic), metrics=ids, policy="report-only", progress=False, **kw
    )


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


@pytest.mark.parametrize("wide", [300, 70_000])
def test_gcap_kernel_is_the_definition_with_wide_and_negative_codes(wide: int) -> None:
    # byte keys (uint8), a key of 300 or 70,000 codes and one with negative codes (the wide part, uint16,
    # int32): per real row the minimum Hamming distance, its ties and the ties sharing the sensitive code,
    # against a brute force; 5,000 synthetic rows are three runs of references, so a nearer distance in a
    # later run replaces the counts of an earlier one
    from dagster_privacy.metrics.simulation import _by_width, _gcap_rows, _Hamming, _narrow

    rng = np.random.default_rng(3)
    sizes = [(0, 2), (0, 3), (0, 250), (0, wide), (-5, 5)]

    def codes(n: int) -> np.ndarray:
        return np.column_stack([rng.integers(a, b, n) for a, b in sizes]).astype(np.int32)

    q, r = codes(40), codes(5000)
    r[4500:, :3] = q[7, :3]  # one real row meets its nearest only in the last run
    v_q, v_r = rng.integers(0, 3, (2, 40)), rng.integers(0, 3, (2, 5000))
    (qn, qw), (rn, rw) = _by_width(q, r)
    assert qn.dtype == np.uint8 and qn.shape[1] == 3 and qw.shape[1] == 2 and rn.shape == (3, 5000)
    assert qw.dtype == (np.int32 if wide > 32_767 else np.int16)
    low, ties, correct = _gcap_rows(_Hamming((qn, qw), (rn, rw), *_narrow(v_q, v_r)), (0, 40))
    dist = (q[:, None, :] != r[None, :, :]).sum(axis=2)
    at = dist == dist.min(axis=1, keepdims=True)
    assert np.array_equal(low, dist.min(axis=1)) and np.array_equal(ties, at.sum(axis=1))
    for c in range(2):
        assert np.array_equal(correct[c], (at & (v_q[c][:, None] == v_r[c][None, :])).sum(axis=1))
    assert low[7] <= 2 and ties[7] >= 1


def _copy(_: object, start: int, block: np.ndarray) -> np.ndarray:
    return block.copy()  # the block is scratch


def test_hamming_blocks_count_differing_codes() -> None:
    rng = np.random.default_rng(0)
    q = np.column_stack([rng.integers(0, k, 300) for k in (2, 7, 90, 400)]).astype(np.int32)
    r = np.column_stack([rng.integers(0, k, 200) for k in (2, 7, 90, 400)]).astype(np.int32)
    empty = np.empty((0, 0), np.float32)
    blocks = np.vstack(
        map_chunks(_copy, None, MixedRows(empty.reshape(300, 0), q), MixedRows(empty.reshape(200, 0), r))
    )
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
    r = ev(real, syn, ["air"], key_columns=["k"], sensitive_columns=["s"], column_kinds={"k": "numerical"})[
        "air"
    ]
    assert r.value == pytest.approx((2 / 3) * math.log(1.5) / h)
    assert r.details["per_column"]["s"]["unweighted_mean_f1"] == pytest.approx(2 / 3)


def test_air_numerical_sensitive_uses_ten_percent_of_the_synthetic_value() -> None:
    # y1 (a, 100) ↔ z (a, 90.5): |9.5| ≤ 0.1·90.5 = 9.05? no → F1 = 0 (10 % of y would accept it)
    # y2 (b, 50) ↔ z (b, 40): |10| ≤ 4? no → 0;  y3 (c, 10) ↔ z (c, 10): yes → 1.   AIR = 1/3
    real = {"k": ["a", "b", "c"], "s": [100.0, 50.0, 10.0]}
    syn = {"k": ["a", "b", "c"], "s": [90.5, 40.0, 10.0]}
    r = ev(real, syn, ["air"], key_columns=["k"], sensitive_columns=["s"])["air"]
    assert r.value == pytest.approx(1 / 3)
