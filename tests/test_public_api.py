"""What a user writes keeps working (issue 47): every name the package and ``dagster_privacy.pipeline``
export resolves (the lazy pipeline map included), and the module paths users type — the component's
``type:`` in defs.yaml, the ``dg`` entry point, the console script, ``-m dagster_privacy.pipeline.location``
and ``python -m dagster_privacy.cli`` — still lead where they did."""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import tomllib

import dagster_privacy as dp

ROOT = Path(__file__).parents[1]


def test_every_exported_name_resolves() -> None:
    missing = [n for n in dp.__all__ if getattr(dp, n, None) is None]
    assert not missing and len(dp.__all__) >= 25
    lazy = dict(dp._PIPELINE)
    assert lazy and all(getattr(dp, n) is not None for n in lazy)
    assert set(lazy) <= set(dp.__all__)
    import dagster_privacy.pipeline as pipe

    assert all(getattr(pipe, n, None) is not None for n in pipe.__all__) and len(pipe.__all__) >= 25
    # the root's lazy names are the pipeline's own objects, not copies
    assert dp.build_privacy_checks is pipe.build_privacy_checks
    assert dp.ReleaseSettings is pipe.ReleaseSettings
    assert callable(dp.registry) and "exposed_records" in dp.registry()  # the function, not a module


def test_the_module_paths_users_type() -> None:
    import dagster as dg

    example = ROOT / "examples/privacy_release/src/privacy_release_example/defs/privacy_gate/defs.yaml"
    type_name = next(ln.split(":", 1)[1].strip() for ln in example.read_text().splitlines()
                     if ln.startswith("type:"))  # fmt: skip
    assert type_name == "dagster_privacy.pipeline.component.PrivacyChecksComponent"
    module, _, cls = type_name.rpartition(".")
    assert issubclass(getattr(importlib.import_module(module), cls), dg.Component)

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    registry_module = project["entry-points"]["dagster_dg_cli.registry_modules"]["dagster_privacy"]
    assert hasattr(importlib.import_module(registry_module), "PrivacyChecksComponent")
    installed = {e.name: e.value for e in entry_points(group="dagster_dg_cli.registry_modules")}
    assert installed.get("dagster_privacy") == registry_module
    script, _, func = project["scripts"]["dagster-privacy"].partition(":")
    assert callable(getattr(importlib.import_module(script), func))

    location = importlib.import_module("dagster_privacy.pipeline.location")
    assert isinstance(location.defs, dg.Definitions)
    out = subprocess.run([sys.executable, "-m", "dagster_privacy.cli", "metrics"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0 and "exposed_records" in out.stdout, out.stderr[-2000:]
