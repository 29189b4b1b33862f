"""Holdout-indicator benchmark (issue 12): the six ids on the whole Adult leaky split, f = 0, 0.2, 1.

    python benchmarks/bench_holdout.py [--adult ../shared/datasets/adult.csv] [--fractions 0,0.2,1]
                                       [--no-cli]

For each leak fraction f the split is made with ../shared/tools/make_leaky_splits.py (seed 0):
real = train.csv, synthetic = synthetic.csv, holdout = control.csv. Each f runs in a child process
(so its peak memory, ru_maxrss, is its own) and prints per metric value, baseline, CI and seconds;
the seconds of the shared neighbour queries; the seconds the six add to an engine run of the core
seed-000 metrics on the same context; the six alone on a fresh context; peak memory. At f = 0.2 it
then remediates (drops the rows ims and dcr_percentile flagged) and evaluates again. Finally the CLI
(`dagster-privacy evaluate ... --policy report-only`) runs on f = 0, 0.2, 1 and the remediated release.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
IDS = [
    "ims",
    "dcr_percentile",
    "knn_percentile",
    "dcr_holdout_diff",
    "nndr_holdout_diff",
    "proximity_ratio_score",
]
CORE = ["crp", "dcr", "mdcr", "nndr", "authenticity", "nnaa"]


def make_split(adult: Path, out: Path, fraction: float) -> Path:
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
        ],
        check=True,
        capture_output=True,
    )
    return out


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def print_results(ev, title: str) -> None:
    print(f"  {title}")
    print(f"    {'metric':22s} {'value':>7s} {'baseline':>9s} {'95 % CI':>18s} {'raw':>9s} {'seconds':>8s}")
    for r in ev:
        ci = "—" if r.ci is None else f"[{r.ci[0]:.4f}, {r.ci[1]:.4f}]"
        print(
            f"    {r.id:22s} {_fmt(r.value):>7s} {_fmt(r.baseline):>9s} {ci:>18s} {_fmt(r.raw):>9s} "
            f"{r.seconds:8.3f}" + (f"  {r.status.value}: {r.reason}" if r.reason else "")
        )


def one(d: Path, fraction: float) -> None:
    """Child process: one leak fraction."""
    import dagster_privacy as dp
    from dagster_privacy.decision.policy import load_policy, resolve
    from dagster_privacy.evaluate import prepare, run_metrics

    p = load_policy("report-only")
    real, syn, hold = d / "train.csv", d / "synthetic.csv", d / "control.csv"
    print(f"== f = {fraction}  ({json.loads((d / 'manifest.json').read_text())['sizes']})")

    # 1. the six alone on a fresh context: every second of theirs, shared queries included
    t0 = time.perf_counter()
    ctx, fp = prepare(real, syn, hold)
    t_prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    ev = run_metrics(ctx, resolve(p, IDS), fingerprints=fp)
    t_six = time.perf_counter() - t0
    print_results(ev, "the six on a fresh context (seconds = own work, shared queries excluded)")
    print(
        f"    load+prepare {t_prep:.2f} s; six metrics {t_six:.2f} s wall, of which shared queries "
        f"{sum(ctx.query_seconds.values()):.2f} s and encodings {ctx.encode_seconds:.2f} s"
    )
    for label, s in ctx.query_seconds.items():
        print(f"      query {label:40s} {s:6.3f} s")

    # 2. what they add to an engine run of the core metrics on the same context
    ctx2, fp2 = prepare(real, syn, hold)
    t0 = time.perf_counter()
    run_metrics(ctx2, resolve(p, CORE), fingerprints=fp2)
    t_core = time.perf_counter() - t0
    t0 = time.perf_counter()
    run_metrics(ctx2, resolve(p, IDS), fingerprints=fp2)
    t_add = time.perf_counter() - t0
    print(f"    engine run of {','.join(CORE)}: {t_core:.2f} s; the six add {t_add:.2f} s on its context")

    if fraction == 0.2:
        t0 = time.perf_counter()
        clean = dp.remediate(ev, syn)
        t_rem = time.perf_counter() - t0
        out = d / "remediated.csv"
        clean.write_csv(out)
        print(
            f"    remediation: dropped {ctx.n('synthetic') - clean.height} of {ctx.n('synthetic')} "
            f"synthetic rows "
            f"(ims ∪ dcr_percentile flagged) in {t_rem:.2f} s"
        )
        again = dp.evaluate(real, out, hold, metrics=IDS, policy=p, progress=False)
        print_results(again, "after remediation")
    print(f"    peak memory (ru_maxrss) {peak_mb():.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adult", type=Path, default=SHARED / "datasets" / "adult.csv")
    ap.add_argument("--fractions", default="0,0.2,1")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI runs")
    ap.add_argument("--one", nargs=2, metavar=("DIR", "F"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(Path(a.one[0]), float(a.one[1]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {}
        for f in (float(x) for x in a.fractions.split(",")):
            d = make_split(a.adult, Path(tmp) / f"f{f}", f)
            dirs[f] = d
            subprocess.run([sys.executable, __file__, "--one", str(d), str(f)], check=True)
            sys.stdout.flush()
        if a.no_cli:
            return
        runs = [(f"f = {f}", d / "synthetic.csv", d) for f, d in dirs.items()]
        if 0.2 in dirs and (dirs[0.2] / "remediated.csv").exists():
            runs.append(("f = 0.2 after remediation", dirs[0.2] / "remediated.csv", dirs[0.2]))
        for title, syn, d in runs:
            cmd = [
                "dagster-privacy",
                "evaluate",
                "--real",
                str(d / "train.csv"),
                "--synthetic",
                str(syn),
                "--holdout",
                str(d / "control.csv"),
                "--metrics",
                ",".join(IDS),
                "--policy",
                "report-only",
            ]
            print(f"== CLI, {title}: {' '.join(c if '/' not in c else Path(c).name for c in cmd)}")
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            print(proc.stdout.rstrip())
            print(f"   exit {proc.returncode}, {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
