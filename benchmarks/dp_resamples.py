"""Many draws of one fitted DP generator, per training split, for ``bench_lineage.py --resamples``
(issue 56: a lineage of resamples of one DP generator's output must not be blocked): smartnoise-synth's
MST fitted once on each training table in IN (as ``benchmarks/dp_releases.py`` fits it: the same
preprocessing, ε and δ), then N draws of ⌈train rows / 4⌉ rows, each cast back to the training table's
names and types. Runs in the DP virtual environment of ``dp_releases.py``:

    python benchmarks/bench_validity.py --export-train /tmp/dp/in --tables islr_wage --seeds 20
    OMP_NUM_THREADS=1 /tmp/dp/venv/bin/python benchmarks/dp_resamples.py /tmp/dp/in /tmp/dp/resamples \
        [--synth mst] [--eps 1] [--n 20]

Output: OUT/{table}_{seed}_{synth}_eps{ε}_r{j}.parquet.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help="a folder of {table}_{seed}_train.parquet (or one such file)")
    ap.add_argument("out")
    ap.add_argument("--synth", default="mst")
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--frac-div", type=int, default=4, help="rows per draw = ceil(train rows / this)")
    args = ap.parse_args()
    src = Path(args.src)
    for path in sorted(src.glob("*_train.parquet")) if src.is_dir() else [src]:
        seed = int(path.name[: -len("_train.parquet")].rsplit("_", 1)[1])
        draws(path, args, seed)


def draws(src: Path, args: argparse.Namespace, seed: int) -> None:
    import pyarrow.parquet as pq
    from dp_releases import fitted, typed

    stem = src.name[: -len("_train.parquet")]  # e.g. islr_wage_3
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    model, tab = fitted(src, args.synth, args.eps, seed)
    print(f"{stem}: fit {time.perf_counter() - t0:.1f} s", flush=True)
    rows = math.ceil(tab.num_rows / args.frac_div)
    for j in range(args.n):  # the global numpy RNG advances between draws
        out = model.sample(rows).sample(frac=1.0, random_state=seed * 1000 + j)  # mbi sorts rows
        dst = Path(args.out) / f"{stem}_{args.synth}_eps{args.eps:g}_r{j:02d}.parquet"
        pq.write_table(typed(out, tab), dst)
    print(f"{stem}: {args.n} draws of {rows} rows, {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
