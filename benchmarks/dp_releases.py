"""Releases of a real differentially private generator for bench_validity.py: smartnoise-synth's MST
(and AIM), fitted on each training split that `bench_validity.py --export-train DIR` wrote.

It runs in a virtual environment of its own (smartnoise-synth pins pandas < 3 and pulls torch; the
project does not depend on it):

    python -m venv /tmp/dp/venv && /tmp/dp/venv/bin/pip install torch==2.13.0 smartnoise-synth pyarrow
    python benchmarks/bench_validity.py --export-train /tmp/dp/in --tables uci_adult,islr_default
    /tmp/dp/venv/bin/python benchmarks/dp_releases.py /tmp/dp/in /tmp/dp/out [--synth mst:1 aim:1]
    python benchmarks/bench_validity.py --tables uci_adult,islr_default --dp-dir /tmp/dp/out --only-dp

Preprocessing is smartnoise's own: text columns and integers with at most 20 values are categorical;
other numbers are binned into 20 bins whose bounds smartnoise finds with its DP approx_bounds, paid
from `preprocessor_eps` (ε · min(0.5, 0.05 · continuous columns), out of the synthesizer's ε). Each
release has ⌈train rows / 2⌉ rows (the release part's size), the training table's names and types;
binned numbers come back as bin midpoints. Output: OUT/{table}_{seed}_{synth}_eps{ε}.parquet.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

BINS, CATEGORICAL_MAX, DELTA = 20, 20, 1e-9


def fitted(src: Path, synth: str, eps: float, seed: int) -> tuple[Any, Any]:
    """The generator fitted on one training table (smartnoise's own preprocessing), and the table."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from snsynth import Synthesizer
    from snsynth.transform import BinTransformer

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
    model = Synthesizer.create(synth, epsilon=eps, delta=DELTA)
    model.fit(
        df,
        transformer={c: BinTransformer(bins=BINS, nullable=nullable) for c in cont},
        categorical_columns=cat,
        continuous_columns=cont,
        preprocessor_eps=eps * min(0.5, 0.05 * len(cont)) if cont else 0.0,
        nullable=nullable,
    )
    return model, tab


def typed(out: Any, tab: Any) -> Any:
    """A sample cast back to the training table's names and types (an Arrow table)."""
    import numpy as np
    import pyarrow as pa

    cols = []
    for f in tab.schema:
        s = out[f.name]
        if pa.types.is_integer(f.type):
            s = np.round(s.astype("float64")).astype("Int64")
        elif pa.types.is_floating(f.type):
            s = s.astype("float64")
        else:
            s = s.astype(object).where(s.notna(), None)
        cols.append(pa.array(s, type=f.type, from_pandas=True))
    return pa.Table.from_arrays(cols, schema=tab.schema)


def release(src: Path, dst: Path, synth: str, eps: float, seed: int) -> float:
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    model, tab = fitted(src, synth, eps, seed)
    out = model.sample(math.ceil(tab.num_rows / 2)).sample(frac=1.0, random_state=seed)  # mbi sorts rows
    pq.write_table(typed(out, tab), dst)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", help="folder of {table}_{seed}_train.parquet")
    ap.add_argument("out", help="folder for the releases")
    ap.add_argument("--synth", nargs="*", default=["mst:1"], help="generator:epsilon, e.g. mst:1 aim:1")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for spec in args.synth:
        synth, eps = spec.split(":")[0], float(spec.split(":")[1])
        for src in sorted(Path(args.inputs).glob("*_train.parquet")):
            stem = src.name[: -len("_train.parquet")]
            dst = Path(args.out) / f"{stem}_{synth}_eps{eps:g}.parquet"
            if dst.exists():
                continue
            try:
                seconds = release(src, dst, synth, eps, int(stem.rsplit("_", 1)[1]))
                print(f"{dst.name}: {seconds:.1f} s", flush=True)
            except Exception as exc:  # one configuration failing does not stop the others
                print(f"{dst.name}: failed ({type(exc).__name__})", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
