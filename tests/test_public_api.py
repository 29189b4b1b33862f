"""What a user writes keeps working (issue 47): every name the package and ``dagster_privacy.pipeline``
export resolves (the lazy pipeline map included), and the module paths users type — the component's
``type:`` in defs.yaml, the ``dg`` entry point, the console script, ``-m dagster_privacy.pipeline.location``
and ``python -m dagster_privacy.cli`` — still lead where they did."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

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
    assert dp.RayExecutor.__module__ == "dagster_privacy.engine.executors"  # docs/scale.md's Python route
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

    # pyproject.toml's entry points as written (read as text: tomllib is not in Python 3.10), and as
    # installed
    pyproject = (ROOT / "pyproject.toml").read_text()
    registry_module = re.search(r'registry_modules"\]\ndagster_privacy = "([^"]+)"', pyproject).group(1)
    assert registry_module == "dagster_privacy.pipeline.component"
    assert hasattr(importlib.import_module(registry_module), "PrivacyChecksComponent")
    installed = {e.name: e.value for e in entry_points(group="dagster_dg_cli.registry_modules")}
    assert installed.get("dagster_privacy") == registry_module
    console = re.search(r'\ndagster-privacy = "([^"]+)"', pyproject).group(1)
    assert console == "dagster_privacy.cli:main"
    assert {e.name: e.value for e in entry_points(group="console_scripts")}["dagster-privacy"] == console
    script, _, func = console.partition(":")
    assert callable(getattr(importlib.import_module(script), func))

    location = importlib.import_module("dagster_privacy.pipeline.location")
    assert isinstance(location.defs, dg.Definitions)
    out = subprocess.run([sys.executable, "-m", "dagster_privacy.cli", "metrics"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0 and "exposed_records" in out.stdout, out.stderr[-2000:]
