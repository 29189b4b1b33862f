"""Releases of DataSynthesizer (correlated attribute mode: a Bayesian network of degree k, with its DP
noise at ε), fitted on each training split that `bench_validity.py --export-train DIR` wrote — the
generator a new user tried in issue 46. Judged like the DP generators' releases:

    python -m venv --system-site-packages /tmp/ds/venv
    /tmp/ds/venv/bin/pip install --no-deps DataSynthesizer  # numpy, pandas, scikit-learn: the project's
    python benchmarks/bench_validity.py --export-train /tmp/dp/in --tables cardata_arrests,statsmodels_fair
    /tmp/ds/venv/bin/python benchmarks/datasynthesizer_releases.py /tmp/dp/in /tmp/ds/out [--k 2 --eps 1]
    python benchmarks/bench_clean_pass.py --tables cardata_arrests,statsmodels_fair --dp-dir /tmp/ds/out

Columns of at most 20 values are categorical (DataSynthesizer's ``category_threshold``); each release has
⌈train rows / 2⌉ rows (the release part's size). Output: OUT/{table}_{seed}_datasynth_k{k}_eps{ε}.parquet.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path


def release(src: Path, dst: Path, k: int, eps: float, seed: int) -> float:
    import pandas as pd
    from DataSynthesizer.DataDescriber import DataDescriber
    from DataSynthesizer.DataGenerator import DataGenerator

    t0 = time.perf_counter()
    train = pd.read_parquet(src)
    with tempfile.TemporaryDirectory() as tmp:
        csv, desc, out = Path(tmp, "train.csv"), Path(tmp, "description.json"), Path(tmp, "synthetic.csv")
        train.to_csv(csv, index=False)
        describer = DataDescriber(category_threshold=20)
        describer.describe_dataset_in_correlated_attribute_mode(
            dataset_file=str(csv), epsilon=eps, k=k, seed=seed
        )
        with desc.open("w") as f:  # its own writer fails on NumPy 2's scalars (np.bool)
            json.dump(
                describer.data_description, f, default=lambda o: o.item() if hasattr(o, "item") else str(o)
            )
        generator = DataGenerator()
        generator.generate_dataset_in_correlated_attribute_mode(
            math.ceil(len(train) / 2), str(desc), seed=seed
        )
        generator.save_synthetic_data(str(out))
        pd.read_csv(out).to_parquet(dst)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--tables", default="", help="only these tables (comma-separated)")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    wanted = {t for t in args.tables.split(",") if t}
    for src in sorted(Path(args.src).glob("*_train.parquet")):
        table, seed = src.stem[: -len("_train")].rsplit("_", 1)
        if (wanted and table not in wanted) or int(seed) >= args.seeds:
            continue
        dst = Path(args.out) / f"{table}_{seed}_datasynth_k{args.k}_eps{args.eps:g}.parquet"
        try:
            seconds = release(src, dst, args.k, args.eps, int(seed))
            print(f"{dst.name}: {seconds:.1f} s", flush=True)
        except Exception as exc:  # noqa: BLE001 - one table's failure is reported, the others go on
            print(f"{dst.name}: failed ({type(exc).__name__})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
