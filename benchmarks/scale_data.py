"""Adult-shaped tables of any size for the scale benchmark (issue 22): train N, holdout N/2, synthetic
0.7 N of which 0.2 N rows are verbatim copies of training rows.

Rows are resampled from UCI Adult (CC BY 4.0, ../shared/datasets/adult.csv) with jitter on the
numerical columns, so that duplicates stay rare however large N grows: fnlwgt and non-zero capital
figures are scaled by 1 + N(0, 0.05), age and hours-per-week move by up to ±2. education-num stays as
it is (it encodes education).

    python benchmarks/scale_data.py --rows 64000 --out-dir /tmp/scale64k
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl

ADULT = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "adult.csv"


def jittered(df: pl.DataFrame, n: int, rng: np.random.Generator) -> pl.DataFrame:
    """n rows resampled from df with replacement, numerical columns jittered (integers stay integers)."""
    out = df[rng.integers(0, df.height, n)]

    def scale(col: str) -> pl.Series:
        x = out.get_column(col).to_numpy().astype(np.float64)
        return pl.Series(col, np.rint(x * (1.0 + rng.normal(0.0, 0.05, n))).astype(np.int64))

    def shift(col: str, lo: int, hi: int) -> pl.Series:
        x = out.get_column(col).to_numpy() + rng.integers(-2, 3, n)
        return pl.Series(col, np.clip(x, lo, hi).astype(np.int64))

    return out.with_columns(
        scale("fnlwgt"), scale("capital-gain"), scale("capital-loss"),
        shift("age", 17, 90), shift("hours-per-week", 1, 99),
    )  # fmt: skip


def make_tables(n: int, *, seed: int = 0, source: Path = ADULT) -> dict[str, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    adult = pl.read_csv(source)
    train = jittered(adult, n, rng)
    holdout = jittered(adult, n // 2, rng)
    n_copy = int(round(0.2 * n))
    fresh = jittered(adult, int(round(0.7 * n)) - n_copy, rng)
    copies = train[np.sort(rng.choice(n, n_copy, replace=False))]
    synthetic = pl.concat([fresh, copies])
    synthetic = synthetic[rng.permutation(synthetic.height)]
    return {"train": train, "holdout": holdout, "synthetic": synthetic}


def write_tables(n: int, out_dir: Path, *, seed: int = 0) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, df in make_tables(n, seed=seed).items():
        paths[name] = out_dir / f"{name}.parquet"
        df.write_parquet(paths[name])
    return paths


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, required=True, help="training rows N")
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    for name, path in write_tables(a.rows, a.out_dir, seed=a.seed).items():
        print(f"{name}: {path}")
