"""stats.py: the Wilson interval, the control baseline of seed 004 eq. 8, Bonferroni and the bootstrap,
against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dagster_privacy.errors import MetricError
from dagster_privacy.metrics.stats import Rate, bonferroni, bootstrap_ci, control_risk, wilson, z_score

Z = 1.959963984540054  # the 97.5 % normal quantile


def test_wilson_five_of_ten() -> None:
    # p = .5, z²/n = .384146: centre = (.5 + .192073)/1.384146 = .5;
    # half = z·sqrt(.025 + z²/400)/1.384146 = 1.959964 · .186021 / 1.384146 = .263407
    r = wilson(5, 10)
    assert r.value == 0.5 and r.center == pytest.approx(0.5)
    assert (r.low, r.high) == pytest.approx((0.236593, 0.763407), abs=1e-6)


def test_wilson_zero_successes_starts_at_zero() -> None:
    # p = 0: centre = half = (z²/2n)/(1 + z²/n), so low = 0 and high = (z²/n)/(1 + z²/n) = .277533 at n = 10
    r = wilson(0, 10)
    assert r.low == pytest.approx(0.0, abs=1e-15)
    assert r.high == pytest.approx((Z * Z / 10) / (1 + Z * Z / 10), rel=1e-12)
    with pytest.raises(MetricError):
        wilson(0, 0)


def test_z_score() -> None:
    assert z_score(0.95) == pytest.approx(Z, rel=1e-12)


def test_control_risk_eq_8() -> None:
    # E = (e_train − e_control)/(e* − e_control) = (.5 − .1)/(1 − .1) = .4444
    train, control = Rate(50, 100, 0.5, 0.5, 0.45, 0.55), Rate(10, 100, 0.1, 0.1, 0.08, 0.12)
    e, (lo, hi) = control_risk(train, control)
    assert e == pytest.approx(0.4 / 0.9)
    # dE/de_t = 1/.9, dE/de_c = |.5 − 1|/.81: err = sqrt((.05/.9)² + (.02 · .5/.81)²)
    err = math.sqrt((0.05 / 0.9) ** 2 + (0.02 * 0.5 / 0.81) ** 2)
    assert (lo, hi) == pytest.approx((0.4 / 0.9 - err, 0.4 / 0.9 + err))
    # a control at or above e*: nothing left to detect, and the interval says so
    assert control_risk(train, Rate(100, 100, 1.0, 1.0, 1.0, 1.0)) == (0.0, (0.0, 1.0))
    # training worse than control clips to 0
    assert control_risk(control, train)[0] == 0.0


def test_bonferroni() -> None:
    assert bonferroni(0.95, 5) == pytest.approx(0.99)
    assert bonferroni(0.95, 1) == bonferroni(0.95, 0) == pytest.approx(0.95)


def test_bootstrap_ci_brackets_the_mean_at_the_expected_width() -> None:
    x = np.arange(100, dtype=np.float64)  # mean 49.5, sd 28.87: a 95 % interval is about ±1.96·2.887
    lo, hi = bootstrap_ci(lambda i: float(x[i].mean()), x.size, np.random.default_rng(0), resamples=400)
    assert lo < 49.5 < hi and 8.0 < hi - lo < 15.0
    const = bootstrap_ci(lambda i: 3.0, 10, np.random.default_rng(0))
    assert const == (3.0, 3.0)


# ------------------------------------------------------------------- the decision rule's bounds (issue 32)


def test_newcombe_hybrid_score_interval_matches_the_published_example() -> None:
    """Newcombe (1998), Statistics in Medicine 17:873, Table II, example (a): 56/70 − 48/80, method 10
    (score interval, hybrid): difference 0.2000, 95 % interval 0.0524 to 0.3339."""
    from dagster_privacy.metrics.stats import excess_part

    e, low, high = excess_part(56, 70, 48, 80, 1.0, 0.025, 0.025)
    assert e == pytest.approx(0.2)
    assert (low, high) == pytest.approx((0.0524, 0.3339), abs=5e-5)


def test_newcombe_with_no_successes_on_either_side_by_hand() -> None:
    # 0/100 − 0/100 at one-sided 2.5 %: the upper bound adds the training rate's Wilson high, (z²/100)/
    # (1 + z²/100) = .036994, to the control rate's Wilson low, 0, in quadrature: .036994; the lower bound
    # −.036994 is clipped at 0
    from dagster_privacy.metrics.stats import excess_part

    e, low, high = excess_part(0, 100, 0, 100, 1.0, 0.025, 0.025)
    assert e == 0.0 and low == 0.0
    assert high == pytest.approx((Z * Z / 100) / (1 + Z * Z / 100), rel=1e-9)


def test_the_bounds_hold_their_levels_over_simulated_releases() -> None:
    """Error rates over seeds: with no excess (p_t = p_c) the lower bound at level a clears 0 in about a
    of the draws, never much more; with an excess of .1 the upper bound at level b falls below .1 in at
    most about b of them. Bonferroni over 3 parts keeps the maximum's lower bound at its level."""
    from dagster_privacy.metrics.stats import excess

    rng = np.random.default_rng(0)
    n, draws, a = 400, 4000, 0.05
    null_fail = over_pass = max_fail = 0
    for _ in range(draws):
        kt, kc = rng.binomial(n, 0.2, 2)
        null_fail += (
            excess([{"k_t": kt, "n_t": n, "k_c": kc, "n_c": n}], fail_level=a, pass_level=a).lower > 0
        )
        kt2 = rng.binomial(n, 0.3)
        over_pass += (
            excess([{"k_t": kt2, "n_t": n, "k_c": kc, "n_c": n}], fail_level=a, pass_level=a).upper <= 0.1
        )
        parts = [{"k_t": k1, "n_t": n, "k_c": k2, "n_c": n} for k1, k2 in rng.binomial(n, 0.2, (3, 2))]
        max_fail += excess(parts, fail_level=a, pass_level=a).lower > 0
    for rate in (null_fail, over_pass, max_fail):
        assert rate / draws <= a + 3 * math.sqrt(a * (1 - a) / draws), rate / draws
    assert null_fail > 0  # not vacuous: the bound is near its level, not far inside it


def test_no_control_is_never_evidence_of_risk_and_the_pass_bound_is_not_divided_by_parts() -> None:
    """Second reading of issue 32's rule: crp without a holdout treated its control as exactly 0 and
    failed clean narrow tables (natural twins); a pass over J parts needs every part within the
    threshold (an intersection-union test), so its level is not divided by J."""
    from dagster_privacy.metrics.stats import excess, excess_part

    e, low, high = excess_part(490, 1000, 0, 0, 1.0, 0.00625, 0.05)
    assert e == pytest.approx(0.49) and low == 0.0 and high > 0.49
    part = {"k_t": 10, "n_t": 1000, "k_c": 10, "n_c": 1000}
    one = excess([part], fail_level=0.01, pass_level=0.05)
    four = excess([part] * 4, fail_level=0.01, pass_level=0.05)
    assert four.upper == pytest.approx(one.upper) and four.lower <= one.lower


def test_the_distance_gates_control_carries_the_quantiles_noise() -> None:
    """dcr_percentile: training rows piled just below the holdout's 2 % quantile make the quantile's
    noise reach the training share; the control's effective trials fall below the holdout's rows."""
    from dagster_privacy.metrics.holdout import _control_trials, _percentile_value

    rng = np.random.default_rng(0)
    hold = rng.random(1000)
    plain = rng.random(2000)
    piled = np.concatenate([rng.random(1960), rng.uniform(0.0, 0.02, 40) * 0.999 + 0.02 * 0.001])
    piled = np.where(np.arange(piled.size) < 60, np.quantile(hold, 0.02) * 0.98, piled)  # just below q
    n_plain = _control_trials(
        _percentile_value(plain, hold, 0.02)[1], plain, hold, 0.02, np.random.default_rng(1)
    )
    n_piled = _control_trials(
        _percentile_value(piled, hold, 0.02)[1], piled, hold, 0.02, np.random.default_rng(1)
    )
    assert n_piled < 0.8 * hold.size and n_piled < n_plain <= hold.size


def test_clustered_se_counts_twins_as_one_draw() -> None:
    """By hand. x = 1, 1, 0, 0 (mean 0.5), rows independent: Σ((x − 0.5)/4)² = 4 · 0.125² = 0.0625,
    times G/(G − 1) = 4/3: √0.08333 = 0.2887 (the binomial √(p(1−p)/n) = 0.25 with the sample variance's
    n/(n − 1)). The same rows as two pairs of twins: the pairs' sums ±0.25, 2 · 0.0625 · 2/1 = 0.25,
    so 0.5. Two sides that share a cluster add their deviations before squaring (twins across real and
    synthetic move together). Under two clusters, or on an empty side, no error can be estimated: inf."""
    from dagster_privacy.metrics.stats import clustered_se

    x = np.array([1.0, 1.0, 0.0, 0.0])
    assert clustered_se((x, np.array([1, 2, 3, 4]))) == pytest.approx(math.sqrt(0.0625 * 4 / 3), abs=1e-12)
    assert clustered_se((x, np.array([7, 7, 9, 9]))) == pytest.approx(0.5, abs=1e-12)
    # two sides: y = 1, 0 (mean 0.5) on rows of content 7 and 9; cluster 7: 0.125 + 0.125 + 0.25 = 0.5,
    # cluster 9: −0.5, so √(0.5 · 2/1) = 1
    y = np.array([1.0, 0.0])
    assert clustered_se((x, np.array([7, 7, 9, 9])), (y, np.array([7, 9]))) == pytest.approx(1.0, abs=1e-12)
    assert clustered_se((x, np.array([5, 5, 5, 5]))) == math.inf  # one cluster
    assert clustered_se((np.array([]), np.array([])), (y, np.array([7, 9]))) == math.inf  # an empty side
