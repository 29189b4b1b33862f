"""Calibration benchmark (issue 15): the shared-pool leaky sweep against plain per-fraction evaluate().

    python benchmarks/bench_calibration.py [--real ../shared/datasets/adult.csv] [--rows N]
                                           [--fractions 0,0.05,0.2,1] [--metrics ID,ID] [--no-plain]

Each variant runs in a child process so its peak memory (ru_maxrss) is its own:
  shared  dagster_privacy.calibration for one repeat: one split, one encoded pool, borrowed queries
  plain   dp.evaluate(leaky_split(df, f, seed=0)) for each f — what a naive loop would do
Both print the wall time and the peak memory; the parent checks that they give the same values and
prints the speed-up. Default metrics: the standard policy's.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "datasets" / "adult.csv"


def child(
    variant: str, real: str, rows: int | None, fractions: list[float], metrics: list[str] | None
) -> None:
    import numpy as np

    import dagster_privacy as dp
    from dagster_privacy import calibration as cb
    from dagster_privacy.calibration.sweep import _leaky_repeat, _Setup
    from dagster_privacy.data.loading import load

    df = load(real, role="real")
    if rows and rows < df.height:
        df = df[np.sort(np.random.default_rng(0).choice(df.height, rows, replace=False))]
    t0 = time.perf_counter()
    values: dict[str, list[float | None]] = {}
    if variant == "shared":
        setup = _Setup.make("standard", metrics, None, None, None)
        evs, _ = _leaky_repeat(df, 0, fractions, setup, lambda _d: None)
    else:
        evs = []
        for f in fractions:
            s = cb.leaky_split(df, f, seed=0)
            evs.append(
                dp.evaluate(
                    s.train,
                    s.synthetic,
                    s.control,
                    metrics=metrics,
                    policy="standard",
                    seed=0,
                    progress=False,
                )
            )
    for ev in evs:
        for r in ev:
            values.setdefault(r.id, []).append(r.value)
    print(
        json.dumps(
            {
                "variant": variant,
                "seconds": time.perf_counter() - t0,
                "rows": df.height,
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "values": values,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", default=str(ADULT))
    ap.add_argument("--rows", type=int, default=None, help="seeded subsample of the real table first")
    ap.add_argument("--fractions", default="0,0.05,0.2,1")
    ap.add_argument("--metrics", default=None, help="ids, comma-separated (default: the standard policy's)")
    ap.add_argument("--no-plain", action="store_true", help="only the shared sweep")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    fractions = [float(v) for v in a.fractions.split(",")]
    metrics = a.metrics.split(",") if a.metrics else None
    if a.child:
        child(a.child, a.real, a.rows, fractions, metrics)
        return
    out = {}
    for variant in ("shared", *(() if a.no_plain else ("plain",))):
        cmd = [sys.executable, __file__, "--child", variant, "--real", a.real, "--fractions", a.fractions]
        cmd += ["--rows", str(a.rows)] if a.rows else []
        cmd += ["--metrics", a.metrics] if a.metrics else []
        res = subprocess.run(cmd, check=True, capture_output=True, text=True)
        out[variant] = json.loads(res.stdout.strip().splitlines()[-1])
        o = out[variant]
        print(
            f"{variant:>6}: {o['seconds']:7.1f} s  peak {o['peak_mb']:7.0f} MB  "
            f"({o['rows']} rows, {len(fractions)} fractions, {len(o['values'])} metrics, one repeat)"
        )
    if "plain" in out:
        same = all(
            abs((x or 0) - (y or 0)) < 1e-9 and (x is None) == (y is None)
            for m, xs in out["shared"]["values"].items()
            for x, y in zip(xs, out["plain"]["values"][m], strict=True)
        )
        print(f"speed-up {out['plain']['seconds'] / out['shared']['seconds']:.2f}×; identical values: {same}")


if __name__ == "__main__":
    main()
