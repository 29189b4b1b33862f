"""No knob lowers protection unsigned (issue 54, item 1): every field of a policy that passes a release
more easily than its preset is a loosening; each needs a waiver with a reason, which forces a sign-off
and shows in the report's differences; a field the classification does not know fails this test."""

from __future__ import annotations

import pytest
from gates import STANDARD_GATES, covering, signed

import dagster_privacy as dp
from dagster_privacy.decision import loosening as lo
from dagster_privacy.decision import policy as pol
from dagster_privacy.decision.judge import judge
from dagster_privacy.metrics.metric_policy import MetricPolicy
from dagster_privacy.report.policy_diff import differences
from dagster_privacy.results import MetricResult, Risk, Status

WHY = "accepted by the data owner for this table, see ticket 12"


def test_every_field_of_the_policy_model_is_classified() -> None:
    assert set(pol.Policy.model_fields) == set(lo.POLICY_FIELDS), "classify the new field in loosening.py"
    assert set(MetricPolicy.model_fields) == set(lo.ENTRY_FIELDS), "classify the new field in loosening.py"
    assert set(lo.POLICY_FIELDS.values()) <= {"neutral", "entries", "off", "lower", "higher", "on", "signed",
                                              "any"}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "path"),
    [  # the attacks, each alone: every gate, threshold and severity as in standard
        ({"false_alarm": 0.000001}, "false_alarm"),
        ({"false_alarm": 0.45}, "false_alarm"),  # review: exposed_records passes on a smaller floor
        ({"accepted_floor_people": 100000}, "accepted_floor_people"),
        ({"metrics": {"exposed_records": {"weight": 0.01}}}, "metrics.exposed_records.weight"),
        ({"every": {"threshold": 0.99}}, "metrics.linkability.threshold"),
        ({"assurance": 0.6}, "assurance"),
        ({"accepted_floor_share": 0.5}, "accepted_floor_share"),
        ({"accepted_excess": 0.9}, "accepted_excess"),
        ({"metrics": {"dcr": {"on": "value"}}}, None),  # standard gates dcr on its value already
        ({"metrics": {"linkability": {"severity": "WARN"}}}, "metrics.linkability.severity"),
        ({"metrics": {"linkability": {"optional": True}}}, "metrics.linkability.optional"),
        ({"metrics": {"crp": {"optional": True, "threshold": 0.9}}}, None),  # crp informs: nothing to loosen
        ({"metrics": {"crp": {"weight": 10.0}}}, None),  # crp informs in standard: no gate's level moves
        ({"metrics": {"exposed_records": {"params": {"radius": 3}}}}, "metrics.exposed_records.params"),
        ({"metrics": {"linkability": {"weight": 10.0}}}, "metrics.linkability.weight"),  # the others' level
    ],
)
def test_a_loosening_needs_its_waiver_which_forces_a_sign_off(change, path) -> None:
    policy = {"preset": "standard", **change}
    if path is None:
        assert pol.from_mapping(policy).loosenings() == []
        return
    with pytest.raises(dp.PolicyError, match="passes releases more easily"):
        pol.from_mapping(policy)
    every = "every" in policy  # one reason for one field of every entry
    signed = pol.from_mapping({**policy, "waivers": {"metrics.*.threshold" if every else path: WHY}})
    assert signed.require_signoff is True
    assert path in [x.path for x in signed.loosenings()]
    shown = path.removeprefix("metrics.")  # a threshold's and a severity's lines name the metric first
    assert any(
        shown.replace(".threshold", ": threshold").replace(".severity", ": ERROR") in line or path in line
        for line in differences(signed)[1]
    )  # fmt: skip  (the report says what changed)


def test_tightening_needs_no_waiver_and_an_idle_waiver_is_refused() -> None:
    tight = pol.from_mapping({"preset": "standard", "assurance": 0.99,
                              "accepted_floor_people": 10,
                              "metrics": {"crp": {"threshold": 0.01}}})  # fmt: skip
    assert tight.loosenings() == [] and tight.require_signoff is False
    with pytest.raises(dp.PolicyError, match="does not loosen it"):
        pol.from_mapping({"preset": "standard", "waivers": {"false_alarm": WHY}})


def test_a_preset_is_compared_with_itself_and_strict_cannot_drop_its_sign_off() -> None:
    for name in pol.PRESET_NAMES:
        assert pol.load_policy(name).loosenings() == []
    with pytest.raises(dp.PolicyError, match="cannot drop it"):
        pol.from_mapping({"preset": "strict", "require_signoff": False})
    # strict's tighter thresholds are its base: back to standard's is a loosening there
    with pytest.raises(dp.PolicyError, match="metrics.crp.threshold"):
        pol.from_mapping({"preset": "strict", "metrics": {"crp": {"threshold": 0.05}}})


def test_a_policy_without_a_preset_is_compared_with_standard() -> None:
    """Each gate of standard it leaves out loosens (issue 54: a policy naming the cheapest gate of each
    risk and no preset passed a release standard fails, unsigned); each gate it names is compared with
    standard's entry of the same id, and its levels with standard's."""
    only = {"metrics": {"linkability": {"threshold": 0.1, "severity": "ERROR"}}}
    with pytest.raises(dp.PolicyError, match="metrics.dcr_percentile a gate → left out"):
        pol.from_mapping(only)
    left_out = {x.path for x in pol.from_mapping(signed(only)).loosenings()}
    assert left_out == {f"metrics.{m}" for m in STANDARD_GATES if m != "linkability"}
    assert pol.from_mapping(covering({})).loosenings() == []  # standard's gates at standard's entries
    count = covering({"metrics": {"exposed_records": {"threshold": 0.0, "severity": "ERROR"}}})
    with pytest.raises(dp.PolicyError, match="exposed_records.weight"):  # weight 1: a lower level
        pol.from_mapping(count)
    with pytest.raises(dp.PolicyError, match="false_alarm"):
        pol.from_mapping(covering({"false_alarm": 0.01}))
    with pytest.raises(dp.PolicyError, match="exposed_records.threshold"):
        pol.from_mapping(covering({"metrics": {"exposed_records": {"threshold": 0.2, "weight": 2.0}}}))
    dropped = {"preset": "standard", "metrics": {}}
    assert pol.from_mapping(dropped).loosenings() == []  # nothing dropped: the preset's entries stay
    with pytest.raises(ValueError, match="a gate → left out"):
        pol.Policy.model_validate({**pol.preset_policy("standard").model_dump(), "preset": "standard",
                                   "metrics": {}})  # fmt: skip


def test_the_test_policies_gates_are_standards() -> None:
    """tests/support/gates.py copies standard's gates: the copy is what the preset gates."""
    std = pol.load_policy("standard")
    gates = {m: e for m, e in std.metrics.items() if e.blocks_on_failure}
    assert set(gates) == set(STANDARD_GATES)
    for m, e in STANDARD_GATES.items():
        assert gates[m].threshold == e["threshold"] and gates[m].weight == e.get("weight", 1.0), m


def _probe(share: float, n: int) -> MetricResult:
    """An attack gate's result: ``share`` of n training targets hit, 0.05 of n control targets."""
    hits_t, hits_c = round(share * n), round(0.05 * n)
    return MetricResult(id="probe", value=share, risk=Risk.SINGLING_OUT,
                        evidence=[{"k_t": hits_t, "n_t": n, "k_c": hits_c, "n_c": n}])  # fmt: skip


@pytest.mark.parametrize(("field", "base", "looser"), [("fail_level", 0.007, 1e-7), ("pass_level", 0.05, 0.4),
                                                       ("accepted_excess", 0.25, 0.9)])  # fmt: skip
def test_the_direction_of_each_level_is_the_judges(field, base, looser) -> None:
    """The classification agrees with the decision rule: the looser value never fails what the base
    passes, and passes some release the base does not (false_alarm and weight act through fail_level,
    assurance through pass_level)."""
    entry = MetricPolicy(threshold=0.1)
    kw = {"fail_level": 0.007, "pass_level": 0.05, "accepted_excess": 0.25}
    rank = {Status.PASS: 0, Status.INCONCLUSIVE: 1, Status.FAIL: 2}
    moved = 0
    for n in (50, 200, 1000):
        for share in (0.1, 0.15, 0.2, 0.25, 0.3, 0.4):
            a = judge(entry, _probe(share, n), **kw).status
            b = judge(entry, _probe(share, n), **{**kw, field: looser}).status
            assert rank[b] <= rank[a], (n, share, a, b)
            moved += rank[b] < rank[a]
    assert moved > 0


def test_gates_added_to_dilute_the_preset_s_levels_are_a_loosening() -> None:
    """Review: promoting the 24 informing metrics to ERROR at threshold 1.0 cut exposed_records' level
    4× and published a leak standard fails, with no waiver."""
    informing = [m for m, e in pol.preset_policy("standard").metrics.items() if not e.blocks_on_failure]
    gate = {"severity": "ERROR", "threshold": 1.0, "optional": True}
    diluted = {"preset": "standard", "metrics": {m: gate for m in informing}}
    with pytest.raises(dp.PolicyError, match="severity .* a gate taking level"):
        pol.from_mapping(diluted)


def test_an_object_changed_after_loading_is_validated_again() -> None:
    p = pol.load_policy("standard")
    p.false_alarm = 1e-6  # pydantic does not validate an assignment
    with pytest.raises(dp.PolicyError, match="false_alarm"):
        pol.load_policy(p)


def test_a_metric_subset_that_leaves_out_gates_asks_for_a_sign_off() -> None:
    from dagster_privacy.calibration import leaky_split
    from dagster_privacy.demo import load_demo

    sp = leaky_split(load_demo().head(1200), 0.0, seed=0)
    ev = dp.evaluate(sp.train, sp.synthetic, holdout=sp.control, metrics=["linkability"], progress=False)
    assert "exposed_records" in ev.waivers["metrics not run"] and ev.verdict is not dp.Status.PASS
    whole = {m for m, e in pol.load_policy("standard").metrics.items() if e.blocks_on_failure}
    assert all(m in ev.waivers["metrics not run"] for m in whole - {"linkability"})


def test_a_plan_built_by_hand_is_refused() -> None:
    """Review: a plan whose entries are not its policy's published a leak under standard's name."""
    import dataclasses

    import polars as pl

    from dagster_privacy.evaluate import evaluate_plan

    plan = dp.resolve("standard")
    bad = dataclasses.replace(plan, entries={**plan.entries, "exposed_records": MetricPolicy(threshold=1.0)})
    frame = pl.DataFrame({"a": [1, 2, 3]})
    with pytest.raises(dp.PolicyError, match="not its policy's"):
        evaluate_plan(bad, frame, frame, frame)


def test_raising_false_alarm_passes_the_count_on_a_smaller_floor() -> None:
    """Review: false_alarm 0.45 passed a release standard fails, the count's floor taken at its level."""
    from dagster_privacy.decision.exposure_count import decide

    part = [{"part": 0, "k_t": 35, "n_t": 700, "k_c": 15, "n_c": 300, "weight": 1, "registered": 1}]
    assert decide(part, 0.0, 0.05 * 2 / 8, 0.05, 50)[0] == "inconclusive"
    assert decide(part, 0.0, 0.45 * 2 / 8, 0.05, 50)[0] == "pass"  # the direction the rule guards
    with pytest.raises(dp.PolicyError, match="false_alarm"):
        pol.from_mapping({"preset": "standard", "false_alarm": 0.45})


def test_a_preset_is_a_base_only_with_its_waivers() -> None:
    """A reviewer's attack (issue 54): a Policy object naming report-only as its preset, without the four
    risk waivers that make report-only safe, compared every gate with report-only's (none) and passed 60
    verbatim copies at threshold 0.99, unsigned. Without its preset's waivers a policy is compared with
    standard."""
    report_only = pol.load_policy("report-only")
    assert report_only.base_name() == "report-only" and report_only.require_signoff
    forged = pol.load_policy("standard").model_copy(update={"preset": "report-only", "require_signoff": True})
    forged.metrics["exposed_records"] = forged.metrics["exposed_records"].model_copy(
        update={"threshold": 0.99}
    )
    assert forged.base_name() == "standard"
    with pytest.raises(dp.PolicyError, match="metrics.exposed_records.threshold 0 → 0.99") as refused:
        pol.load_policy(forged)
    assert "preset report-only is a base only with its waivers" in str(refused.value)
    built = {m: {**e, "threshold": 0.99} for m, e in STANDARD_GATES.items()}
    with pytest.raises(ValueError, match="passes releases more easily than preset standard"):
        pol.Policy(preset="report-only", require_signoff=True, metrics=built)


def test_a_plan_is_judged_by_the_policy_checked() -> None:
    """A reviewer's attack (issue 54): evaluate_plan checked a copy of the plan's policy and judged with
    the object itself, so a subclass answering other values than its dump passed 60 verbatim copies."""
    import dataclasses
    from typing import ClassVar

    import polars as pl

    from dagster_privacy.calibration import leaky_split
    from dagster_privacy.demo import load_demo
    from dagster_privacy.evaluate import evaluate_plan

    class Forged(pol.Policy):
        armed: ClassVar[bool] = False

        def __getattribute__(self, name: str):  # noqa: ANN204
            if type(self).armed and name == "false_alarm":
                return 1e-13
            return super().__getattribute__(name)

    sp = leaky_split(load_demo().head(3000), 0.0, seed=0)
    syn = pl.concat([sp.synthetic, sp.train.filter(~sp.train.is_duplicated()).head(60)])
    plan = pol.resolve("standard", ["exposed_records"])
    forged = Forged.model_validate(plan.policy.model_dump(mode="json"))
    Forged.armed = True
    try:
        ev = evaluate_plan(dataclasses.replace(plan, policy=forged), sp.train, syn, sp.control)
    finally:
        Forged.armed = False
    assert ev.levels["false_alarm"] == 0.05 and ev["exposed_records"].status is dp.Status.FAIL
