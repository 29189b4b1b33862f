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

BINS, CATEGORICAL_MAX, DELTA = 20, 20, 1e-9  # as in dp_releases.py


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
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from snsynth import Synthesizer
    from snsynth.transform import BinTransformer

    eps, synth = args.eps, args.synth
    stem = src.name[: -len("_train.parquet")]  # e.g. islr_wage_3
    os.makedirs(args.out, exist_ok=True)

    # the fit of dp_releases.release
    np.random.seed(seed)
    tab = pq.read_table(src)
    df = tab.to_pandas()
    cat = [f.name for f in tab.schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    cat += [
        f.name
        for f in tab.schema
        if pa.types.is_integer(f.type) and df[f.name].nunique(dropna=True) <= CATEGORICAL_MAX
    ]
    cont = [c for c in tab.schema.names if c not in cat]
    nullable = bool(df.isna().any().any())
    pre_eps = eps * min(0.5, 0.05 * len(cont)) if cont else 0.0
    print(
        f"rows={tab.num_rows} categorical={cat} continuous={cont} nullable={nullable} "
        f"preprocessor_eps={pre_eps:g} of eps={eps:g}",
        flush=True,
    )
    t0 = time.perf_counter()
    model = Synthesizer.create(synth, epsilon=eps, delta=DELTA)
    model.fit(
        df,
        transformer={c: BinTransformer(bins=BINS, nullable=nullable) for c in cont},
        categorical_columns=cat,
        continuous_columns=cont,
        preprocessor_eps=pre_eps,
        nullable=nullable,
    )
    fit_s = time.perf_counter() - t0
    print(f"fit: {fit_s:.1f} s", flush=True)

    # N draws from the one fitted model (the global numpy RNG advances between draws)
    rows = math.ceil(tab.num_rows / args.frac_div)
    for j in range(args.n):
        t1 = time.perf_counter()
        # mbi sorts rows; shuffle as dp_releases does, with a per-resample random_state
        out = model.sample(rows).sample(frac=1.0, random_state=seed * 1000 + j)
        cols = []
        for f in tab.schema:  # restore names/types exactly as dp_releases.release
            s = out[f.name]
            if pa.types.is_integer(f.type):
                s = np.round(s.astype("float64")).astype("Int64")
            elif pa.types.is_floating(f.type):
                s = s.astype("float64")
            else:
                s = s.astype(object).where(s.notna(), None)
            cols.append(pa.array(s, type=f.type, from_pandas=True))
        dst = Path(args.out) / f"{stem}_{synth}_eps{eps:g}_r{j:02d}.parquet"
        pq.write_table(pa.Table.from_arrays(cols, schema=tab.schema), dst)
        print(f"{dst.name}: {rows} rows, {time.perf_counter() - t1:.1f} s", flush=True)
    print(f"total: {time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
