"""Risk models of seed 004 §5: insert a known amount of risk and see which metrics respond."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl


@dataclass(frozen=True)
class LeakySplit:
    """train 50 % / control 25 % / release 25 %; synthetic = release + a fraction f of train rows."""

    train: pl.DataFrame
    control: pl.DataFrame
    release: pl.DataFrame
    synthetic: pl.DataFrame
    leaked: np.ndarray  # indices into train of the copied rows
    fraction: float
    seed: int


def leaky_split(df: pl.DataFrame, fraction: float, *, seed: int = 0) -> LeakySplit:
    """The leaky risk model of seed 004 §5.1.1, built exactly as ``shared/tools/make_leaky_splits.py``.

    A seeded permutation cuts train (n // 2), control (n // 4) and release (the rest); round(f·|train|)
    train rows, drawn from a second stream seeded [seed, 1], are copied verbatim into the synthetic
    table, which is then shuffled. The same seed gives the same three parts whatever f.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("the leak fraction must be in [0, 1]")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(df.height)
    n = perm.size
    n_train, n_control = n // 2, n // 4
    tr, co, re = perm[:n_train], perm[n_train:n_train + n_control], perm[n_train + n_control:]
    n_leak = int(round(fraction * n_train))
    leak_rng = np.random.default_rng([seed, 1])
    leak = np.sort(leak_rng.choice(tr, size=n_leak, replace=False)) if n_leak else np.array([], dtype=np.int64)
    syn = np.concatenate([re, leak])
    syn = syn[leak_rng.permutation(syn.size)]
    pos = {int(v): i for i, v in enumerate(tr)}
    return LeakySplit(df[tr], df[co], df[re], df[syn], np.array([pos[int(v)] for v in leak], dtype=np.int64),
                      float(fraction), int(seed))
