"""docs/calibration.md as printed (issue 46, 2): the `calibrate` command on a file named adult.csv (the
first 1,500 rows of the shipped Adult subset), the Python block on the same file, and the
`sweep_generator` block with the one name it leaves to the user (`fit_my_synthesizer`) supplied.
The `--demo` commands run in test_calibration_demo_walkthrough.py (a file of their own: they take
about three minutes and run beside the rest of the suite)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from docs_blocks import block, clean_env, commands, sh

from dagster_privacy.decision.policy import load_policy
from dagster_privacy.demo import load_demo

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def adult(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("calibration-doc")
    load_demo().head(1500).write_csv(cwd / "adult.csv")
    return cwd


def test_calibrate_command_as_printed(adult) -> None:
    line = commands(block("docs/calibration.md", 0).text)[0]
    assert line.startswith("dagster-privacy calibrate --real adult.csv ")
    code, out = sh(line, adult, clean_env())
    assert code == 0, out[-3000:]
    policy = load_policy(adult / "calibration" / "calibrated_policy.yaml")
    runs = json.loads((adult / "calibration" / "calibration.json").read_text())
    assert policy.metrics and runs


def test_calibrate_python_block_as_printed(adult, monkeypatch) -> None:
    monkeypatch.chdir(adult)
    scope: dict = {}
    exec(compile(block("docs/calibration.md", 1).text, "calibration.md", "exec"), scope)  # noqa: S102
    cal = scope["cal"]
    assert "ims" in cal.thresholds and (adult / "calibration" / "calibrated_policy.yaml").is_file()
    assert cal.correlation.shape[0] == cal.correlation.shape[1] >= 2


def fit_my_synthesizer(train: pl.DataFrame, *, epsilon: float, random_state: int):  # noqa: ANN201
    """A generator of ours for the block: each column resampled on its own (the columns' joint law is
    lost, more so at small epsilon, where a share of every column is drawn uniformly from its values)."""
    rng = np.random.default_rng(random_state)
    uniform = 1 / (1 + epsilon)

    class Model:
        def sample(self, n: int) -> pl.DataFrame:
            cols = {}
            for name in train.columns:
                col = train[name]
                picks = col.gather(rng.integers(0, len(col), n))
                pool = col.unique(maintain_order=True)
                other = pool.gather(rng.integers(0, len(pool), n))
                cols[name] = pl.select(
                    pl.when(pl.Series(rng.random(n) < uniform)).then(other).otherwise(picks)
                ).to_series()
            return pl.DataFrame(cols)

    return Model()


def test_sweep_generator_block_with_a_generator_of_ours(adult, monkeypatch) -> None:
    monkeypatch.chdir(adult)
    scope: dict = {"pl": pl, "fit_my_synthesizer": fit_my_synthesizer}
    exec(compile(block("docs/calibration.md", 3).text, "calibration.md", "exec"), scope)  # noqa: S102
    assert (adult / "calibration-dp" / "calibration.json").is_file()
    assert scope["cal"].responses
