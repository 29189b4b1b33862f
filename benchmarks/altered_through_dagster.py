"""The altered releases of issue 55 through the reference Dagster job, as a user launches it.

    python benchmarks/altered_through_dagster.py [--copies 400] [--work-dir /tmp/altered_dg]

The Adult split of ../shared/tools/make_leaky_splits.py's model (seed 0, no leak), the clean release plus
K unique training records altered (bench_altered_copies.py's alterations: two cells emptied, the weight
+ 1, two cells swapped, two labels re-coded, the sensitive column changed with the keys kept), each
written as the tables real / holdout / synthetic of a DuckDB file and launched with
``dg launch --assets '*' -f definitions.py`` under the reference policy (checks/policy.yaml: standard).
Prints per alteration the exit code, whether published_release materialised and whether the publication
target holds a release. None should be published.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("empty2", "weight1", "swap2", "recode2", "keys_kept")


def _write(path: Path, real: pl.DataFrame, holdout: pl.DataFrame, synthetic: pl.DataFrame) -> None:
    path.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    for name, df in (("real", real), ("holdout", holdout), ("synthetic", synthetic)):
        con.register("frame", df.to_arrow())
        con.execute(f"create table {name} as select * from frame")
        con.unregister("frame")
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=400)
    ap.add_argument("--work-dir", default="/tmp/altered_dg")
    ap.add_argument("--kinds", default=",".join(KINDS))
    a = ap.parse_args()
    from bench_altered_copies import _default_sensitive, _unique_pool, alter
    from validity_data import load

    from dagster_privacy.calibration import leaky_split

    work = Path(a.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    sp = leaky_split(load("uci_adult"), 0.0, seed=0)
    pool = _unique_pool(sp.train, sp.control)
    for kind in a.kinds.split(","):
        rng = np.random.default_rng([0, 55, a.copies, len(kind)])
        rows = sp.train[np.sort(rng.choice(pool, size=a.copies, replace=False))]
        altered = alter(kind, rows, sp.train, rng, _default_sensitive(sp.train))
        if altered is None:
            print(f"{kind}: not applicable to Adult")
            continue
        synthetic = pl.concat([sp.release, altered.select(sp.train.columns)], how="vertical_relaxed")
        db, target, home = work / f"{kind}.duckdb", work / f"{kind}_published.duckdb", work / f"{kind}_home"
        target.unlink(missing_ok=True)
        home.mkdir(exist_ok=True)
        _write(db, sp.train, sp.control, synthetic)
        env = {**os.environ, "DAGSTER_PRIVACY_DATABASE": str(db),
               "DAGSTER_PRIVACY_PUBLISH_TARGET": str(target), "DAGSTER_HOME": str(home)}  # fmt: skip
        t0 = time.perf_counter()
        res = subprocess.run(["dg", "launch", "--assets", "*", "-f", "definitions.py"], cwd=ROOT, env=env,
                             capture_output=True, text=True)  # fmt: skip
        log = res.stdout + res.stderr
        published = target.exists()
        failed = sorted({line.split("Asset check '")[1].split("'")[0] for line in log.splitlines()
                         if "Asset check '" in line and "failed" in line})  # fmt: skip
        print(f"{kind}: {a.copies} people carried; exit {res.returncode}; published: {published}; "
              f"failing checks: {', '.join(failed) or 'none'}; {time.perf_counter() - t0:.0f} s")  # fmt: skip
        sys.stdout.flush()


if __name__ == "__main__":
    main()
