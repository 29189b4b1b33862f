"""Release policy: presets, YAML errors with line numbers, statuses and the verdict."""

from __future__ import annotations

import math

import pytest
from gates import signed, signed_yaml

import dagster_privacy as dp
from dagster_privacy.decision import policy as pol
from dagster_privacy.decision.verdict import blocked_by, risk_decisions
from dagster_privacy.metrics.metric_policy import MetricPolicy
from dagster_privacy.results import MetricResult, Severity, Status


@pytest.mark.parametrize("name", pol.PRESET_NAMES)
def test_presets_load_and_name_registered_metrics(name: str) -> None:
    p = dp.load_policy(name)
    assert p.preset == name and p.metrics
    assert set(p.metrics) <= set(dp.registry())


def test_report_only_gates_nothing() -> None:
    p = dp.load_policy("report-only")
    assert all(m.severity is Severity.WARN and m.threshold is None for m in p.metrics.values())


def test_yaml_overrides_preset_and_errors_carry_the_line(tmp_path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("preset: standard\nseed: 5\nmetrics:\n  crp: {threshold: 0.2}\n")
    p = dp.load_policy(f)
    assert p.seed == 5 and p.metrics["crp"].threshold == 0.2 and "dcr" in p.metrics
    f.write_text("seed: 1\nmetrics:\n  crp:\n    threshold: 1.5\n")
    with pytest.raises(dp.PolicyError, match=r"line 4: metrics\.crp\.threshold: .*\[0, 1\]"):
        dp.load_policy(f)
    f.write_text("metrics:\n  crp: {threshold: 0.1}\n  dcrr: {threshold: 0.1}\n")
    with pytest.raises(dp.PolicyError, match="line 2: metrics: .*unknown metric id.*dcrr"):
        dp.load_policy(f)
    f.write_text("metrics: [crp\n")
    with pytest.raises(dp.PolicyError, match="not valid YAML"):
        dp.load_policy(f)
    f.write_text("metrics:\n  crp: {threshold: 0.1, colour: red}\n")
    with pytest.raises(dp.PolicyError, match="line 2: metrics.crp.colour: Extra inputs"):
        dp.load_policy(f)


def _r(mid: str, value: float | None, status: Status | None = None, ci=None) -> MetricResult:
    return MetricResult(id=mid, value=value, status=status, ci=ci)  # unjudged unless error / n/a


def test_statuses_and_verdict() -> None:
    p = pol.from_mapping(
        signed(
            {
                "metrics": {
                    "crp": {"threshold": 0.1},
                    "dcr": {"threshold": 0.5, "severity": "WARN"},
                    "mdcr": {"threshold": 0.3, "on": "ci_upper"},
                    "nndr": {"optional": True, "severity": "WARN"},
                }
            }
        )
    )
    ok = [
        pol.judge(p.entry("crp"), _r("crp", 0.1)),
        pol.judge(p.entry("dcr"), _r("dcr", 0.2)),
        pol.judge(p.entry("mdcr"), _r("mdcr", 0.2, ci=(0.1, 0.29))),
    ]
    assert [r.status for r in ok] == [Status.PASS] * 3 and pol.verdict(ok) is Status.PASS

    warn = pol.judge(p.entry("dcr"), _r("dcr", 0.6))
    assert warn.status is Status.WARN and warn.reason == "value 0.6 > threshold 0.5"
    assert pol.verdict([*ok, warn]) is Status.WARN

    upper = pol.judge(p.entry("mdcr"), _r("mdcr", 0.2, ci=(0.1, 0.35)))  # value under, CI upper bound over
    assert upper.status is Status.FAIL and upper.reason == "CI upper bound 0.35 > threshold 0.3"
    assert pol.verdict([*ok, upper]) is Status.FAIL

    errored = pol.judge(p.entry("crp"), _r("crp", None, Status.ERROR))
    assert errored.status is Status.ERROR and pol.verdict([errored]) is Status.FAIL

    na_required = pol.judge(p.entry("crp"), _r("crp", None, Status.NOT_APPLICABLE))
    assert pol.verdict([na_required]) is Status.FAIL  # a gate that could not run has not passed
    na_optional = pol.judge(p.entry("nndr"), _r("nndr", None, Status.NOT_APPLICABLE))
    assert pol.verdict([na_optional]) is Status.PASS

    nan_upper = pol.judge(
        p.entry("mdcr"), _r("mdcr", 0.2, ci=(0.1, float("nan")))
    )  # issue 18 case 6: NaN ≯ threshold
    assert nan_upper.status is Status.ERROR and pol.verdict([nan_upper]) is Status.FAIL


def test_a_metric_that_raises_is_an_error_not_zero() -> None:
    import polars as pl

    real = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    ev = dp.evaluate(
        real,
        real,
        metrics=["crp"],
        policy=signed({"metrics": {"crp": {"threshold": 0.1, "params": {"bogus": 1}}}}),
        progress=False,
    )
    assert ev["crp"].status is Status.ERROR and ev["crp"].value is None
    assert "unknown parameter" in ev["crp"].reason and ev.verdict is Status.FAIL


def test_an_exception_inside_a_metric_becomes_an_error_result_with_its_reason() -> None:
    import polars as pl

    from dagster_privacy.metrics.registration import _REGISTRY, Expect, metric

    @metric(
        "_boom",
        family="distance",
        source="test",
        risk=dp.Risk.REIDENTIFICATION,
        default={"threshold": 0.5, "severity": "ERROR"},
        expect=Expect(None, None),
    )
    def boom(ctx) -> dp.Measurement:
        raise RuntimeError("division went wrong at value 'CANARY-99'")

    try:
        real = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
        policy = {"preset": "standard", "metrics": {"_boom": {"threshold": 0.5}}}
        ev = dp.evaluate(real, real, metrics=["_boom", "crp"], policy=policy, progress=False)
    finally:
        _REGISTRY.pop("_boom")
    r = ev["_boom"]
    assert r.status is Status.ERROR and r.value is None
    # the library's message never travels (it may quote a value in any form): its class does
    assert r.reason.startswith("RuntimeError (") and "CANARY" not in r.reason
    assert ev["crp"].value == pytest.approx(1.0)  # the others still ran
    assert ev.verdict is Status.FAIL


def test_unquoted_on_key_is_a_string_key(tmp_path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(
        signed_yaml(
            "metrics:\n  crp: {threshold: 0.1, on: ci_upper}\n  dcr:\n    on: value\n    optional: true\n"
            "    threshold: 0.5\n"
        )
    )
    p = dp.load_policy(f)
    assert p.metrics["crp"].on == "ci_upper" and p.metrics["dcr"].optional is True


def test_resolve_is_the_one_resolution() -> None:
    plan = pol.resolve(
        "standard", ["ims", "crp"], key_columns=["age"], column_kinds={"age": "categorical"}, seed=7
    )
    assert plan.ids == ("crp", "ims")  # registry order, whatever the request order
    assert plan.entry("ims").threshold == 0.02 and plan.seed == 7 and plan.key_columns == ["age"]
    assert plan.sensitive_columns is None and plan.column_kinds == {"age": "categorical"}
    assert plan.gating == []  # issue 45: both inform; exposed_records counts the people
    assert pol.resolve("standard", ["ims", "exposed_records"]).gating == ["exposed_records"]
    with pytest.raises(dp.PolicyError, match="unknown metric id.*nope"):
        pol.resolve("standard", ["nope"])
    narrow = signed({"metrics": {"crp": {"threshold": 0.1}}})
    with pytest.raises(dp.PolicyError, match="not configured"):
        pol.resolve(narrow, ["crp", "dcr"])
    informing = pol.resolve(narrow, ["crp", "dcr"], unconfigured="inform")  # calibration's way
    assert informing.ids == ("crp", "dcr") and informing.entry("dcr").threshold is None
    assert informing.entry("crp").threshold == 0.1
    with pytest.raises(dp.PolicyError, match="unknown metric id"):
        pol.resolve(narrow, ["nope"], unconfigured="inform")


def test_a_result_is_immutable_and_unjudged_until_judged() -> None:
    from pydantic import ValidationError

    r = _r("crp", 0.2)
    assert r.status is None and not r.passed and r.blocks  # unjudged is not a pass
    with pytest.raises(ValidationError):
        r.status = Status.PASS  # type: ignore[misc]
    judged = pol.judge(pol.MetricPolicy(threshold=0.5), r)
    assert judged.status is Status.PASS and judged.passed and r.status is None  # a copy; r unchanged
    assert pol.verdict([r]) is Status.FAIL  # an unjudged result cannot make a verdict pass


def test_every_applies_to_each_metric_under_the_policys_own_entries(tmp_path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(
        "preset: standard\nevery: {severity: WARN}\nmetrics:\n  crp: {severity: ERROR}\n"
        "waivers:\n  metrics.*.severity: every gate informs in this test of `every`\n"
    )  # issue 54
    p = dp.load_policy(f)
    assert p.entry("crp").severity is dp.Severity.ERROR and p.entry("crp").threshold == 0.05
    assert p.entry("ims").severity is dp.Severity.WARN and p.entry("ims").threshold == 0.02
    own = pol.from_mapping(signed({"every": {"threshold": 0.2}, "metrics": {"dcr": {"severity": "WARN"}}}))
    assert list(own.metrics) == ["dcr"] and own.entry("dcr").threshold == 0.2
    with pytest.raises(dp.PolicyError, match="every must be a mapping"):
        pol.from_mapping({"preset": "standard", "every": "WARN"})


# ------------------------------------------------------------------------- the decision rule (issue 32)


def _ev(mid: str, risk: str, k_t: float, n_t: int, k_c: float, n_c: int, parts: int = 1) -> MetricResult:
    part = {"k_t": k_t, "n_t": n_t, "k_c": k_c, "n_c": n_c, "e_star": 1.0}
    return MetricResult(id=mid, risk=risk, value=0.0, evidence=[part] * parts)


def test_a_gate_fails_on_evidence_passes_on_evidence_and_is_inconclusive_otherwise() -> None:
    entry = MetricPolicy(threshold=0.05)
    # 120/1000 vs 10/1000: excess .11, far above .05 at any level → fail
    fail = pol.judge(entry, _ev("ims", "re-identification", 120, 1000, 10, 1000), fail_level=0.00625)
    assert fail.status is Status.FAIL and fail.decision["lower"] > 0.05 and "evidence of risk" in fail.reason
    # 10/1000 vs 10/1000: no excess, upper bound ≈ .018 → pass
    ok = pol.judge(entry, _ev("ims", "re-identification", 10, 1000, 10, 1000), fail_level=0.00625)
    assert ok.status is Status.PASS and ok.decision["upper"] <= 0.05 and ok.passed
    # the same shares on 40 rows: the bounds straddle .05 → inconclusive, saying what would decide
    few = pol.judge(entry, _ev("ims", "re-identification", 1, 40, 1, 40), fail_level=0.00625)
    assert few.status is Status.INCONCLUSIVE and not few.passed and "trials would decide" in few.reason
    assert "40 trials" in few.reason
    # issue 46 (5): the line ends in what the user can do: the policy value that accepts this bound
    upper = few.decision["upper"]
    assert few.reason.endswith("this table's)") and "To decide on this table: " in few.reason
    assert f"accepted_excess: {math.ceil(upper * 100) / 100:.2f} in the policy" in few.reason
    taken = pol.judge(entry, _ev("ims", "re-identification", 1, 40, 1, 40), fail_level=0.00625,
                      accepted_excess=math.ceil(upper * 100) / 100)  # fmt: skip
    assert taken.status is Status.PASS and taken.decision["guarantee"] == "weaker"  # the value decides
    # optional covers a gate that cannot run, not one that could not decide (second review: an optional
    # inconclusive gate passed what it could not decide)
    opt = pol.judge(
        MetricPolicy(threshold=0.05, optional=True), _ev("ims", "re-identification", 1, 40, 1, 40)
    )
    assert opt.status is Status.INCONCLUSIVE and not opt.passed
    # the policy's weaker guarantee: the upper bound within accepted_excess passes, and says so
    weak = pol.judge(entry, _ev("ims", "re-identification", 1, 40, 1, 40), accepted_excess=0.25)
    assert weak.status is Status.PASS and weak.decision["guarantee"] == "weaker"
    assert weak.decision["upper"] <= 0.25 and "weaker guarantee" in weak.reason


def test_an_advisory_that_cannot_decide_asks_nothing_of_the_user() -> None:
    """Issue 46 trial: an inconclusive advisory (gtcap, WARN) on 1 to 10 trials told the user to "accept
    its bound with accepted_excess: 0.93 in the policy", a policy change for a figure that warns no one.
    Its line says it is information and that nothing is to be done; a gate's line still names the
    action."""
    few = _ev("gtcap", "inference", 1, 8, 0, 8)  # estimate 0.125, upper bound above 0.25
    advisory = pol.judge(MetricPolicy(threshold=0.3, severity="WARN"), few, accepted_excess=0.25)
    assert advisory.status is Status.INCONCLUSIVE and not advisory.blocks
    assert advisory.reason.startswith("information: ") and "nothing to do" in advisory.reason
    assert "accepted_excess" not in advisory.reason and "waive" not in advisory.reason
    gate = pol.judge(MetricPolicy(threshold=0.3), few, accepted_excess=0.25)
    assert "To decide on this table: accept its bound with accepted_excess" in gate.reason
    # second reading: 5/12 against 1/12 is 3x a 0.1 threshold without evidence: not "nothing to do"
    high = pol.judge(MetricPolicy(threshold=0.1, severity="WARN"), _ev("gtcap", "inference", 5, 12, 1, 12))
    assert high.status is Status.INCONCLUSIVE and "nothing to do" not in high.reason
    assert "the estimate is over the threshold without evidence of risk at this size" in high.reason


def test_a_weaker_guarantee_needs_no_sign_of_risk_and_the_line_says_so() -> None:
    """Issue 45: a clean breast-cancer release (284 trials) with excess 0.043, bounds [0, 0.075] lacked
    evidence because its estimate was over the 0.02 threshold: within noise (sd about 0.02 at this
    size), so 2 of 5 clean seeds were blocked. Passing on the bound alone let 240-row releases of 17 %
    near-copies through (estimates 3–4× their thresholds). The weaker guarantee now needs no sign of
    risk: the lower bound at the gate's own 5 % level (not the family's) at or below the threshold."""
    entry = MetricPolicy(threshold=0.02)
    # 20/284 vs 8/284: excess 12/284 = 0.042; one-sided 95 % Newcombe lower bound ≈ 0.012 ≤ 0.02: no sign
    clean = pol.judge(entry, _ev("ims", "re-identification", 20, 284, 8, 284), fail_level=0.00625,
                      accepted_excess=0.25)  # fmt: skip
    d = clean.decision
    assert abs(d["excess"] - 12 / 284) < 1e-9 and d["lower"] <= 0.02 < d["upper"] <= 0.25, d
    assert 0 < d["sign_lower"] <= 0.02, d
    assert clean.status is Status.PASS and d["guarantee"] == "weaker" and "weaker guarantee" in clean.reason
    # 28/284 vs 8/284: excess 0.070 (3.5× the threshold), a sign of risk (lower ≈ 0.037 at 5 %) the
    # family-wise level (0.00625) cannot confirm: lacking evidence, not a weaker pass, and not a failure
    sign = pol.judge(entry, _ev("ims", "re-identification", 28, 284, 8, 284), fail_level=0.00625,
                     accepted_excess=0.25)  # fmt: skip
    d = sign.decision
    assert d["lower"] <= 0.02 < d["sign_lower"] and d["upper"] <= 0.25, d
    assert sign.status is Status.INCONCLUSIVE and "guarantee" not in d
    assert (
        "a sign of risk: at level 0.05 for this gate alone, not divided among the gates, its lower bound"
        in sign.reason
    )
    # review: a stricter assurance (pass level 0.005, below the fail level) must not loosen the sign:
    # it is taken at the family's level (false_alarm), never wider than the gate's own fail level
    strict = pol.judge(entry, _ev("ims", "re-identification", 28, 284, 8, 284), fail_level=0.00625,
                       pass_level=0.005, accepted_excess=0.25)  # fmt: skip
    assert strict.status is Status.INCONCLUSIVE and strict.decision["sign_level"] == 0.05
    # second review: nor a stricter false_alarm (a smaller fail level): the sign stays at 5 %
    stricter = pol.judge(entry, _ev("ims", "re-identification", 28, 284, 8, 284), fail_level=0.000125,
                         accepted_excess=0.25)  # fmt: skip
    assert stricter.status is Status.INCONCLUSIVE and stricter.decision["sign_level"] == 0.05
    # second review: without control rows a part has no lower bound (0), so its estimate is the sign:
    # 40/1000 copies with no holdout (crp) at 0.02 passed as a weaker guarantee
    alone = pol.judge(entry, _ev("crp", "re-identification", 40, 1000, 0, 0), accepted_excess=0.25)
    assert alone.status is Status.INCONCLUSIVE and "guarantee" not in alone.decision
    assert "its estimate 0.04 (without control rows it has no lower bound)" in alone.reason
    below = pol.judge(entry, _ev("crp", "re-identification", 10, 1000, 0, 0), accepted_excess=0.25)
    assert below.status is not Status.INCONCLUSIVE  # 0.01 under the threshold: no sign
    # third reading (64k leaky release): a gate of 10 parts whose largest part shows 380/1000 against
    # 190/1000 (excess 0.19 over 0.15) read no sign when the sign was divided among its parts (lower
    # bound 0.139 at 0.005 a part): a weaker pass on 1,000 trials. Each part alone at 5 %: 0.157 > 0.15
    wide = [{"k_t": 380, "n_t": 1000, "k_c": 190, "n_c": 1000}] + [{"k_t": 50, "n_t": 1000, "k_c": 50,
                                                                      "n_c": 1000}] * 9  # fmt: skip
    many = pol.judge(MetricPolicy(threshold=0.15), MetricResult(id="singling_out_multivariate",
                     risk="singling out", value=0.0, evidence=wide), fail_level=0.00625,
                     accepted_excess=0.25)  # fmt: skip
    assert many.decision["lower"] <= 0.15 < many.decision["sign_lower"] and many.decision["upper"] <= 0.25
    assert (
        many.status is Status.INCONCLUSIVE and "largest part's lower bound (of 10, each alone)" in many.reason
    )
    # review: with the bound above accepted_excess and a sign of risk, the line does not advise a
    # policy value that would only move it to the other inconclusive line: 8/40 vs 1/40 at 0.05
    both = pol.judge(MetricPolicy(threshold=0.05), _ev("ims", "re-identification", 8, 40, 1, 40),
                     fail_level=0.00625, accepted_excess=0.25)  # fmt: skip
    assert both.decision["upper"] > 0.25 and both.decision["sign_lower"] > 0.05, both.decision
    assert "accept its bound" not in both.reason and "waive the membership risk" in both.reason
    assert "upper bound is above" not in sign.reason and "accept its bound" not in sign.reason
    # a fixed table cannot grow: the line names the one decision left, a waiver by name (issue 46)
    assert sign.reason.endswith("waive the membership risk with a reason in the policy (waivers:), which "
                                "asks for a privacy officer's sign-off")  # fmt: skip
    # the upper bound above accepted_excess: inconclusive, and the line names the value that accepts it
    tight = pol.judge(entry, _ev("ims", "re-identification", 20, 284, 8, 284), fail_level=0.00625,
                      accepted_excess=0.05)  # fmt: skip
    assert tight.status is Status.INCONCLUSIVE and tight.decision["upper"] > 0.05
    # issue 57: its estimate (0.042) is over the threshold, so accepting the bound would pass what this
    # table is too small to tell from a leak: the line asks for more rows (or a waiver by name) instead
    assert "too small to tell a leak from none" in tight.reason and "accept its bound" not in tight.reason
    d = tight.decision
    trials = math.ceil(284 * ((d["excess"] - d["lower"]) / (d["excess"] - 0.02)) ** 2)  # the lower bound
    assert (
        1000 < trials < 1100
        and f"at least about {trials:,} trials would be needed to show it" in tight.reason
    )
    # the estimate within the threshold: the line still names the value that accepts the bound
    under = pol.judge(entry, _ev("ims", "re-identification", 12, 284, 8, 284), fail_level=0.00625,
                      accepted_excess=0.02)  # fmt: skip
    assert (
        under.status is Status.INCONCLUSIVE
        and "above the weaker guarantee the policy accepts" in under.reason
    )


def test_nothing_to_attack_passes_and_a_fact_of_the_run_is_kept() -> None:
    entry = MetricPolicy(threshold=0.1)
    nothing = pol.judge(entry, MetricResult(id="singling_out_univariate", status=Status.NOTHING_TO_ATTACK))
    assert nothing.passed and pol.verdict([nothing]) is Status.PASS
    short = pol.judge(entry, MetricResult(id="membership_inference", status=Status.INCONCLUSIVE, reason="x"))
    assert short.status is Status.INCONCLUSIVE and pol.verdict([short]) is Status.FAIL


def test_the_verdict_is_given_per_risk_and_names_what_blocks_it() -> None:
    entry = MetricPolicy(threshold=0.05)
    leak = pol.judge(entry, _ev("ims", "re-identification", 120, 1000, 10, 1000), fail_level=0.01)
    clean_link = pol.judge(entry, _ev("linkability", "linkability", 10, 1000, 10, 1000), fail_level=0.01)
    unsure = pol.judge(entry, _ev("singling_out_univariate", "singling out", 1, 40, 1, 40), fail_level=0.01)
    results = [leak, clean_link, unsure]
    risks = risk_decisions(results)
    assert risks["membership"].status == "fail" and risks["membership"].failing == ("ims",)
    assert risks["linkability"].status == "pass"
    assert risks["singling out"].status == "lacking evidence"
    blocked = blocked_by(results)
    assert blocked[0] == "ims" and len(blocked) == 2
    prefix = "singling out: lacking evidence (singling_out_univariate: accept its bound with accepted_excess"
    assert blocked[1].startswith(prefix) and "or evaluate more rows (about " in blocked[1]
    needed = blocked[1].split("(about ", 1)[1].split()[0]
    assert int(needed.replace(",", "")) > 40
    # a policy that requires linkability only: the other risks inform
    assert pol.verdict(results, ["linkability"]) is Status.WARN
    assert pol.verdict(results, ["linkability", "membership"]) is Status.FAIL
    with pytest.raises(Exception, match="unknown risk"):
        pol.from_mapping({"required_risks": ["membership", "gossip"], "metrics": {"crp": {"threshold": 0.1}}})


def test_levels_are_bonferroni_over_the_gates_and_booleans_are_refused() -> None:
    plan = pol.resolve("standard")
    # weighted Bonferroni: 7 gates, exposed_records of weight 2 (the share crp and ims held)
    assert len(plan.gating) == 7 and plan.pass_level == pytest.approx(0.05)
    assert plan.fail_level == pytest.approx(0.05 / 8) and plan.fail_level_of("linkability") == pytest.approx(
        0.05 / 8
    )
    assert plan.fail_level_of("exposed_records") == pytest.approx(0.05 * 2 / 8)
    assert sum(plan.fail_level_of(m) for m in plan.gating) == pytest.approx(0.05)
    for bad in ({"false_alarm": True}, {"false_alarm": 0.6}, {"assurance": 0.4}):
        with pytest.raises(dp.PolicyError):
            pol.from_mapping({**bad, "metrics": {"crp": {"threshold": 0.1}}})


def test_a_boolean_threshold_is_refused_not_read_as_one(tmp_path) -> None:
    """Issue 31 case 13: `threshold: true` was read as 1.0, a gate that can never fail."""
    f = tmp_path / "p.yaml"
    f.write_text(signed_yaml("metrics:\n  crp: {threshold: 0.5, severity: ERROR}\n").replace("0.5", "true"))
    with pytest.raises(dp.PolicyError, match="not true/false"):
        dp.load_policy(f)
    assert (
        dp.load_policy(f.write_text(signed_yaml("metrics:\n  crp: {threshold: 1}\n")) and f)
        .entry("crp")
        .threshold
        == 1.0
    )


def test_an_advisory_that_cannot_decide_is_no_warning() -> None:
    """Issue 46 (3): clean releases read WARN because an advisory figure with evidence (crp, ims, gtcap
    informing) was inconclusive on its own noise. It informs: undecided, it is no warning; a gate that
    cannot decide still lacks evidence."""
    weak = _ev("crp", "re-identification", 1, 40, 1, 40)
    advisory = pol.judge(MetricPolicy(threshold=0.05, severity="WARN"), weak, fail_level=0.00625)
    gate = pol.judge(MetricPolicy(threshold=0.05, severity="ERROR"), weak, fail_level=0.00625)
    assert advisory.status is gate.status is Status.INCONCLUSIVE
    assert advisory.passed and not gate.passed and gate.blocks
    ok = pol.judge(MetricPolicy(threshold=0.1), _ev("linkability", "linkability", 10, 1000, 10, 1000))
    assert pol.verdict([ok, advisory], ["linkability"]) is Status.PASS
