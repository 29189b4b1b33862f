"""Every release counts (issue 56): releases that each pass alone, judged with their lineage.

    python benchmarks/bench_lineage.py [--tables uci_adult,...] [--releases 12] [--per 5] [--fresh 4000]
                                       [--clean 20] [--looks 20] [--pool 40] [--resamples DIR]
                                       [--only twelve,overlap,resampled,clean,resamples]

For every table (validity_data.TABLES; UCI Adult from ../shared), the split of the leaky risk model with
no leak (train 50 % / holdout 25 % / unseen 25 %), each release judged by the standard policy's
exposed_records gate at its level under standard (0.0125: the gate's verdict is the release's here; the
other gates are not the lineage's concern) and then with its lineage (lineage/gate.py, a real ledger
file per lineage):

  twelve     releases of ``--fresh`` unseen rows (at most half the unseen part) plus ``--per`` unique
             training records copied verbatim, other records each time: per release its verdict alone
             (and verbatim floor), the lineage's decision, the people in the union; the first release
             the lineage blocks; the union of all releases judged as one release.
  overlap    the same, each release copying ``--per`` records drawn from a pool of 2 × ``--per`` (records
             repeat across releases): the union counts people once.
  resampled  a generator that memorised ``--releases`` × ``--per`` unique training records, resampled
             ``--releases`` times: each draw carries ``--per`` of them at random (Annamalai et al. 2024:
             many draws of one generator are one larger release); the union finds what each draw hides.
  clean      ``--clean`` lineages of ``--looks`` releases of unseen rows only (drawn from ``--pool``
             releases, each a fresh draw of unseen rows): lineages blocked at any look, as printed.
  resamples  the DP draws in ``--resamples DIR`` (benchmarks/dp_resamples.py: many draws of one fitted
             generator per training split, files ``{table}_{seed}_*.parquet``): one lineage per split
             seed, and each lineage's union as one release.

One JSON line per lineage to benchmarks/out/lineage.jsonl.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT_TABLES = ("uci_adult", "islr_wage", "aer_cps1988", "modeldata_attrition")


def _judge(train: pl.DataFrame, holdout: pl.DataFrame, release: pl.DataFrame):  # -> Evaluation
    import dagster_privacy as dp

    ev = dp.evaluate(
        train,
        release,
        holdout=holdout,
        metrics=["exposed_records"],
        policy="standard",
        seed=0,
        progress=False,
    )
    return ev.model_copy(update={"verdict": ev["exposed_records"].status})


class Lineage:
    """A lineage on a ledger file of its own (removed at the end)."""

    def __init__(self, name: str) -> None:
        from dagster_privacy.lineage import FileLedger

        self.dir = Path(tempfile.mkdtemp(prefix="bench_lineage_"))
        self.ledger, self.name, self.n = FileLedger(self.dir / "ledger.duckdb"), name, 0

    def judge(self, ev: Any) -> dict[str, Any]:
        from dagster_privacy.lineage import judge_lineage

        self.n += 1
        out = judge_lineage(ev, lineage=self.name, ledger=self.ledger, release_id=f"r{self.n}", record=True)
        return out.lineage

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _verbatim(d: dict[str, Any]) -> dict[str, Any]:
    return next((p for p in d["parts"] if p["part"] == "verbatim"), {"exposed": 0, "exposed_holdout": 0})


def series(
    sp: Any, unique: np.ndarray, a: argparse.Namespace, pool_size: int | None, rng: np.random.Generator
) -> dict[str, Any]:
    """Releases of unseen rows plus copies (other records each time, or ``--per`` drawn from the first
    ``pool_size``), each judged alone and with the lineage."""
    fresh = min(a.fresh, sp.release.height // 2)
    overlap = pool_size is not None
    pool = unique[:pool_size] if overlap else unique
    lin, rows, first, releases = Lineage("bench"), [], None, []
    for i in range(a.releases):
        got = rng.choice(pool, a.per, replace=False) if overlap else pool[a.per * i : a.per * (i + 1)]
        rel = pl.concat(
            [sp.release[np.sort(rng.choice(sp.release.height, fresh, replace=False))], sp.train[np.sort(got)]]
        )
        releases.append(rel)
        ev = _judge(sp.train, sp.control, rel)
        r = ev["exposed_records"]
        d = lin.judge(ev)
        floor = ((r.decision or {}).get("floor_people") or {}).get("verbatim")
        rows.append(
            {
                "release": i + 1,
                "alone": r.status.value,
                "alone_floor": floor,
                "lineage": d["status"],
                "look": d["look"],
                "union_verbatim": _verbatim(d)["exposed"],
                "union_verbatim_holdout": _verbatim(d)["exposed_holdout"],
                "room": d["room_people"],
                "copied_people": len(set(pool[: a.per * (i + 1)].tolist())) if not overlap else None,
            }
        )
        if d["status"] == "fail" and first is None:
            first = i + 1
        print(
            f"  release {i + 1:>2}: alone {r.status.value:<12} (verbatim floor {floor}); lineage "
            f"{d['status']:<4} at look {d['look']}: verbatim {_verbatim(d)['exposed']} vs "
            f"{_verbatim(d)['exposed_holdout']} on the holdout side; next look fails at "
            f"{d['room_people']} more",
            flush=True,
        )
    lin.close()
    union = _judge(sp.train, sp.control, pl.concat(releases))["exposed_records"]
    uv = next(p for p in (union.decision or {}).get("parts", []) if p["part"] == "verbatim")
    print(
        f"  first release the lineage blocks: {first}; the union of all {a.releases} judged as one release: "
        f"{union.status.value} (verbatim {uv['exposed']} vs {uv['exposed_holdout']})",
        flush=True,
    )
    return {
        "releases": rows,
        "first_blocked": first,
        "union_alone": union.status.value,
        "union_verbatim": uv["exposed"],
    }


def clean(sp: Any, a: argparse.Namespace, rng: np.random.Generator) -> dict[str, Any]:
    """``--clean`` lineages of ``--looks`` releases of unseen rows only, drawn from ``--pool`` releases."""
    fresh = min(a.fresh, sp.release.height // 2)
    t0 = time.perf_counter()
    evs = [
        _judge(sp.train, sp.control, sp.release[np.sort(rng.choice(sp.release.height, fresh, replace=False))])
        for _ in range(a.pool)
    ]
    alone = sum(ev.verdict.value == "fail" for ev in evs)
    blocked, at = 0, []
    for _ in range(a.clean):
        lin = Lineage("clean")
        for j in rng.choice(a.pool, min(a.looks, a.pool), replace=False):
            if lin.judge(evs[j])["status"] == "fail":
                blocked += 1
                at.append(lin.n)
                break
        lin.close()
    print(
        f"  clean: {blocked}/{a.clean} lineages of {a.looks} releases blocked (at looks {at}); releases "
        f"failing alone {alone}/{a.pool}; {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return {
        "blocked": blocked,
        "lineages": a.clean,
        "looks": a.looks,
        "at": at,
        "alone_fail": alone,
        "pool": a.pool,
    }


def resamples(table: str, df: pl.DataFrame, folder: Path) -> list[dict[str, Any]]:
    """One lineage per training split with DP draws in ``folder`` (``{table}_{seed}_*.parquet``,
    benchmarks/dp_resamples.py): each split's draws judged alone and as one lineage."""
    from dagster_privacy.calibration import leaky_split

    seeds: dict[int, list[Path]] = {}
    for f in sorted(folder.glob(f"{table}_*.parquet")):
        head = f.name[len(table) + 1 :].split("_", 1)[0]
        if head.isdigit():
            seeds.setdefault(int(head), []).append(f)
    out = [_dp_lineage(leaky_split(df, 0.0, seed=s), s, files) for s, files in sorted(seeds.items())]
    if out:
        blocked = sum(o["blocked"] > 0 for o in out)
        print(f"  DP lineages: {blocked} of {len(out)} blocked at any look", flush=True)
    return out


def _dp_lineage(sp: Any, seed: int, files: list[Path]) -> dict[str, Any]:
    lin, out, rels = Lineage("dp"), [], []
    for f in files:
        rel = pl.read_parquet(f).select(sp.train.columns)
        rels.append(rel)
        ev = _judge(sp.train, sp.control, rel)
        d = lin.judge(ev)
        out.append(
            {
                "file": f.name,
                "alone": ev.verdict.value,
                "lineage": d["status"],
                "union_verbatim": _verbatim(d)["exposed"],
                "holdout": _verbatim(d)["exposed_holdout"],
            }
        )
    lin.close()
    union = _judge(sp.train, sp.control, pl.concat(rels))["exposed_records"]
    blocked = [o["file"] for o in out if o["lineage"] == "fail"]
    print(
        f"  DP resamples, split seed {seed}: {len(files)} draws of one fitted generator; alone failing "
        f"{sum(o['alone'] == 'fail' for o in out)}; lineage blocks {len(blocked)} ({blocked[:3]}); their "
        f"union as one release: {union.status.value}; union verbatim {out[-1]['union_verbatim']} vs "
        f"{out[-1]['holdout']}",
        flush=True,
    )
    return {"seed": seed, "releases": out, "blocked": len(blocked), "union_alone": union.status.value}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", default=",".join(DEFAULT_TABLES))
    ap.add_argument("--releases", type=int, default=12)
    ap.add_argument("--per", type=int, default=5)
    ap.add_argument("--fresh", type=int, default=4000)
    ap.add_argument("--clean", type=int, default=20)
    ap.add_argument("--looks", type=int, default=20)
    ap.add_argument("--pool", type=int, default=40)
    ap.add_argument("--resamples", default=None)
    ap.add_argument("--only", default="twelve,overlap,resampled,clean,resamples")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out" / "lineage.jsonl"))
    a = ap.parse_args()
    from validity_data import load

    from dagster_privacy.calibration import leaky_split

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    only = set(a.only.split(","))
    for table in a.tables.split(","):
        sp = leaky_split(load(table), 0.0, seed=0)
        pooled = pl.concat([sp.train, sp.control])
        unique = np.flatnonzero(~pooled.is_duplicated().to_numpy()[: sp.train.height])
        rng = np.random.default_rng(56)
        unique = rng.permutation(unique)
        print(
            f"\n{table}: train {sp.train.height:,}, holdout {sp.control.height:,}, unseen "
            f"{sp.release.height:,}",
            flush=True,
        )
        result: dict[str, Any] = {"table": table}
        if "twelve" in only:
            print(f" {a.releases} releases, {a.per} other records copied verbatim each:")
            result["twelve"] = series(sp, unique, a, None, rng)
        if "overlap" in only:
            print(f" {a.releases} releases, {a.per} records each drawn from the same {2 * a.per}:")
            result["overlap"] = series(sp, unique, a, 2 * a.per, rng)
        if "resampled" in only:
            print(f" a generator that memorised {a.releases * a.per} records, drawn {a.releases} times:")
            result["resampled"] = series(sp, unique, a, a.releases * a.per, rng)
        if "clean" in only:
            result["clean"] = clean(sp, a, rng)
        if "resamples" in only and a.resamples:
            result["resamples"] = resamples(table, load(table), Path(a.resamples))
        with out.open("a") as fh:
            fh.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
