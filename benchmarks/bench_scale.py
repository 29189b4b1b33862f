"""What the evaluation costs as the rows grow (issue 22): every id of the standard policy, Adult-shaped
tables (scale_data.py: train N, holdout N/2, synthetic 0.7 N with 0.2 N copied), in-process and on a
local Ray with 2 workers. Prints wall seconds and peak memory of each `dagster-privacy evaluate` run (a
child process; on Ray the driver's peak, the workers' in their own line), the per-stage seconds from
the evaluation's own timings, the JSON identity of the two runs, and the GEMM floors measured in the
same run: the float32 product synthetic × realᵀ of the euclidean encodings, and the same product over
the dimensions the engine keeps in it (sparse_dims.SparseDims), the part of the synthetic→real query no
selection can save.

    python benchmarks/bench_scale.py --rows 16000,32000,64000 [--no-ray] [--work-dir /tmp/scale]

Under contention (issue 35): ``--contend K`` runs the in-process evaluation R times quiet and R times
beside K busy processes (each a pure-Python spin loop at nice 0, bounded, stopped at the end), and
prints the medians, CPU time / wall, and each stage's slowdown against its quiet time;
``--threads N`` passes ``--threads N`` to the evaluation.

    python benchmarks/bench_scale.py --rows 64000 --no-ray --contend 2 --repeat 3 [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench_seed000 import run_measured
from scale_data import write_tables

BIN = Path(sys.executable).parent


def gemm_floor(train: Path, synthetic: Path, holdout: Path) -> tuple[float, int, float, int]:
    """Seconds of the float32 product synthetic × realᵀ (1024-row tiles into one buffer) and its width;
    then the same over the dimensions the engine keeps in its product (sparse_dims.SparseDims: the rare
    ones' pairs are added outside it), the floor of that product alone."""
    import numpy as np

    from dagster_privacy.engine.sparse_dims import SparseDims
    from dagster_privacy.evaluate import prepare

    ctx, _ = prepare(str(train), str(synthetic), str(holdout))
    q, r = ctx.euclidean("synthetic"), ctx.euclidean("real")
    dense = SparseDims.split(q, r).dense
    out = []
    for qq, rr in ((q, r), (np.ascontiguousarray(q[:, dense]), r[:, dense])):
        rt = np.ascontiguousarray(rr.T)
        buf = np.empty((1024, rr.shape[0]), dtype=np.float32)
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            for s in range(0, qq.shape[0], 1024):
                part = qq[s : s + 1024]
                np.matmul(part, rt, out=buf[: part.shape[0]])
            best = min(best, time.perf_counter() - t0)
        out += [best, int(rr.shape[1])]
    return out[0], out[1], out[2], out[3]


def evaluate(
    paths: dict[str, Path], out: Path, ray: bool, threads: int | None = None
) -> tuple[float, float, dict]:
    cmd = [
        str(BIN / "dagster-privacy"),
        "evaluate",
        "--real",
        str(paths["train"]),
        "--holdout",
        str(paths["holdout"]),
        "--synthetic",
        str(paths["synthetic"]),
        "--json",
        str(out),
    ]
    if ray:
        cmd += ["--ray", "local"]
    if threads:
        cmd += ["--threads", str(threads)]
    env = {**os.environ, "RAY_DEDUP_LOGS": "0"}
    wall, peak, rc, _, err = run_measured(cmd, env=env)
    if rc not in (0, 1):
        raise SystemExit(f"evaluate failed ({rc}): {err.strip().splitlines()[-1] if err.strip() else ''}")
    return wall, peak, json.loads(out.read_text())
    # fmt: skip


def stages(doc: dict) -> dict[str, float]:
    t = doc["timings"]
    queries = t.get("queries", {})
    knn = sum(v for k, v in queries.items() if "→" in k)
    return {
        "total": t["total"],
        "encode": t["encode"],
        "neighbour queries": knn,
        "other shared work": sum(queries.values()) - knn,
        "metrics": sum(t["metrics"].values()),
    }


def differences(doc: dict, saved: Path) -> str:
    """'identical' apart from timings, or which metric ids and top-level entries differ from the saved
    run's, with the change of each figure that moved (value, raw, baseline)."""
    mine, other = dict(doc), json.loads(saved.read_text())
    mine.pop("timings", None), other.pop("timings", None)
    if mine == other:
        return "identical"
    out = [k for k in sorted(set(mine) | set(other)) if k != "metrics" and mine.get(k) != other.get(k)]
    theirs = {m["id"]: m for m in other.get("metrics", [])}
    for m in mine.get("metrics", []):
        o = theirs.get(m["id"])
        if o != m:
            moved = [
                f"{f} {o.get(f)} → {m.get(f)}"
                for f in ("value", "raw", "baseline")
                if o is not None and o.get(f) != m.get(f)
            ]
            out.append(m["id"] + (f" ({'; '.join(moved)})" if moved else ""))
    return "DIFFERENT: " + ", ".join(out)


SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def contended(paths: dict[str, Path], d: Path, k: int, repeat: int, threads: int | None) -> None:
    """Quiet runs, then runs beside ``k`` spinning processes: medians and per-stage slowdowns."""
    import statistics

    def runs(label: str) -> list[tuple[float, float, float, dict]]:
        out = []
        for i in range(repeat):
            before = os.times()
            wall, peak, doc = evaluate(paths, d / f"{label}{i}.json", False, threads)
            after = os.times()
            cpu = (after.children_user - before.children_user) + (
                after.children_system - before.children_system
            )
            out.append((wall, peak, cpu, doc))
        return out

    quiet = runs("quiet")
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=3600)]) for _ in range(k)]
    try:
        time.sleep(1.0)
        busy = runs("busy")
    finally:
        for p in spinners:
            p.kill()
            p.wait()

    def per_stage(rs: list[tuple[float, float, float, dict]]) -> dict[str, float]:
        keys = set().union(*(r[3]["timings"]["metrics"] for r in rs))
        stage = {m: statistics.median(r[3]["timings"]["metrics"].get(m, 0.0) for r in rs) for m in keys}
        stage["neighbour queries"] = statistics.median(stages(r[3])["neighbour queries"] for r in rs)
        stage["encode"] = statistics.median(r[3]["timings"]["encode"] for r in rs)
        return stage

    q_wall, b_wall = (statistics.median(r[0] for r in rs) for rs in (quiet, busy))
    q_cpu = statistics.median(r[2] / r[0] for r in quiet)
    peak = max(r[1] for r in quiet + busy)
    print(
        f"{'':8s} quiet: median {q_wall:.1f} s of {repeat} (CPU time / wall {q_cpu:.2f}, peak {peak:.0f} MB)"
    )
    print(f"{'':8s} beside {k} busy processes: median {b_wall:.1f} s = {b_wall / q_wall:.2f}x quiet")
    qs, bs = per_stage(quiet), per_stage(busy)
    rows = sorted(((bs[s] / qs[s], s) for s in qs if qs[s] > 0.05), reverse=True)
    print(f"{'':8s} stage slowdowns (stages over 0.05 s quiet), worst first:")
    for ratio, s in rows:
        print(f"{'':10s}{s:28s} {qs[s]:7.2f} s -> {bs[s]:7.2f} s  {ratio:.2f}x")
    a, b = dict(quiet[0][3]), dict(busy[0][3])
    a.pop("timings"), b.pop("timings")
    print(f"{'':8s} JSON quiet vs busy, apart from timings: {'identical' if a == b else 'DIFFERENT'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="16000,32000,64000", help="training rows N, comma-separated")
    ap.add_argument("--no-ray", action="store_true", help="in-process only")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/dagster_privacy_scale"))
    ap.add_argument("--contend", type=int, default=0, help="K busy processes beside the evaluation")
    ap.add_argument("--repeat", type=int, default=3, help="runs per condition with --contend (median)")
    ap.add_argument("--threads", type=int, default=None, help="pass --threads N to the evaluation")
    ap.add_argument("--save-json", type=Path, default=None, help="keep each in-process JSON as DIR/n<N>.json")
    ap.add_argument(
        "--compare", type=Path, default=None, help="compare each in-process JSON with DIR/n<N>.json"
    )
    a = ap.parse_args()
    rows = [int(x) for x in a.rows.split(",") if x]
    print(
        f"{'N':>8s} {'run':>10s} {'wall s':>8s} {'peak MB':>8s} {'queries s':>9s} {'metrics s':>9s}  slowest"
    )
    for n in rows:
        d = a.work_dir / f"n{n}"
        paths = write_tables(n, d)
        if a.contend:
            print(f"{n:8d} in-process, --threads {a.threads or 'default'}")
            contended(paths, d, a.contend, a.repeat, a.threads)
            sys.stdout.flush()
            subprocess.run(["rm", "-rf", str(d)], check=False)
            continue
        runs = {"in-process": evaluate(paths, d / "in_process.json", False, a.threads)}
        if not a.no_ray:
            runs["ray (2)"] = evaluate(paths, d / "ray.json", True)
        for label, (wall, peak, doc) in runs.items():
            st = stages(doc)
            slow = sorted(doc["timings"]["metrics"].items(), key=lambda kv: -kv[1])[:3]
            print(
                f"{n:8d} {label:>10s} {wall:8.1f} {peak:8.0f} {st['neighbour queries']:9.1f} "
                f"{st['metrics']:9.1f}  " + ", ".join(f"{k} {v:.1f}" for k, v in slow)
            )
        floor, width, dense_floor, dense_width = gemm_floor(
            paths["train"], paths["synthetic"], paths["holdout"]
        )
        queries = runs["in-process"][2]["timings"]["queries"]
        q = next((v for k, v in queries.items() if k.startswith("euclidean synthetic→real")), None)
        what = "synthetic→real query"
        if q == 0.0:  # read off the real→synthetic blocks (pairs.py): the pair's time is booked there
            q = next((v for k, v in queries.items() if k.startswith("euclidean real→synthetic")), None)
            what = "real↔synthetic pair (both directions, each pair once)"
        ratio = (
            "—"
            if q is None
            else f"{q:.2f} s = {q / floor:.2f}× the floor, {q / dense_floor:.2f}× the dense one"
        )
        print(
            f"{'':8s} GEMM floor synthetic×realᵀ ({width} dims) {floor:.2f} s, over the {dense_width} dense "
            f"dims {dense_floor:.2f} s; {what} {ratio}"
        )
        if len(runs) == 2:
            here, there = (dict(r[2]) for r in runs.values())
            here.pop("timings"), there.pop("timings")
            same = "identical" if here == there else "DIFFERENT"
            print(f"{'':8s} JSON in-process vs Ray, apart from timings: {same}")
        for label, (_, _, doc) in runs.items():
            print(f"{'':8s} {label} stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages(doc).items()))
        mine = runs["in-process"][2]
        if a.save_json:
            a.save_json.mkdir(parents=True, exist_ok=True)
            (a.save_json / f"n{n}.json").write_text(json.dumps(mine))
        if a.compare and (a.compare / f"n{n}.json").is_file():
            saved = a.compare / f"n{n}.json"
            print(f"{'':8s} JSON vs {saved}, apart from timings: {differences(mine, saved)}")
        sys.stdout.flush()
        subprocess.run(["rm", "-rf", str(d)], check=False)


if __name__ == "__main__":
    main()
