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


def test_the_labelled_rows_are_gathered_as_d_would_hold_them(monkeypatch) -> None:
    """D = real ∪ synthetic, dimensions by column label, rows by (label, row hash): any rows of it, built
    a few at a time from the encodings, are D's rows (the fits read exactly what a held D gave them)."""
    from dagster_privacy.evaluate import prepare
    from dagster_privacy.metrics import classifiers

    monkeypatch.setattr(classifiers, "_GATHER", 7)  # many gather blocks, each mixing real and synthetic
    rng = np.random.default_rng(3)
    real = pl.DataFrame(
        {"z": rng.normal(size=50), "c": rng.choice(["b", "a", "c"], 50), "a": rng.normal(size=50)}
    )
    syn = pl.DataFrame({"z": rng.normal(size=40), "c": rng.choice(["b", "a"], 40), "a": rng.normal(size=40)})
    ctx, _ = prepare(real, syn)
    data = classifiers._Labelled.of(ctx)
    labels = ctx.encoder.euclidean_labels()
    dims = sorted(range(len(labels)), key=lambda d: (labels[d], d))
    whole = np.vstack([ctx.euclidean("real"), ctx.euclidean("synthetic")])[:, dims]
    y = np.r_[np.ones(50), np.zeros(40)]
    hashes = np.r_[  # of the canonical tables the context holds
        ctx.table("real").select(["a", "c", "z"]).hash_rows(seed=0).to_numpy(),
        ctx.table("synthetic").select(["a", "c", "z"]).hash_rows(seed=0).to_numpy(),
    ]
    order = np.lexsort((hashes, y))
    assert (data.y == y[order]).all() and data.y[:40].sum() == 0 and data.y[40:].sum() == 50
    idx = rng.permutation(90)[:61]
    got = data.rows(idx)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    assert np.array_equal(got, whole[order][idx])
