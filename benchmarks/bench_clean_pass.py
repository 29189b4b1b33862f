"""Do clean releases read PASS? (issue 46: every clean release read WARN, so people learn to ignore it)

    python benchmarks/bench_clean_pass.py [--tables a,b] [--seeds 2] [--rows 8000]

For each table of ``validity_data.TABLES`` (or ``--tables``) and split seed: the clean release of the
leaky risk model's split (real rows no generator saw; train 50 % / holdout 25 % / release 25 %), judged
by the whole ``standard`` policy — every metric, advisory ones included, as a new user runs it. Printed:
the verdict per case, the count reading PASS, and every line a user would have to act on (a warning's or
a blocking gate's reason, the verdict's blocked_by), so a message that names no action shows.
A table larger than ``--rows`` is sampled (seeded) to keep the run short.
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
    args = ap.parse_args()
    tables = [t for t in args.tables.split(",") if t] or list(validity_data.TABLES)
    verdicts: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    t0 = time.perf_counter()
    for table in tables:
        df = validity_data.load(table)
        if df.height > args.rows:
            df = df.sample(args.rows, seed=0)
        for seed in range(args.seeds):
            s = leaky_split(df, 0.0, seed=seed)
            ev = dp.evaluate(s.train, s.synthetic, s.control, policy="standard", seed=seed, progress=False)
            verdicts[ev.verdict.value] += 1
            said = [
                f"{r.id}: {r.reason}"
                for r in ev.results
                if r.status.value in ("warn", "fail", "inconclusive")
            ]
            said += [f"blocked by {b}" for b in ev.blocked_by] + [f"finding: {f}" for f in ev.findings]
            print(f"{table:<28} seed {seed}  {ev.verdict.value:<5} {df.height:>6} rows", flush=True)
            for line in said:
                print(f"    {line}", flush=True)
                lines[line.split(":")[0]] += 1
    total = sum(verdicts.values())
    print(f"\nclean releases reading PASS: {verdicts['pass']}/{total}; " + ", ".join(
        f"{k} {v}" for k, v in sorted(verdicts.items())))  # fmt: skip
    print(
        "lines a user meets, by metric: " + (", ".join(f"{k} {v}" for k, v in lines.most_common()) or "none")
    )
    print(f"seconds: {time.perf_counter() - t0:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
