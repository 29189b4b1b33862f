"""Do clean releases read PASS? (issue 46: every clean release read WARN, so people learn to ignore it)

    python benchmarks/bench_clean_pass.py [--tables a,b] [--seeds 2] [--rows 8000] [--dp-dir DIR]

For each table of ``validity_data.TABLES`` (or ``--tables``) and split seed: the clean release of the
leaky risk model's split (real rows no generator saw; train 50 % / holdout 25 % / release 25 %), judged
by the whole ``standard`` policy — every metric, advisory ones included, as a new user runs it. Printed:
the verdict per case, the count reading PASS, and every line a user would have to act on (a warning's or
a blocking gate's reason, the verdict's blocked_by), so a message that names no action shows.
A table larger than ``--rows`` is sampled (seeded) to keep the run short.

With ``--dp-dir DIR`` the releases of real differentially private generators are judged too, as a new
user would judge a generator's release: every DIR/{table}_{seed}_{generator}.parquet
(benchmarks/dp_releases.py, on the training sides ``bench_validity.py --export-train`` writes: the whole
table, never sampled), against the same split's training and holdout sides; counted apart.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    import validity_data

    import dagster_privacy as dp
    from dagster_privacy.calibration import leaky_split

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--rows", type=int, default=8000)
    ap.add_argument("--dp-dir", default="", help="folder of DP releases (benchmarks/dp_releases.py)")
    args = ap.parse_args()
    from bench_validity import dp_releases

    tables = [t for t in args.tables.split(",") if t] or list(validity_data.TABLES)
    verdicts: dict[str, Counter[str]] = {"clean": Counter(), "generator": Counter()}
    lines: Counter[str] = Counter()
    t0 = time.perf_counter()

    def judge(table: str, label: str, seed: int, train, holdout, synthetic, kind: str) -> None:  # noqa: ANN001
        ev = dp.evaluate(train, synthetic, holdout, policy="standard", seed=seed, progress=False)
        verdicts[kind][ev.verdict.value] += 1
        said = [
            f"{r.id}: {r.reason}" for r in ev.results if r.status.value in ("warn", "fail", "inconclusive")
        ]
        said += [f"blocked by {b}" for b in ev.blocked_by] + [f"finding: {f}" for f in ev.findings]
        print(f"{table:<28} {label:<14} seed {seed}  {ev.verdict.value:<5} {train.height:>6} training rows",
              flush=True)  # fmt: skip
        for line in said:
            print(f"    {line}", flush=True)
            lines[line.split(":")[0]] += 1

    for table in tables:
        full = validity_data.load(table)
        df = full.sample(args.rows, seed=0) if full.height > args.rows else full
        for seed in range(args.seeds):
            s = leaky_split(df, 0.0, seed=seed)
            judge(table, "clean", seed, s.train, s.control, s.synthetic, "clean")
            if args.dp_dir:
                base = leaky_split(full, 0.0, seed=seed)
                for label, syn in dp_releases(args.dp_dir, table, seed, base.train).items():
                    judge(table, label, seed, base.train, base.control, syn, "generator")
    for kind, counts in verdicts.items():
        total = sum(counts.values())
        if total:
            print(f"\n{kind} releases reading PASS: {counts['pass']}/{total}; " + ", ".join(
                f"{k} {v}" for k, v in sorted(counts.items())))  # fmt: skip
    print(
        "lines a user meets, by metric: " + (", ".join(f"{k} {v}" for k, v in lines.most_common()) or "none")
    )
    print(f"seconds: {time.perf_counter() - t0:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
