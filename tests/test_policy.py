"""Release policy: presets, YAML errors with line numbers, statuses and the verdict."""

from __future__ import annotations

import pytest

import dagster_privacy as dp
from dagster_privacy import policy as pol
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


def _r(mid: str, value: float | None, status: Status = Status.PASS, ci=None) -> MetricResult:
    return MetricResult(id=mid, value=value, status=status, ci=ci)


def test_statuses_and_verdict() -> None:
    p = pol.from_mapping({"metrics": {
        "crp": {"threshold": 0.1},
        "dcr": {"threshold": 0.5, "severity": "WARN"},
        "mdcr": {"threshold": 0.3, "on": "ci_upper"},
        "nndr": {"optional": True, "severity": "WARN"},
    }})
    ok = [pol.apply(p, _r("crp", 0.1)), pol.apply(p, _r("dcr", 0.2)), pol.apply(p, _r("mdcr", 0.2, ci=(0.1, 0.29)))]
    assert [r.status for r in ok] == [Status.PASS] * 3 and pol.verdict(p, ok) is Status.PASS

    warn = pol.apply(p, _r("dcr", 0.6))
    assert warn.status is Status.WARN and warn.reason == "value 0.6 > threshold 0.5"
    assert pol.verdict(p, [*ok, warn]) is Status.WARN

    upper = pol.apply(p, _r("mdcr", 0.2, ci=(0.1, 0.35)))  # value under, CI upper bound over
    assert upper.status is Status.FAIL and upper.reason == "CI upper bound 0.35 > threshold 0.3"
    assert pol.verdict(p, [*ok, upper]) is Status.FAIL

    errored = pol.apply(p, _r("crp", None, Status.ERROR))
    assert errored.status is Status.ERROR and pol.verdict(p, [errored]) is Status.FAIL

    na_required = pol.apply(p, _r("crp", None, Status.NOT_APPLICABLE))
    assert pol.verdict(p, [na_required]) is Status.FAIL  # a gate that could not run has not passed
    na_optional = pol.apply(p, _r("nndr", None, Status.NOT_APPLICABLE))
    assert pol.verdict(p, [na_optional]) is Status.PASS

    nan_upper = pol.apply(p, _r("mdcr", 0.2, ci=(0.1, float("nan"))))  # issue 18 case 6: NaN ≯ threshold
    assert nan_upper.status is Status.ERROR and pol.verdict(p, [nan_upper]) is Status.FAIL


def test_a_metric_that_raises_is_an_error_not_zero() -> None:
    import polars as pl

    real = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    ev = dp.evaluate(real, real, metrics=["crp"],
                     policy={"metrics": {"crp": {"threshold": 0.1, "params": {"bogus": 1}}}}, progress=False)
    assert ev["crp"].status is Status.ERROR and ev["crp"].value is None
    assert "unknown parameter" in ev["crp"].reason and ev.verdict is Status.FAIL


def test_an_exception_inside_a_metric_becomes_an_error_result_with_its_reason() -> None:
    import polars as pl

    from dagster_privacy.registry import _REGISTRY, metric

    @metric("_boom", family="distance", source="test", risk="test")
    def boom(ctx) -> MetricResult:
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
    f.write_text("metrics:\n  crp: {threshold: 0.1, on: ci_upper}\n  dcr:\n    on: value\n    optional: true\n"
                 "    threshold: 0.5\n")
    p = dp.load_policy(f)
    assert p.metrics["crp"].on == "ci_upper" and p.metrics["dcr"].optional is True
