"""docs/calibration.md's `--demo` commands as printed (issue 46, 2): the plain leaky model, the noisy
and the overfit risk models on the shipped 10,000-row Adult subset. Each writes its tables, plots and
(for the leaky and noisy models, which fit thresholds) a calibrated policy that loads."""

from __future__ import annotations

import json

import pytest
from docs_blocks import block, clean_env, commands, sh

from dagster_privacy.decision.policy import load_policy

pytestmark = pytest.mark.slow

LINES = [commands(block("docs/calibration.md", 0).text)[1], *commands(block("docs/calibration.md", 2).text)]


@pytest.mark.parametrize("line", LINES, ids=["leaky", "noisy", "overfit"])
def test_calibrate_demo_commands_as_printed(line, tmp_path) -> None:
    assert line.startswith("dagster-privacy calibrate --demo")
    code, out = sh(line, tmp_path, clean_env())
    assert code == 0, out[-3000:]
    out_dir = tmp_path / (line.split("--out ")[1].split()[0] if "--out " in line else ".")
    runs = json.loads((out_dir / "calibration.json").read_text())
    assert runs and (out_dir / "calibration_response.png").stat().st_size > 10_000
    if "overfit" not in line:  # the overfit model fits no thresholds (docs/calibration.md)
        assert load_policy(out_dir / "calibrated_policy.yaml").metrics
