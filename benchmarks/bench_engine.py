"""Engine benchmark (issue 9): seconds per metric and per neighbour query, against one float32 product.

    python benchmarks/bench_engine.py [--adult ../shared/datasets/adult.csv] [--leak-fraction 0.2]
                                      [--metrics crp,dcr,...] [--halves]

Makes the leaky split with ../shared/tools/make_leaky_splits.py (seed 0), evaluates real = train.csv
against synthetic = synthetic.csv (or, with --halves, synthetic = control.csv + synthetic.csv), and
prints seconds per metric, per shared neighbour query and for the encodings; then, in the same
process, the time of one float32 product of the encoded synthetic and real tables (the floor a
synthetic→real query can approach), the ratio of the synthetic→real euclidean query to it, the total
seconds and the peak memory (ru_maxrss, measured before the product's own 0.7 GB result is made).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CORE = ["crp", "dcr", "mdcr", "nndr", "authenticity", "nnaa"]


def make_split(adult: Path, out: Path, fraction: float, *, extra: list[str] | None = None) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(SHARED / "tools" / "make_leaky_splits.py"),
            "--input",
            str(adult),
            "--out-dir",
            str(out),
            "--leak-fraction",
            str(fraction),
            "--seed",
            "0",
            *(extra or []),
        ],
        check=True,
        capture_output=True,
    )
    return out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adult", type=Path, default=SHARED / "datasets" / "adult.csv")
    ap.add_argument("--leak-fraction", type=float, default=0.2)
    ap.add_argument("--metrics", default=",".join(CORE))
    ap.add_argument("--halves", action="store_true", help="synthetic = control.csv + synthetic.csv")
    a = ap.parse_args()

    from dagster_privacy import evaluate
    from dagster_privacy.decision.policy import resolve
    from dagster_privacy.evaluate import prepare, run_metrics

    with tempfile.TemporaryDirectory() as tmp:
        d = make_split(a.adult, Path(tmp), a.leak_fraction)
        real = d / "train.csv"
        synthetic: object = d / "synthetic.csv"
        if a.halves:
            synthetic = pl.concat(
                [
                    pl.read_csv(d / "control.csv", infer_schema_length=0),
                    pl.read_csv(d / "synthetic.csv", infer_schema_length=0),
                ]
            )
            synthetic.write_csv(d / "halves.csv")
            synthetic = d / "halves.csv"
        evaluate(real, real, metrics=["crp"], policy="report-only", progress=False)  # warm imports
        t0 = time.perf_counter()
        ctx, prints = prepare(real, synthetic, seed=0)
        t_load = time.perf_counter() - t0
        ids = [m for m in a.metrics.split(",") if m]
        ev = run_metrics(ctx, resolve("report-only", ids), fingerprints=prints)
        total = time.perf_counter() - t0
        peak = peak_mb()

        # the same query once more, alone, then the bare product of the same two encodings
        x_syn, x_real = ctx.euclidean("synthetic"), ctx.euclidean("real")
        from dagster_privacy.engine.neighbors import knn_euclidean

        q = knn_euclidean(x_syn, x_real, 1)
        t1 = time.perf_counter()
        prod = x_syn @ x_real.T
        t_prod = time.perf_counter() - t1
        t1 = time.perf_counter()
        prod = np.matmul(x_syn, x_real.T, out=prod)
        t_prod = min(t_prod, time.perf_counter() - t1)
        del prod

    print(
        f"tables: real {ctx.n('real')} rows, synthetic {ctx.n('synthetic')} rows, "
        f"euclidean {x_real.shape[1]} dims, Φ^k k={ctx.projection.k}"
    )
    print(f"load + validate + schema: {t_load:.3f} s; encodings: {ctx.encode_seconds:.3f} s")
    print("\nneighbour queries (shared by every metric):")
    for label, s in ctx.query_seconds.items():
        print(f"  {label:<45} {s:7.3f} s")
    print("\nmetric            value    seconds (own work, shared queries excluded)")
    for r in ev.results:
        v = "—" if r.value is None else f"{r.value:.4f}"
        print(
            f"  {r.id:<15} {v:>7}   {r.seconds:7.3f}   {r.status.value}{'  ' + r.reason if r.reason else ''}"
        )
    print(
        f"\nfloat32 product synthetic × real ({x_syn.shape[0]} × {x_real.shape[0]} × {x_syn.shape[1]}): "
        f"{t_prod:.3f} s"
    )
    print(
        f"synthetic→real euclidean k=1 query (same run): {q.seconds:.3f} s = "
        f"{q.seconds / t_prod:.2f} × the product"
    )
    print(f"total (load → all metrics): {total:.2f} s; peak memory {peak:.0f} MB")


if __name__ == "__main__":
    main()
