"""The risk models as data: the leaky split (seed 004 §5.1.1), its near-duplicate variant (noisy copies),
and two example generators for the overfitting / DP sweeps (§5.1.2–5.1.3): a per-column sampler and a
k-nearest-neighbour sampler whose memorisation grows as its neighbourhood shrinks."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..data import tables as tb
from ..engine.context import EvaluationContext
from ..engine.neighbors import knn_euclidean

#: a generator for the overfitting / DP risk models: (training table, parameter) → synthetic table.
#: It may accept a keyword ``seed`` (the repeat's seed) to make its own draws reproducible.
Generator = Callable[..., Any]


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


def _parts(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row indices of train (n // 2), control (n // 4) and release (the rest) from a seeded permutation."""
    perm = np.random.default_rng(seed).permutation(n)
    n_train, n_control = n // 2, n // 4
    return perm[:n_train], perm[n_train : n_train + n_control], perm[n_train + n_control :]


def _leak(
    train: np.ndarray, release: np.ndarray, fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(leaked table rows, synthetic table rows): round(f·|train|) train rows drawn from the stream
    [seed, 1] (so the split does not move with f), appended to the release and shuffled."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("the leak fraction must be in [0, 1]")
    n_leak = int(round(fraction * train.size))
    rng = np.random.default_rng([seed, 1])
    leak = np.sort(rng.choice(train, size=n_leak, replace=False)) if n_leak else np.array([], dtype=np.int64)
    syn = np.concatenate([release, leak])
    return leak, syn[rng.permutation(syn.size)]


def leaky_split(df: pl.DataFrame, fraction: float, *, seed: int = 0) -> LeakySplit:
    """The leaky risk model of seed 004 §5.1.1, built exactly as ``shared/tools/make_leaky_splits.py``.

    A seeded permutation cuts train (n // 2), control (n // 4) and release (the rest); round(f·|train|)
    train rows, drawn from a second stream seeded [seed, 1], are copied verbatim into the synthetic
    table, which is then shuffled. The same seed gives the same three parts whatever f.
    """
    tr, co, re = _parts(df.height, seed)
    leak, syn = _leak(tr, re, fraction, seed)
    pos = {int(v): i for i, v in enumerate(tr)}
    return LeakySplit(
        df[tr],
        df[co],
        df[re],
        df[syn],
        np.array([pos[int(v)] for v in leak], dtype=np.int64),
        float(fraction),
        int(seed),
    )


def noisy_split(df: pl.DataFrame, fraction: float, *, noise: float = 0.05, seed: int = 0) -> LeakySplit:
    """The leaky split with near-duplicates instead of copies: the same parts and leaked rows as
    ``leaky_split``, but every numerical cell (of a column of more than two training values) of a leaked
    row moves by N(0, noise · the column's standard deviation) (integers rounded), and a leaked row that
    still equals a training row steps its first non-null numerical cell by 1 until it does not: no
    leaked row is a verbatim training row, so
    exact-match metrics see nothing of the leak, while the records sit within ``noise`` standard
    deviations of the training records they memorise. (Release rows are left as they are: in a table
    of few distinct records they may equal training records by value, as in ``leaky_split``.)"""
    base = leaky_split(df, fraction, seed=seed)
    # a column of at most two training values is binary to the product (tables.infer_schema reads the
    # training table): noise would put it off its domain (0.03 in a column of 0s), a copy no generator
    # makes and no near-copy test needs
    nums = [c for c, t in df.schema.items() if t.is_numeric() and base.train.get_column(c).n_unique() > 2]
    if not nums or base.leaked.size == 0:
        return base
    rng = np.random.default_rng([seed, 3])
    leaked = base.train[base.leaked]
    moved = {}
    for c in nums:
        x = leaked.get_column(c).to_numpy().astype(np.float64)
        std = float(np.nanstd(df.get_column(c).to_numpy().astype(np.float64)))
        std = std if math.isfinite(std) and std > 0 else 1.0
        y = x + rng.normal(0.0, noise * std, x.size)
        moved[c] = np.rint(y) if df.schema[c].is_integer() else y
    noisy = leaked.with_columns([pl.Series(c, moved[c]).cast(df.schema[c], strict=False) for c in nums])
    # never a verbatim training row: a row that equals one (noise 0, a null where the noise would act,
    # or a move onto another record) steps its first non-null numerical cell by 1 until it is new
    train_hashes = set(base.train.hash_rows(seed=0).to_list())
    for _ in range(50):
        clash = np.isin(noisy.hash_rows(seed=0).to_numpy(), list(train_hashes))
        if not clash.any():
            break
        noisy = noisy.with_columns(
            [pl.when(pl.Series(clash) & pl.col(c).is_not_null() & pl.all_horizontal(
                [pl.col(p).is_null() for p in nums[:i]] or [pl.lit(True)]))
             .then(pl.col(c) + 1).otherwise(pl.col(c)).alias(c) for i, c in enumerate(nums)]
        )  # fmt: skip
    else:
        raise ValueError(
            "noisy_split: the table's numerical columns cannot move a record off the training rows"
        )
    synthetic = pl.concat([base.release, noisy])
    synthetic = synthetic[np.random.default_rng([seed, 4]).permutation(synthetic.height)]
    return LeakySplit(
        base.train, base.control, base.release, synthetic, base.leaked, base.fraction, base.seed
    )


def per_column_sampler(train: pl.DataFrame, noise: float, *, seed: int = 0) -> pl.DataFrame:
    """A tiny example generator for :func:`sweep_generator` (not a serious synthesiser).

    Each synthetic row starts as a copy of a training row drawn with replacement; each cell is then,
    with probability ``noise``, replaced by an independent draw from that column's training values.
    ``noise = 1`` samples every column on its own (the marginals only: no row survives beyond chance);
    ``noise = 0`` copies training rows (maximum risk). Sweep it as ``params=[1.0, 0.1, 0.0]``
    (increasing risk). Seeded: the same arguments give the same table.
    """
    if not 0.0 <= noise <= 1.0:
        raise ValueError("noise must be in [0, 1]")
    rng = np.random.default_rng([seed, 2])
    n = train.height
    base = rng.integers(0, n, n)
    cols = {}
    for name in train.columns:
        s = train.get_column(name)
        other = s.gather(rng.integers(0, n, n))
        swap = pl.Series(rng.random(n) < noise)
        cols[name] = other.zip_with(swap, s.gather(base)).alias(name)
    return pl.DataFrame(cols, schema=train.schema)


def encoded(df: pl.DataFrame, column_kinds: Mapping[str, str] | None = None) -> np.ndarray:
    """The table in the engine's euclidean space (one-hot + min-max) fitted on itself, row for row: what
    the distance metrics see, so a neighbour or an outlier here is one for them too."""
    schema = tb.infer_schema(df, column_kinds)
    canon = tb.canonical(df, schema, role="real")
    return EvaluationContext(canon, canon.head(1), schema=schema).euclidean("real")


def knn_sampler(
    train: pl.DataFrame, neighbours: int, *, seed: int = 0, column_kinds: Mapping[str, str] | None = None
) -> pl.DataFrame:
    """An overfitting generator with a memorisation knob (the overfit risk model of issue 20).

    Each synthetic row starts at a training row drawn with replacement (the anchor) and takes every
    column's value from one of the anchor's ``neighbours`` nearest training rows (the anchor included;
    euclidean space of :func:`encoded`), drawn uniformly per column: a local resampler in the manner of
    nearest-neighbour and CART synthesisers. Its neighbourhood is its bandwidth: ``neighbours = 1``
    copies training rows verbatim (full memorisation); 2–5 gives near-duplicates of training records
    that share most cells with them but are rarely exact copies; 50 and more mixes values across
    similar records. Sweep it as ``params=[50, 20, 10, 5, 2, 1]`` (increasing risk). Seeded: the same
    arguments give the same table, as many rows as ``train``.
    """
    k = int(neighbours)
    if k < 1 or k != neighbours:
        raise ValueError("neighbours must be a whole number of at least 1")
    n = train.height
    if n == 0:
        raise ValueError("the training table is empty")
    k = min(k, n)
    x = np.ascontiguousarray(encoded(train, column_kinds))
    near = knn_euclidean(x, x, k).idx  # the anchor itself first (distance 0; an equal row may precede it)
    rng = np.random.default_rng([seed, 5])
    anchor = rng.integers(0, n, n)
    pick = near[anchor[:, None], rng.integers(0, k, (n, train.width))]
    return pl.DataFrame(
        {c: train.get_column(c).gather(pick[:, j]) for j, c in enumerate(train.columns)}, schema=train.schema
    )
