"""The seeded lineage the tests share (issue 56): the demo split (train 5,000, holdout 2,500, unseen
2,500), releases of 800 unseen rows plus ``k`` unique training records copied verbatim, each one
different records. Records are copied by training row number, so a test knows which people each
release exposed."""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from gates import STANDARD_GATES_YAML

#: rows of unseen real people per release
FRESH = 800
#: standard's gates (exposed_records at standard's level, 0.0125), so that a verdict can pass: the policy
#: the CLI tests write to a file
POLICY_YAML = "name: lineage-test\nmetrics:\n" + STANDARD_GATES_YAML + "require_signoff: false\n"


@dataclass(frozen=True)
class Split:
    train: pl.DataFrame
    holdout: pl.DataFrame
    unseen: pl.DataFrame
    unique: np.ndarray  # training rows no other real record equals, in a seeded order


@functools.cache
def split() -> Split:
    from dagster_privacy.calibration import leaky_split
    from dagster_privacy.demo import load_demo

    sp = leaky_split(load_demo(), 0.0, seed=1)
    pooled = pl.concat([sp.train, sp.control])
    unique = np.flatnonzero(~pooled.is_duplicated().to_numpy()[: sp.train.height])
    return Split(sp.train, sp.control, sp.release, np.random.default_rng(0).permutation(unique))


def release(i: int, copied: np.ndarray) -> pl.DataFrame:
    """Release ``i``: its own draw of unseen rows, then the training rows ``copied`` verbatim."""
    s = split()
    rng = np.random.default_rng([56, i])
    fresh = s.unseen[np.sort(rng.choice(s.unseen.height, FRESH, replace=False))]
    return pl.concat([fresh, s.train[np.sort(copied)]])


def copies(i: int, k: int) -> np.ndarray:
    """The ``k`` training rows release ``i`` copies (disjoint across releases)."""
    return split().unique[k * i : k * (i + 1)]


def evaluate(synthetic: pl.DataFrame, holdout: pl.DataFrame | None = None, train: pl.DataFrame | None = None):
    """The release under POLICY_YAML (the verdict as the CLI reaches it): an Evaluation."""
    import yaml

    import dagster_privacy as dp

    s = split()
    train = s.train if train is None else train
    holdout = s.holdout if holdout is None else holdout
    return dp.evaluate(
        train, synthetic, holdout=holdout, policy=yaml.safe_load(POLICY_YAML), seed=0, progress=False
    )


def with_canary(canary: str) -> tuple[pl.DataFrame, int]:
    """The training table with ``canary`` in one text cell of a unique record (the first one copied),
    and that record's row number."""
    s = split()
    col = next(c for c, t in s.train.schema.items() if t == pl.String)
    row = int(copies(0, 1)[0])
    mark = pl.when(pl.int_range(pl.len()) == row).then(pl.lit(canary)).otherwise(pl.col(col)).alias(col)
    return s.train.with_columns(mark), row


_CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    sys.path[:0] = [{here!r}, {tests!r}]  # lineage_data, and the gates it imports
    from lineage_data import copies, evaluate, release
    from dagster_privacy.lineage import judge_lineage, open_ledger
    i, ledger, mode, sync, home = int(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4]), sys.argv[5]
    ev = evaluate(release(i, copies(i, {k})))
    if mode == "race":  # both candidates evaluated, then judged at the same moment
        (sync / f"ready{{i}}").touch()
        while not (sync / "go").exists():
            time.sleep(0.01)
    led = open_ledger(ledger, home=Path(home))
    out = judge_lineage(ev, lineage="demo", ledger=led, release_id=f"r{{i}}", record=True)
    if mode == "kill":  # reserved, then killed before anyone commits the publication
        os.kill(os.getpid(), signal.SIGKILL)
    print(out.lineage["recorded"]["event"], out.lineage["look"], flush=True)
    """
)


def child(i: int, ledger: str, mode: str, *, sync: Path, home: Path, k: int) -> subprocess.Popen:
    """A real process judging release ``i`` (``k`` copies) into ``ledger`` (a file or a URI; a database
    ledger's keys under ``home``): ``kill`` dies right after its reservation, ``race`` touches
    ``sync/ready<i>`` and waits for ``sync/go`` before judging."""
    here = Path(__file__).parent
    code = _CHILD.format(here=str(here), tests=str(here.parent / "support"), k=k)
    return subprocess.Popen([sys.executable, "-c", code, str(i), ledger, mode, str(sync), str(home)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
