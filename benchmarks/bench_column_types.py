"""The column types users bring (issue 23): the Adult leaky split (16,280 training rows) with and without
three extra columns — a date stored as text (YYYY-MM-DD), an account code of ~50,000 possible values and
a free-text note — evaluated by `dagster-privacy evaluate` (all 30 ids, standard policy) in a child
process. Prints wall seconds, peak memory, how each extra column was read (kind, format, or the reason
it was left out), and the peak-memory ratio with / without them.

    python benchmarks/bench_column_types.py [--fraction 0.2] [--work-dir /tmp/coltypes]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from bench_seed000 import run_measured

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT.parent / "shared" / "datasets" / "adult.csv"
BIN = Path(sys.executable).parent
WORDS = (
    "account",
    "review",
    "pending",
    "customer",
    "called",
    "about",
    "card",
    "limit",
    "late",
    "fee",
)


def with_user_columns(df: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Adds opened (a date as text), account_code (~50,000 possible codes) and note (free text): values
    drawn per row, so a copied row carries its own."""
    rng = np.random.default_rng(seed)
    n = df.height
    days = rng.integers(0, 365 * 30, n)
    opened = (np.datetime64("1990-01-01") + days.astype("timedelta64[D]")).astype(str)
    codes = np.char.add("AC-", rng.integers(0, 50_000, n).astype(str))
    words = np.array(WORDS)[rng.integers(0, len(WORDS), (n, 8))]
    notes = [f"{' '.join(w)} ref {int(r)}" for w, r in zip(words, rng.integers(0, 10**9, n), strict=True)]
    return df.with_columns(
        pl.Series("opened", opened), pl.Series("account_code", codes), pl.Series("note", notes)
    )


def run(d: Path, label: str) -> tuple[float, float, dict]:
    out = d / f"{label}.json"
    cmd = [str(BIN / "dagster-privacy"), "evaluate", "--json", str(out)]
    cmd += [f"--{role}={d / f'{label}_{role}.parquet'}" for role in ("real", "synthetic", "holdout")]
    wall, peak, rc, _, err = run_measured(cmd)
    if rc not in (0, 1):
        raise SystemExit(f"{label}: evaluate failed ({rc}): {err.strip().splitlines()[-1:]}")
    return wall, peak, json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fraction", type=float, default=0.2, help="leak fraction of the split")
    ap.add_argument("--work-dir", type=Path, default=None)
    a = ap.parse_args()
    from dagster_privacy.calibration import leaky_split

    d = a.work_dir or Path(tempfile.mkdtemp(prefix="coltypes_"))
    d.mkdir(parents=True, exist_ok=True)
    full = with_user_columns(pl.read_csv(ADULT, infer_schema_length=10000), seed=0)
    s = leaky_split(full, a.fraction, seed=0)
    extra = ["opened", "account_code", "note"]
    for role, t in (("real", s.train), ("synthetic", s.synthetic), ("holdout", s.control)):
        t.write_parquet(d / f"with_{role}.parquet")  # Parquet: the date stays text
        t.drop(extra).write_parquet(d / f"without_{role}.parquet")
    print(f"Adult leaky split f = {a.fraction:g}: train {s.train.height}, synthetic {s.synthetic.height}, "
          f"holdout {s.control.height}; work dir {d}")  # fmt: skip
    rows = {}
    for label in ("without", "with"):
        wall, peak, doc = run(d, label)
        rows[label] = (wall, peak)
        errors = [r["id"] for r in doc["metrics"] if r["status"] == "error"]
        print(f"{label:8s} extra columns: {wall:7.1f} s  peak {peak:7.0f} MB  verdict {doc['verdict']}  "
              f"errors {errors or 'none'}")  # fmt: skip
        if label == "with":
            sch = doc["schema"]
            for c in sch["columns"]:
                if c["name"] in extra:
                    print(f"  {c['name']}: {c['kind']}" + (f" ({c['format']})" if c.get("format") else ""))
            for c in sch["excluded"]:
                if c["name"] in extra:
                    print(f"  {c['name']}: left out — {c['reason']}; synthetic values in real: "
                          f"{c.get('synthetic_values_in_real')}")  # fmt: skip
            for note in sch["notes"]:
                print(f"  note: {note}")
    print(f"peak memory with / without: {rows['with'][1] / rows['without'][1]:.2f}×; "
          f"time {rows['with'][0] / rows['without'][0]:.2f}×")  # fmt: skip


if __name__ == "__main__":
    main()
