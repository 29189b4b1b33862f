"""`dg scaffold defs dagster_privacy.PrivacyChecksComponent NAME` in a fresh dg project (issue 23)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import dagster_privacy as dp
from dagster_privacy.pipeline.component import PrivacyChecksComponent

DG = str(Path(sys.executable).parent / "dg")


def _project(root: Path) -> Path:
    """The smallest dg project: what `create-dagster project` writes, without a virtual environment."""
    pkg = root / "src" / "fresh_project"
    (pkg / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [project]
            name = "fresh-project"
            version = "0.0.1"
            dependencies = ["dagster-privacy"]

            [tool.dg]
            directory_type = "project"

            [tool.dg.project]
            root_module = "fresh_project"
            """
        )
    )
    (pkg / "__init__.py").write_text("")
    (pkg / "defs" / "__init__.py").write_text("")
    (pkg / "definitions.py").write_text(
        "from pathlib import Path\n\nimport dagster as dg\n\n\n@dg.definitions\ndef defs():\n"
        "    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)\n"
    )
    return pkg


def _dg(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DG, *args], cwd=root, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_scaffold_writes_every_attribute_and_a_policy_and_passes_dg_checks(tmp_path) -> None:
    pkg = _project(tmp_path)
    res = _dg(tmp_path, "scaffold", "defs", "dagster_privacy.PrivacyChecksComponent", "privacy")
    assert res.returncode == 0, res.stderr[-2000:]
    folder = pkg / "defs" / "privacy"
    text = (folder / "defs.yaml").read_text()
    doc = yaml.safe_load(text)
    assert doc["type"] == "dagster_privacy.PrivacyChecksComponent"
    assert doc["attributes"] == {"database": "data/release.duckdb", "policy": "policy.yaml"}
    for name in PrivacyChecksComponent.model_fields:  # every attribute is there, set or commented
        assert f"  {name}: " in text or f"  # {name}: " in text, name
    policy = dp.load_policy(folder / "policy.yaml")
    assert set(policy.metrics) == set(dp.load_policy("standard").metrics)
    for check in (("check", "yaml"), ("check", "defs")):  # as generated, no edit
        res = _dg(tmp_path, *check)
        assert res.returncode == 0, (check, res.stdout[-1500:], res.stderr[-1500:])
