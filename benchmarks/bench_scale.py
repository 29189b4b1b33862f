"""What the evaluation costs as the rows grow (issue 22): every id of the standard policy, Adult-shaped
tables (scale_data.py: train N, holdout N/2, synthetic 0.7 N with 0.2 N copied), in-process and on a
local Ray with 2 workers. Prints wall seconds and peak memory of each `dagster-privacy evaluate` run (a
child process; on Ray the driver's peak, the workers' in their own line), the per-stage seconds from
the evaluation's own timings, the JSON identity of the two runs, and the GEMM floors measured in the
same run: the float32 product synthetic × realᵀ of the euclidean encodings, and the same product over
the dimensions the engine keeps in it (sparse_dims.SparseDims), the part of the synthetic→real query no
selection can save.

    python benchmarks/bench_scale.py --rows 16000,32000,64000 [--no-ray] [--work-dir /tmp/scale]
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

    from dagster_privacy.evaluate import prepare
    from dagster_privacy.sparse_dims import SparseDims

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


def evaluate(paths: dict[str, Path], out: Path, ray: bool) -> tuple[float, float, dict]:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="16000,32000,64000", help="training rows N, comma-separated")
    ap.add_argument("--no-ray", action="store_true", help="in-process only")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/dagster_privacy_scale"))
    a = ap.parse_args()
    rows = [int(x) for x in a.rows.split(",") if x]
    print(
        f"{'N':>8s} {'run':>10s} {'wall s':>8s} {'peak MB':>8s} {'queries s':>9s} {'metrics s':>9s}  slowest"
    )
    for n in rows:
        d = a.work_dir / f"n{n}"
        paths = write_tables(n, d)
        runs = {"in-process": evaluate(paths, d / "in_process.json", False)}
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
        ratio = (
            "—"
            if q is None
            else f"{q:.2f} s = {q / floor:.2f}× the floor, {q / dense_floor:.2f}× the dense one"
        )
        print(
            f"{'':8s} GEMM floor synthetic×realᵀ ({width} dims) {floor:.2f} s, over the {dense_width} dense "
            f"dims {dense_floor:.2f} s; synthetic→real query {ratio}"
        )
        if len(runs) == 2:
            here, there = (dict(r[2]) for r in runs.values())
            here.pop("timings"), there.pop("timings")
            same = "identical" if here == there else "DIFFERENT"
            print(f"{'':8s} JSON in-process vs Ray, apart from timings: {same}")
        for label, (_, _, doc) in runs.items():
            print(f"{'':8s} {label} stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages(doc).items()))
        sys.stdout.flush()
        subprocess.run(["rm", "-rf", str(d)], check=False)


if __name__ == "__main__":
    main()
