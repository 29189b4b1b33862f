"""The registry: a metric is added in one module. A toy metric, declared in one file outside the
package, shows up in the registry, the CLI's `metrics` listing, the standard policy (its default entry)
and the common tests (its expectation), with nothing else edited."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dagster_privacy as dp
from dagster_privacy.metrics.registration import Expect, metric

ROOT = Path(__file__).parents[2]

TOY = textwrap.dedent('''
    """A toy metric: the share of synthetic rows whose content is a real row's."""
    import numpy as np

    from dagster_privacy import Expect, Measurement, Risk, metric


    @metric("toy_copies", family="simulation", source="toy", risk=Risk.REIDENTIFICATION,
            default={"threshold": 0.05, "severity": "ERROR"}, expect=Expect(copy_min=0.999, indep_max=0.02))
    def toy_copies(ctx) -> Measurement:
        """Toy: synthetic rows that copy a real row."""
        hit = np.isin(ctx.row_hashes("synthetic"), ctx.row_hashes("real"))
        return Measurement(value=float(hit.mean()), flagged=np.nonzero(hit)[0])
''')

SEEN = textwrap.dedent("""
    import toy_metric  # noqa: F401  (the one module)
    from click.testing import CliRunner

    import dagster_privacy as dp
    from dagster_privacy.cli import cli

    assert "toy_copies" in dp.registry(), "registry"
    listing = CliRunner().invoke(cli, ["metrics"]).output
    assert "toy_copies" in listing, "CLI listing"
    entry = dp.load_policy("standard").entry("toy_copies")
    assert entry.threshold == 0.05 and entry.severity.value == "ERROR", "default policy"
    print("seen")
""")


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("toy")
    (d / "toy_metric.py").write_text(TOY)
    return d


def _env(toy_dir: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(toy_dir), os.environ.get("PYTHONPATH", "")])}


def test_a_toy_metric_in_one_module_is_in_registry_cli_and_default_policy(toy_dir: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SEEN], env=_env(toy_dir), capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "seen" in out.stdout, out.stderr[-2000:]


def test_a_toy_metric_in_one_module_runs_the_common_tests(toy_dir: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "toy_metric",
            "-k",
            "toy_copies",
            str(ROOT / "tests" / "metrics" / "test_common.py"),
        ],
        env=_env(toy_dir),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:]
    # the copy, independent, unit-interval, row-order and column-order tests, each on toy_copies
    assert " passed" in out.stdout and "toy_copies" not in out.stdout.split("passed")[-1]
    n = int(out.stdout.strip().splitlines()[-1].split(" passed")[0].split()[-1])
    assert n >= 5, out.stdout[-500:]


def test_a_metric_must_name_its_risk_and_cannot_register_twice() -> None:
    with pytest.raises(TypeError, match="risk must be"):
        metric(
            "_toy_bad",
            family="distance",
            source="t",
            risk="re-identification",  # type: ignore[arg-type]
            default={"threshold": 0.1, "severity": "ERROR"},
            expect=Expect(None, None),
        )(lambda ctx: None)
    with pytest.raises(ValueError, match="registered twice"):
        metric(
            "crp",
            family="simulation",
            source="t",
            risk=dp.Risk.REIDENTIFICATION,
            default={"threshold": 0.1, "severity": "ERROR"},
            expect=Expect(None, None),
        )(lambda ctx: None)
    assert "_toy_bad" not in dp.registry()


def test_every_default_entry_is_a_valid_policy_entry_and_the_standard_preset_is_the_defaults() -> None:
    from dagster_privacy.decision.policy import MetricPolicy

    std = dp.load_policy("standard")
    for mid, spec in dp.registry().items():
        assert std.entry(mid) == MetricPolicy.model_validate(spec.default), mid
        assert isinstance(spec.risk, dp.Risk) and isinstance(spec.expect, Expect)


def test_a_bad_default_entry_is_refused_when_the_metric_registers() -> None:
    with pytest.raises(ValueError, match="_toy_gate.*default entry.*threshold"):
        metric("_toy_gate", family="distance", source="t", risk=dp.Risk.REIDENTIFICATION,
               default={"severity": "ERROR"}, expect=Expect(None, None))(lambda ctx: None)  # fmt: skip
    assert "_toy_gate" not in dp.registry()
    dp.load_policy("standard")  # every preset still loads


def test_the_presets_resolve_to_the_policies_of_version_0_1_plus_the_new_metrics() -> None:
    """sha256 of each preset as 0.1.0 wrote it out in full (before presets listed overrides only), over
    the 30 ids of 0.1.0; metrics added since join with their own default entries. Issue 32 changed what
    a gate decides on (the excess over the holdout, with bounds at the policy's levels): the gates whose
    thresholds it re-derived, and the policy's new fields, are put back as 0.1.0 had them, so that any
    other change to a preset still shows here."""
    import hashlib
    import json

    added = {"membership_inference", "exposed_records"}
    new_fields = ("false_alarm", "assurance", "required_risks", "waivers", "accepted_floor_people",
                  "accepted_floor_share", "accepted_excess", "accept_unrun", "lineage_budget")  # fmt: skip
    re_derived = {  # issue 32: (standard, strict) entries of 0.1.0
        "crp": ({"threshold": 0.05}, {"threshold": 0.01}),
        "ims": ({"threshold": 0.05, "on": "ci_upper"}, {"threshold": 0.02, "on": "ci_upper"}),
        "dcr_percentile": ({"threshold": 0.05, "on": "ci_upper"}, {"threshold": 0.02, "on": "ci_upper"}),
        "inference_distance": ({"threshold": 0.25}, {"threshold": 0.2}),
        "singling_out_multivariate": ({"threshold": 0.1}, {"threshold": 0.05}),
    }

    def of_0_1(name: str) -> str:
        d = dp.load_policy(name).model_dump(mode="json")
        for f in new_fields:
            d.pop(f)
        d["metrics"] = {m: {k: v for k, v in e.items() if k != "weight"}  # issue 45's entry field
                        for m, e in d["metrics"].items() if m not in added}  # fmt: skip
        if name != "report-only":
            for m, (std, strict) in re_derived.items():
                d["metrics"][m].update(std if name == "standard" else strict)
        if name == "standard":  # issue 45: the exact-match shares inform; exposed_records counts people
            for m in ("crp", "ims"):
                d["metrics"][m]["severity"] = "ERROR"
            for m in ("detection_mlp", "mir"):  # issue 46: the real-vs-synthetic classifiers inform
                d["metrics"][m]["threshold"] = 0.5
        if name == "report-only":  # issue 44: it waives every risk, which forces a sign-off
            d["require_signoff"] = False
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()

    assert of_0_1("standard") == "febecb3bf75657633ce35c7c33120361ebbadb22f007a02ac93a8ff6403a38c0"
    assert of_0_1("strict") == "e37511883f03b13f87b14b5082951971f731a6b59bb488b186c229b8016df0a1"
    assert of_0_1("report-only") == "5153c6118474e5777af22db39f94ea9306f43eb53cd31e8c3be46bbd0ff1e396"
    strict = dp.load_policy("strict")
    assert all(e.severity is dp.Severity.ERROR and e.threshold is not None for e in strict.metrics.values())
    assert [m for m, e in strict.metrics.items() if e.optional] == ["hidden_rate"]  # needs the mapping g
    assert dp.load_policy("standard").entry("membership_inference").severity is dp.Severity.ERROR
