"""metrics/classifiers.py (seed 000 §2.2.3, §2.2.11): D-MLP and MIR on separable tables.

Every expected figure is worked out in the comments from the seed's formula, never copied from a run.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import dagster_privacy as dp


def ev(real, synthetic, ids, **kw) -> dp.Evaluation:
    return dp.evaluate(
        pl.DataFrame(real), pl.DataFrame(synthetic), metrics=ids, policy="report-only", progress=False, **kw
    )


# ----------------------------------------------------------------------------------- classifiers


def _separable(n: int = 120) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(1)
    real = pl.DataFrame({"x": rng.uniform(0, 1, n), "c": rng.choice(["a", "b"], n)})
    syn = pl.DataFrame({"x": rng.uniform(2, 3, n), "c": rng.choice(["a", "b"], n)})
    return real, syn


def test_classifiers_on_separable_tables_give_one() -> None:
    # every synthetic x lies above every real x: AUC 1 (value 2·1 − 1 = 1), recall 1 and FPR 0 (value 1)
    real, syn = _separable()
    e = dp.evaluate(real, syn, metrics=["detection_mlp", "mir"], policy="report-only", progress=False)
    assert e["detection_mlp"].raw == pytest.approx(1.0) and e["detection_mlp"].value == pytest.approx(1.0)
    assert e["mir"].raw == pytest.approx(1.0) and e["mir"].value == pytest.approx(1.0)
