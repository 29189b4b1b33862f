"""The union's test on its own (issue 56): the level spent per look, a record counted once, the copies
that fail the next look, and the lineage's false-alarm rate over twenty looks by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from dagster_privacy.decision.exposure_count import p_value
from dagster_privacy.lineage import cumulative as cu


def test_the_looks_levels_sum_to_the_gate_level_and_shrink() -> None:
    level = 0.03
    shares = [cu.look_level(level, i) for i in range(1, 200_001)]
    assert sum(shares) == pytest.approx(level, rel=1e-5)  # Σ 6/(π² i²) = 1
    assert cu.look_level(level, 1) == pytest.approx(level * 6 / math.pi**2)
    assert all(a > b for a, b in zip(shares, shares[1:], strict=False))


def test_the_union_counts_a_record_once_and_an_exposure_stays_counted() -> None:
    rare = {"verbatim": ({"a", "b", "c", "d"}, {"x", "y"})}
    earlier = [{"verbatim": ({"a", "b"}, {"x"})}, {"verbatim": ({"b", "z"}, set())}]  # z: no longer rare
    # the candidate's own exposures count among its rare records; an earlier exposure stays counted
    union = cu.union_parts({"verbatim": ({"a", "c", "q"}, set())}, earlier, rare)  # q: not rare now
    assert union == {"verbatim": ({"a", "b", "c", "z"}, {"x"})}
    assert cu.ever_rare(rare, earlier) == {"verbatim": ({"a", "b", "c", "d", "z"}, {"x", "y"})}
    assert cu.people(union, ["verbatim"]) == ({"a", "b", "c", "z"}, {"x"})


def test_a_release_reproducing_holdout_records_beyond_chance_is_named() -> None:
    rare = {"verbatim": ({f"t{i}" for i in range(600)}, {f"h{i}" for i in range(300)})}
    weights = {"verbatim": 0.5}
    clean = {"verbatim": ({"t1", "t2"}, {"h1"})}
    assert cu.holdout_beyond_chance(clean, rare, weights, 0.01) is None
    # 12 holdout records and no training record: P(X ≥ 12), X ~ Bin(12, 1/3) = 3^-12, far below 0.005
    saw = {"verbatim": (set(), {f"h{i}" for i in range(12)})}
    worst = cu.holdout_beyond_chance(saw, rare, weights, 0.01)
    assert worst is not None and worst["p_value"] == pytest.approx(3.0**-12) and worst["level"] == 0.005


def test_copies_to_fail_is_the_smallest_count_the_binomial_tail_rejects() -> None:
    # no chance exposure on the holdout side: p = share^k exactly
    share, level = 2 / 3, 0.001
    want = math.ceil(math.log(level) / math.log(share) - 1e-12)  # 18 exposures reject
    assert cu.copies_to_fail(0, 0, share, level) == want
    assert cu.copies_to_fail(10, 0, share, level) == want - 10
    assert cu.copies_to_fail(want, 0, share, level) == 0
    # with chance: the smallest j with P(Bin(k_t + j + k_c, π) ≥ k_t + j) ≤ level, by brute force
    k_t, k_c = 7, 3
    brute = next(j for j in range(200) if binom.sf(k_t + j - 1, k_t + j + k_c, share) <= level)
    assert cu.copies_to_fail(k_t, k_c, share, level) == brute


def test_the_lineage_false_alarm_over_twenty_looks_is_within_the_level() -> None:
    """Twenty releases of a lineage that copies nobody: each release exposes every rare record with the
    same small probability on both sides; the union is tested at each look's share. The share of
    lineages blocked at any look stays within the gate's level."""
    rng = np.random.default_rng(56)
    level, n_t, n_c, looks, lineages = 0.05, 600, 300, 20, 1500
    share = n_t / (n_t + n_c)
    blocked = 0
    for _ in range(lineages):
        seen_t = np.zeros(n_t, dtype=bool)
        seen_c = np.zeros(n_c, dtype=bool)
        for i in range(1, looks + 1):
            seen_t |= rng.random(n_t) < 0.004
            seen_c |= rng.random(n_c) < 0.004
            if p_value(int(seen_t.sum()), int(seen_c.sum()), share) <= cu.look_level(level, i):
                blocked += 1
                break
    assert blocked / lineages <= level


def test_a_growing_copy_fails_a_later_look_that_each_release_alone_passes() -> None:
    """Five releases, each copying 4 other records, no chance exposure: each alone is beyond the exact
    test's reach at the gate's level ((2/3)^4 = 0.20), the union of all five is not ((2/3)^20 = 3e-4,
    below the fifth look's 7e-4)."""
    level, share = 0.03, 2 / 3
    assert p_value(4, 0, share) == pytest.approx(share**4) and share**4 > level
    assert p_value(20, 0, share) == pytest.approx(share**20)
    assert share**20 <= cu.look_level(level, 5) < share**16  # 16 copies would not fail the fifth look


def test_a_release_recorded_before_a_part_existed_is_the_same_release() -> None:
    """Review: a ledger row recorded before cells_1_far existed lacks the part, and judging the same
    release id again read as 'other content'; the parts both hold are compared, and other content
    under the id is still refused."""
    from types import SimpleNamespace

    from dagster_privacy.lineage.gate import LineageError, _already

    before = {"verbatim": ({"a"}, set()), "cells_1": ({"b"}, set())}
    past = [SimpleNamespace(release_id="r1", first=SimpleNamespace(parts=lambda: before))]
    now = SimpleNamespace(exposed={**before, "cells_1_far": ({"b"}, set())})
    assert _already(past, "r1", now, "L") is past[0]
    other = SimpleNamespace(exposed={**before, "verbatim": ({"z"}, set())})
    with pytest.raises(LineageError, match="other content"):
        _already(past, "r1", other, "L")
