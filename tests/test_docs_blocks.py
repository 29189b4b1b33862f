"""Every fenced block of README.md and docs/ is run as printed or checked against the code (issue 46, 2).

The catalogue below names, for each block, the test that runs or checks it; a block added to a document
without an entry here fails the first test. The blocks that need no Dagster run are checked in this file;
the walkthrough commands (the demo, `dg launch`, `dagster dev`, the console, withdraw, calibrate) run in
tests/pipeline/test_walkthroughs.py and tests/calibration/test_calibration_walkthrough.py."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import polars as pl
import pytest
import yaml
from docs_blocks import ROOT, block, blocks, clean_env, sh, synopsis

import dagster_privacy as dp
from dagster_privacy.calibration import leaky_split
from dagster_privacy.demo import load_demo

WALK = "tests/pipeline/test_walkthroughs.py"
CAL = "tests/calibration/test_calibration_walkthrough.py"
CAL_DEMO = "tests/calibration/test_calibration_demo_walkthrough.py::test_calibrate_demo_commands_as_printed"
HERE = "tests/test_docs_blocks.py"
LINEAGE = "tests/lineage/test_lineage_cli.py"
RAY = "tests/pipeline/test_ray_check.py::test_the_check_on_ray_records_the_figures_of_the_in_process_check"
SNIPPETS = (
    "tests/pipeline/test_docs_snippets.py::test_the_own_assets_example_publishes_a_clean_release_as_printed"
)
CATALOGUE: dict[tuple[str, int], str] = {
    ("README.md", 0): f"{WALK}::test_the_install_block_is_what_ci_runs_and_the_demo_runs",
    ("README.md", 1): f"{HERE}::test_the_readme_python_block_evaluates_the_files_it_names",
    ("README.md", 2): f"{HERE}::test_the_readme_usage_runs_and_every_option_exists",
    ("README.md", 3): f"{WALK}::test_launch_as_printed + test_dagster_dev_as_printed",
    ("docs/architecture.md", 0): "a diagram of the flow: no command",
    ("docs/architecture.md", 1): f"{HERE}::test_the_layout_names_paths_that_exist",
    ("docs/architecture.md", 2): f"{HERE}::test_the_metric_declaration_is_the_registered_one",
    ("docs/architecture.md", 3): f"{HERE}::test_the_python_api_block_runs_with_every_argument",
    ("docs/architecture.md", 4): f"{HERE}::test_the_cli_listing_names_real_commands_and_options",
    ("docs/architecture.md", 5): f"{HERE}::test_the_json_example_has_the_keys_of_the_output",
    ("docs/architecture.md", 6): f"{HERE}::test_the_policy_example_loads_as_printed",
    ("docs/calibration.md", 0): f"{CAL}::test_calibrate_command_as_printed + {CAL_DEMO}",
    ("docs/calibration.md", 1): f"{CAL}::test_calibrate_python_block_as_printed",
    ("docs/calibration.md", 2): CAL_DEMO,
    ("docs/calibration.md", 3): f"{CAL}::test_sweep_generator_block_with_a_generator_of_ours",
    ("docs/metrics.md", 0): "output printed by benchmarks/bench_validity.py: no command",
    ("docs/scale.md", 0): f"a sketch ([...] stands for the user's own); {RAY} runs it",
    ("docs/metrics.md", 1): "columns of benchmarks/bench_noisy_visibility.py's output: no command",
    ("docs/metrics.md", 2): "output printed by benchmarks/bench_validity.py --exposure-only: no command",
    ("docs/officer-guide.md", 0): f"{WALK}::test_console_commands_as_printed",
    ("docs/officer-guide.md", 1): "tests/console/test_console_proxy.py (nginx runs this location block)",
    ("docs/officer-guide.md", 2): f"{WALK}::test_proxy_console_commands_as_printed",
    ("docs/officer-guide.md", 3): f"{WALK}::test_the_signoff_walkthrough_as_printed",
    ("docs/officer-guide.md", 4): f"{WALK}::test_the_signoff_walkthrough_as_printed (the output it prints)",
    ("docs/officer-guide.md", 5): f"{WALK}::test_the_signoff_walkthrough_as_printed",
    ("docs/officer-guide.md", 6): f"{WALK}::test_withdraw_as_printed",
    ("docs/pipeline.md", 0): f"{WALK}: the demo, test_launch_as_printed, test_dagster_dev_as_printed",
    ("docs/pipeline.md", 1): SNIPPETS,
    ("docs/pipeline.md", 2): f"{HERE}::test_the_component_yaml_is_the_component_and_the_example",
    ("docs/lineage.md", 0): f"{LINEAGE}::test_the_docs_commands_as_printed",
    ("docs/lineage.md", 1): f"{LINEAGE}::test_the_docs_dagster_block_defines_the_check",
    ("examples/privacy_release/README.md", 0): f"{WALK}::test_the_dg_example_as_printed",
}


def test_every_block_of_the_docs_is_run_or_checked() -> None:
    found = {(b.doc, b.index) for b in blocks()}
    assert found == set(CATALOGUE), (
        f"not in the catalogue: {sorted(found - set(CATALOGUE))}; gone: {sorted(set(CATALOGUE) - found)}"
    )
    named = 0
    for entry in CATALOGUE.values():  # every test the catalogue names exists
        for path, name in re.findall(r"(tests/\S+\.py)::(\w+)", entry):
            assert f"def {name}(" in (ROOT / path).read_text(), f"{path} has no {name}"
            named += 1
    assert named >= 18


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """The files the README's examples name (train.csv, synthetic.csv, control.csv): a clean release of
    2,000 demo rows."""
    cwd = tmp_path_factory.mktemp("readme")
    split = leaky_split(load_demo().head(2000), 0.0, seed=0)
    split.train.write_csv(cwd / "train.csv")
    split.synthetic.write_csv(cwd / "synthetic.csv")
    split.control.write_csv(cwd / "control.csv")
    return cwd


def test_the_readme_python_block_evaluates_the_files_it_names(files, monkeypatch) -> None:
    monkeypatch.chdir(files)
    scope: dict = {}
    exec(compile(block("README.md", 1).text, "README.md", "exec"), scope)  # noqa: S102 - our own docs
    ev = scope["ev"]
    assert ev.verdict in ("pass", "warn")  # a clean release is published
    assert ev.tables["real"]["rows"] == 1000 and 0 <= ev["crp"].value <= 1


def _commands() -> dict:
    from dagster_privacy.cli import cli

    return cli.commands


def _options(words: list[str]) -> tuple[str, set[str]]:
    """The subcommand a usage line names (``audit verify`` included) and the options it shows."""
    commands, i = _commands(), 1
    cmd = commands[words[i]]
    while hasattr(cmd, "commands") and i + 1 < len(words) and words[i + 1] in cmd.commands:
        i += 1
        cmd = cmd.commands[words[i]]
    opts = {o for o in re.findall(r"(--[a-z][a-z-]*)", " ".join(words[i + 1 :]))}
    return " ".join(words[1 : i + 1]), opts


def _listed(text: str) -> list[list[str]]:
    lines = [line for line in synopsis(text) if line.startswith("dagster-privacy")]
    return [shlex.split(line.replace("|", " ")) for line in lines]


def _check_options(text: str) -> int:
    checked = 0
    for words in _listed(text):
        name, opts = _options(words)
        cmd = _commands()[name.split()[0]]
        for part in name.split()[1:]:
            cmd = cmd.commands[part]
        known = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert opts <= known, f"`dagster-privacy {name}` has no {sorted(opts - known)}"
        checked += len(opts)
    return checked


def test_the_readme_usage_runs_and_every_option_exists(files) -> None:
    """Each line of the usage listing runs as printed without its optional [...] parts (the demo runs in
    the walkthrough test), and every option it shows exists."""
    text = block("README.md", 2).text
    assert _check_options(text) >= 14
    ran = []
    for line in synopsis(text):
        command = re.sub(r"\s*\[[^]]*\]", "", line)
        if command == "dagster-privacy demo":
            continue
        code, out = sh(command, files, clean_env())
        ran.append(command.split()[1])
        assert code in (0, 1), (command, out[-2000:])  # a verdict, never bad input
        assert "Traceback" not in out
    assert ran == ["evaluate", "lineage", "remediate", "metrics"]
    assert pl.read_parquet(files / "fixed.parquet").height > 0  # remediate wrote its release


def test_the_cli_listing_names_real_commands_and_options() -> None:
    text = block("docs/architecture.md", 4).text
    assert _check_options(text) >= 20
    listed = {_options(w)[0].split()[0] for w in _listed(text)}
    assert listed == set(_commands()), set(_commands()) ^ listed


def test_the_python_api_block_runs_with_every_argument(files) -> None:
    scope: dict = {
        "real": pl.read_csv(files / "train.csv"),
        "synthetic": pl.read_csv(files / "synthetic.csv").to_pandas(),  # "polars/pandas frames"
    }
    exec(compile(block("docs/architecture.md", 3).text, "architecture.md", "exec"), scope)  # noqa: S102
    assert scope["ev"].tables["synthetic"]["rows"] == 500
    assert "holdout" not in scope["ev"].tables or scope["ev"].tables.get("holdout") is None


def test_the_metric_declaration_is_the_registered_one() -> None:
    """The `@metric(...)` shown is dcr_percentile's declaration as registered (no stale default)."""
    from dagster_privacy.metrics import registry

    seen: dict = {}

    def metric(id_: str, **kw):  # noqa: ANN202 - stands in for the decorator
        seen.update(kw, id=id_)
        return lambda f: f

    from dagster_privacy import results
    from dagster_privacy.engine.context import EvaluationContext
    from dagster_privacy.metrics.registration import Expect

    scope = {"metric": metric, "Risk": results.Risk, "Expect": Expect, "EvaluationContext": EvaluationContext,
             "Measurement": results.Measurement, "QUERIES": ()}  # fmt: skip
    exec(compile(block("docs/architecture.md", 2).text, "architecture.md", "exec"), scope)  # noqa: S102
    spec = registry()[seen["id"]]
    assert (seen["family"], seen["source"], seen["risk"]) == (spec.family, spec.source, spec.risk)
    assert tuple(seen["needs"]) == spec.needs and seen["default"] == spec.default
    assert seen["expect"] == spec.expect


def test_the_json_example_has_the_keys_of_the_output(files) -> None:
    text = block("docs/architecture.md", 5).text
    top = set(re.findall(r'^  "(\w+)":', text, flags=re.M))
    entry = set(re.findall(r'"(\w+)":', text.split('"metrics": [')[1].split("\n  ]")[0]))
    ev = dp.evaluate(files / "train.csv", files / "synthetic.csv", holdout=files / "control.csv",
                     metrics=["dcr_percentile"], progress=False)  # fmt: skip
    out = json.loads(ev.to_json())
    assert len(top) >= 8 and top <= set(out), top - set(out)
    metric = out["metrics"][0]
    assert entry - {"alpha", "real", "synthetic", "holdout"} <= set(metric), entry - set(metric)


def test_the_policy_example_loads_as_printed(tmp_path) -> None:
    from dagster_privacy.decision.policy import load_policy

    path = tmp_path / "policy.yaml"
    path.write_text(block("docs/architecture.md", 6).text)
    policy = load_policy(path)
    printed = yaml.safe_load(path.read_text())
    for mid, entry in printed["metrics"].items():
        got = policy.metrics[mid]
        assert got.threshold == entry["threshold"] and got.severity.value == entry["severity"], mid
    assert policy.threat_model.key_columns == printed["threat_model"]["key_columns"]


def test_the_component_yaml_is_the_component_and_the_example() -> None:
    """The YAML shown validates as PrivacyChecksComponent's attributes, the attributes it names in its
    comment exist, and examples/privacy_release uses the same type and attributes."""
    import importlib

    printed = block("docs/pipeline.md", 2).text
    doc = yaml.safe_load(printed)
    module, _, name = doc["type"].rpartition(".")
    component = getattr(importlib.import_module(module), name)
    component.model_validate(doc["attributes"])
    commented = set(re.findall(r"(\w+): ", printed.split("# asset:")[1])) | {"asset"}
    assert commented <= set(component.model_fields), commented - set(component.model_fields)
    example = ROOT / "examples/privacy_release/src/privacy_release_example/defs/privacy_gate/defs.yaml"
    ours = yaml.safe_load(example.read_text())
    assert ours["type"] == doc["type"] and set(ours["attributes"]) == set(doc["attributes"])


def test_the_layout_names_paths_that_exist() -> None:
    text = block("docs/architecture.md", 1).text
    parent: list[str] = []
    checked, listed = 0, set()
    for line in text.splitlines():
        m = re.match(r"^( {0,4})(\S+\.(?:py|toml|md|yaml)|\S+/)\s", line + " ")
        if not m or "`" in m.group(2):
            continue
        depth = len(m.group(1)) // 2
        parent = parent[:depth]
        path = "/".join([*parent, m.group(2).rstrip("/")])
        assert (ROOT / path).exists(), f"docs/architecture.md's layout names {path}, which does not exist"
        checked += 1
        if m.group(2).endswith("/"):
            parent.append(m.group(2).rstrip("/"))
        listed.add(path)
    assert checked >= 25
    # one line per room: every module at the package root and every sub-package is named
    package = ROOT / "dagster_privacy"
    rooms = {f"dagster_privacy/{p.name}" for p in package.iterdir()
             if p.name not in ("__init__.py", "__pycache__", "py.typed")}  # fmt: skip
    rooms |= {f"dagster_privacy/pipeline/{p.name}" for p in (package / "pipeline").iterdir() if p.is_dir()
              and p.name != "__pycache__"}  # fmt: skip
    assert rooms <= listed, sorted(rooms - listed)
