"""How visible are noisy copies at all? (issue 45: the noisy f = 0.2 case of bench_validity.py)

    python benchmarks/bench_noisy_visibility.py [--tables a,b] [--seeds 5]

A noisy copy (``noisy_split``: every numerical cell of a training record moved by 0.05 sd) exposes its
record only when it lies nearer to it than the record's own nearest other training record: otherwise
it is just another point of the population. Per table and split seed, in the product's euclidean space
(one-hot + min-max, fitted on the training table, as the distance gates see it), this prints:

  leaked   the share of copied training records whose nearest synthetic row is nearer than their own
           nearest other training record (strictly; records with a twin left out)
  others   the same share for the training records that were not copied (the release's chance rate)
  gap      leaked − others: what any per-record test can see of the copies
  ratio    median distance from a copied record to its nearest synthetic row / median distance to its
           nearest other training record: ≥ 1 means the noise is at the table's own resolution

A gap near 0 (ratio near or above 1) means the copies are indistinguishable from fresh records of the
population: no test with a bounded false-alarm rate can block them, and they single no one out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def visibility(table: str, seed: int) -> dict[str, float]:
    import validity_data

    from dagster_privacy.calibration import noisy_split
    from dagster_privacy.evaluate import prepare

    split = noisy_split(validity_data.load(table), 0.2, seed=seed)
    ctx, _ = prepare(split.train, split.synthetic, split.control, seed=seed)
    position = np.empty_like(ctx.input_rows["real"])
    position[ctx.input_rows["real"]] = np.arange(position.size)  # input row → canonical position
    own = ctx.neighbors("euclidean", "real", "real", 1).dist[:, 0]
    syn = ctx.neighbors("euclidean", "real", "synthetic", 1).dist[:, 0]
    leaked = np.zeros(own.size, dtype=bool)
    leaked[position[split.leaked]] = True
    counted = own > 0  # a record with a twin is exposed by no copy
    nearer = syn < own
    a, b = leaked & counted, ~leaked & counted
    share = {
        k: float(nearer[m].mean()) if m.any() else float("nan") for k, m in (("leaked", a), ("others", b))
    }
    ratio = (
        float(np.median(syn[a]) / np.median(own[a])) if a.any() and np.median(own[a]) > 0 else float("nan")
    )
    return {**share, "gap": share["leaked"] - share["others"], "ratio": ratio}


def main() -> int:
    import validity_data

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    tables = [t for t in args.tables.split(",") if t] or list(validity_data.TABLES)
    print(
        f"{'table':<28}{'leaked':>8}{'others':>8}{'gap':>8}{'ratio':>8}   (medians over {args.seeds} seeds)"
    )
    for table in tables:
        rows = [visibility(table, seed) for seed in range(args.seeds)]
        med = {k: float(np.nanmedian([r[k] for r in rows])) for k in ("leaked", "others", "gap", "ratio")}
        print(f"{table:<28}{med['leaked']:>8.3f}{med['others']:>8.3f}{med['gap']:>8.3f}{med['ratio']:>8.2f}",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
