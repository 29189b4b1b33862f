"""A policy never drops protection unnoticed (issue 44, breaks 2 and 5): the verdict requires all four
risks unless a waiver names one with its reason; a waiver forces a sign-off and shows everywhere; a
required risk no gate assessed blocks; the report's sentences follow the one verdict."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from gates import OTHER_RISKS, STANDARD_GATES, signed

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.cli import cli
from dagster_privacy.decision import policy as pol
from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import required_check_names
from dagster_privacy.report.markdown import markdown_summary
from dagster_privacy.report.summary import next_steps, verdict_sentence

RISK_CHECKS = [f"privacy_risk_{r}" for r in ("singling_out", "linkability", "inference", "membership")]
WAIVE_THREE = {
    r: "assessed by the upstream pipeline's own review" for r in ("singling out", "linkability", "inference")
}


@pytest.fixture(scope="module")
def leaky():
    return leaky_split(load_demo().head(1200), 0.3, seed=0)


@pytest.fixture(scope="module")
def clean():
    return leaky_split(load_demo().head(1200), 0.0, seed=0)


def test_dropping_a_risk_without_a_waiver_is_refused() -> None:
    with pytest.raises(
        dp.PolicyError, match="leaves out singling out, linkability, inference, membership without a waiver"
    ):
        pol.from_mapping({"preset": "standard", "required_risks": []})
    with pytest.raises(dp.PolicyError, match="needs a reason of at least 10"):
        pol.from_mapping({"preset": "standard", "waivers": {"membership": "no"}})
    with pytest.raises(dp.PolicyError, match="unknown risk"):
        pol.from_mapping({"preset": "standard", "waivers": {"gossip": "a long enough reason here"}})
    with pytest.raises(dp.PolicyError, match="both required and waived"):
        pol.from_mapping({"preset": "standard", "required_risks": ["membership"],
                          "waivers": {"membership": "a long enough reason here"}})  # fmt: skip


def test_a_waiver_forces_a_sign_off_and_leaves_the_risk_out() -> None:
    p = pol.from_mapping({"preset": "standard", "require_signoff": False, "waivers": WAIVE_THREE})
    assert p.require_signoff is True and p.required == ["membership"]
    assert required_check_names(p, schema_gate=False) == ["privacy_risk_membership", "privacy_signoff"]
    # a custom policy gating ims alone requires every risk's check: three of them cannot pass
    only_ims = signed(
        {"metrics": {"ims": {"threshold": 0.02, "severity": "ERROR"}}}
    )  # gates left out: signed
    assert required_check_names(only_ims, schema_gate=False) == [*RISK_CHECKS, "privacy_signoff"]


def test_a_policy_of_cheap_gates_without_a_preset_needs_a_waiver_per_gate_left_out() -> None:
    """Issue 54, the route left open: no preset, the cheapest gate of each risk at standard's entries
    (crp gating membership) read a release with 60 unique training records copied verbatim as PASS with
    no waiver; standard fails it on exposed_records. Each standard gate left out is a loosening: the
    policy is refused unsigned, and signed it reads WARN (a sign-off), never PASS."""
    import polars as pl

    sp = leaky_split(load_demo(), 0.0, seed=0)
    unique = sp.train.filter(~sp.train.is_duplicated()).head(60)
    syn = pl.concat([sp.synthetic, unique])
    narrow = {"metrics": {"crp": {"threshold": 0.05, "severity": "ERROR"}, **OTHER_RISKS}}
    with pytest.raises(dp.PolicyError, match="metrics.dcr_percentile a gate → left out"):
        dp.evaluate(sp.train, syn, holdout=sp.control, policy=narrow, progress=False)
    ev = dp.evaluate(sp.train, syn, holdout=sp.control, policy=signed(narrow), progress=False)
    left_out = {"dcr_percentile", "exposed_records", "membership_inference", "singling_out_multivariate"}
    assert {f"metrics.{m}" for m in left_out} <= set(ev.waivers) and ev.verdict is dp.Status.WARN
    std = dp.evaluate(sp.train, syn, holdout=sp.control, policy="standard", metrics=list(STANDARD_GATES),
                      progress=False)  # fmt: skip
    assert std.verdict is dp.Status.FAIL and "exposed_records" in std.blocked_by


def test_required_risks_empty_no_longer_publishes_a_thirty_percent_copy(leaky) -> None:
    """The break as found: required_risks [] gave warn, blocked_by [] on a 30 % copy release."""
    waived = {"preset": "standard", "waivers": {r: "a first look, no publication intended" for r in
              ("singling out", "linkability", "inference", "membership")}}  # fmt: skip
    ev = dp.evaluate(leaky.train, leaky.synthetic, holdout=leaky.control, policy=waived, progress=False,
                     metrics=["exposed_records", "linkability"])  # fmt: skip
    # issue 54: the subset of the policy's gates reads as one more waiver
    assert ev.verdict is dp.Status.WARN and ev.blocked_by == []
    assert set(ev.waivers) == {*waived["waivers"], "metrics not run"}
    doc = json.loads(ev.to_json())
    assert doc["waivers"].items() >= waived["waivers"].items() and doc["verdict"] == "warn"
    sentence = verdict_sentence(ev, "r1")
    assert "waives" in sentence and "signs off" in sentence and "passed its gates;" not in sentence
    assert "Do not publish" not in next_steps(ev, signoff=True)
    assert dp.Evaluation.from_json(ev.to_json()).verdict is dp.Status.WARN  # the JSON re-reads


def test_a_subset_that_leaves_a_risk_unassessed_fails(leaky, tmp_path) -> None:
    leaky.train.write_csv(tmp_path / "t.csv")
    leaky.synthetic.write_csv(tmp_path / "s.csv")
    leaky.control.write_csv(tmp_path / "h.csv")
    res = CliRunner().invoke(cli, ["evaluate", "--real", str(tmp_path / "t.csv"), "--synthetic",
                                   str(tmp_path / "s.csv"), "--holdout", str(tmp_path / "h.csv"),
                                   "--metrics", "dcr"])  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "verdict: FAIL" in res.output
    assert "not assessed: singling out, linkability, inference, membership" in res.output
    # report-only waives every risk: it reports, it does not fail for what it does not assess
    args = ["evaluate", "--real", str(tmp_path / "t.csv"), "--synthetic", str(tmp_path / "s.csv")]
    ro = CliRunner().invoke(cli, [*args, "--metrics", "dcr", "--policy", "report-only"])
    # report-only waives every risk, so it requires a sign-off: the gates pass, awaiting it (exit 4)
    assert ro.exit_code == 4 and "waived by the policy" in ro.output, ro.output


@pytest.mark.parametrize("kind", ["clean", "leaky", "subset", "waived"])
def test_every_sentence_of_the_summary_follows_the_verdict(kind, clean, leaky) -> None:
    split = leaky if kind == "leaky" else clean
    metrics = ["exposed_records", "dcr", *OTHER_RISKS] if kind != "subset" else ["dcr"]
    policy = {"preset": "standard", "waivers": WAIVE_THREE} if kind == "waived" else "standard"
    ev = dp.evaluate(split.train, split.synthetic, holdout=split.control, metrics=metrics, policy=policy,
                     progress=False)  # fmt: skip
    head, nxt = verdict_sentence(ev, "r1"), next_steps(ev, signoff=False)
    md = markdown_summary(ev, release_id="r1")
    blocked = ev.verdict is dp.Status.FAIL
    assert ("is blocked" in head) is blocked and ("Do not publish" in nxt) is blocked
    assert ("passed" in head) is not blocked and ("Do not publish" in md) is blocked
    # clean: WARN, a subset of the policy's gates asks for a sign-off (issue 54)
    expected = {"clean": dp.Status.WARN, "leaky": dp.Status.FAIL, "subset": dp.Status.FAIL,
                "waived": dp.Status.WARN}  # fmt: skip
    assert ev.verdict is expected[kind], ev.blocked_by


def test_the_check_metadata_and_the_risk_checks_say_not_assessed(leaky) -> None:
    import dagster as dg

    from dagster_privacy.pipeline import build_privacy_checks

    only_ims = signed({"metrics": {"ims": {"threshold": 0.02, "severity": "ERROR"}}})
    asset = dg.AssetSpec("synthetic_table")
    (checks,) = build_privacy_checks(asset=asset, policy=only_ims, real="real", holdout="holdout")
    names = {s.name for s in checks.check_specs}
    assert set(RISK_CHECKS) <= names
    blocking = {s.name for s in checks.check_specs if s.blocking}
    assert set(RISK_CHECKS) <= blocking


@pytest.mark.parametrize(
    "edit",
    [
        {m: {"threshold": 1.0} for m in ("exposed_records", "dcr_percentile", *OTHER_RISKS)},
        {"nsnd": {"threshold": 1.0, "severity": "ERROR"}, "exposed_records": {"severity": "WARN"},
         "dcr_percentile": {"severity": "WARN"}},
        {**{m: {"optional": True, "params": {"n_attacks": 20}} for m in OTHER_RISKS},
         "mir": {"threshold": 0.3, "severity": "ERROR"}, "exposed_records": {"severity": "WARN"},
         "dcr_percentile": {"severity": "WARN"}},
    ],
    ids=["thresholds-that-cannot-fail", "a-saturating-proxy-alone", "optional-undecided-attacks"],
)  # fmt: skip
def test_a_gate_that_cannot_fail_assesses_nothing(edit, leaky) -> None:
    """Second review: a policy whose gates cannot fail read a 30 % copy release as pass, no waiver."""
    ids = sorted({"exposed_records", "dcr_percentile", *OTHER_RISKS, *edit})
    policy = signed({"preset": "standard", "metrics": edit})  # each loosening waived: still no pass
    ev = dp.evaluate(leaky.train, leaky.synthetic, holdout=leaky.control, metrics=ids, policy=policy,
                     progress=False)  # fmt: skip
    assert ev.verdict is dp.Status.FAIL, (ev.blocked_by, {r.id: r.status for r in ev.results})
    assert any(b.startswith("not assessed") for b in ev.blocked_by), ev.blocked_by


def test_levels_a_bound_cannot_be_computed_at_are_refused() -> None:
    """Second review: false_alarm 1e-12 or a weight of 1e-300 crashed the judging (StatisticsError)."""
    for bad in ({"false_alarm": 1e-12}, {"metrics": {"crp": {"threshold": 0.1, "weight": 1e-300}}}):
        with pytest.raises(dp.PolicyError):
            pol.from_mapping({"preset": "standard", **bad})
