"""Seed-000 benchmark (issue 10): the 17 metrics on Adult, and side by side with PrivEval.

    python benchmarks/bench_seed000.py [--adult ../shared/datasets/adult.csv] [--vs-priveval]
                                       [--priveval-mirror GITDIR] [--no-cli] [--keep DIR]

Splits come from ../shared/tools/make_leaky_splits.py (seed 0, --missing-as '?', so PrivEval, which
refuses missing values, reads the very same files):
  leaky  real = train.csv, synthetic = synthetic.csv of --leak-fraction 0.2
  clean  real = train.csv, synthetic = synthetic.csv of --leak-fraction 0 (= release.csv)
  halves real = train.csv, synthetic = control.csv + release.csv (the other half of Adult)
Each runs in a child process (its peak memory is its own) that prints, per metric, value, raw and
seconds; the seconds of each shared neighbour query (ctx.query_seconds) and of the encodings; the time
of one float32 product of the two encoded tables (synthetic × realᵀ, computed in the engine's chunks so
it does not add a 700 MB matrix to the peak); the total and the peak memory (ru_maxrss). Then a table
of each metric's value on leaky and clean, and the CLI on the halves.

--vs-priveval runs, on the leaky files, our CLI (`dagster-privacy evaluate ... --metrics <the 17>`)
and ../shared/tools/priveval_ref.sh, each as a whole process (wall clock, and peak memory from
os.wait4's rusage of that child), and prints both and the ratio. PRIVEVAL_MIRROR (or
--priveval-mirror) is a git dir of github:hereditary-eu/PrivEval (the search tool's `fetch`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
IDS = [
    "zcap",
    "gcap",
    "air",
    "crp",
    "cvp",
    "dvp",
    "detection_mlp",
    "authenticity",
    "identifiability",
    "nsnd",
    "nndr",
    "dcr",
    "mdcr",
    "nnaa",
    "mir",
    "hidden_rate",
    "hitting_rate",
]
#: a metric "separates" leaky from clean when its value moves by more than this (and in the risk direction)
SEPARATES = 0.02


def make_split(adult: Path, out: Path, fraction: float) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(SHARED / "tools" / "make_leaky_splits.py"),
            "--input",
            str(adult),
            "--out-dir",
            str(out),
            "--leak-fraction",
            str(fraction),
            "--seed",
            "0",
            "--missing-as",
            "?",
        ],
        check=True,
        capture_output=True,
    )
    return out


def concat_csv(parts: list[Path], out: Path) -> Path:
    """Text concatenation of CSVs with one header (values are copied as they are)."""
    with out.open("w") as f:
        for i, p in enumerate(parts):
            lines = p.read_text().splitlines(keepends=True)
            f.writelines(lines if i == 0 else lines[1:])
    return out


#: a small launcher between this process and the measured command: a child's ru_maxrss starts from the
#: high-water mark of the address space it was forked from (Linux records it at exec), so a command
#: spawned straight from a benchmark that had itself grown to 1.5 GB reported 1.5 GB whatever it used;
#: forked from this launcher (~10 MB) it reports its own peak, written (KiB) on the pipe argv[1] names.
_LAUNCH = """
import os, sys
fd, cmd = int(sys.argv[1]), sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.close(fd)
    try:
        os.execvp(cmd[0], cmd)
    except OSError:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(fd, str(usage.ru_maxrss).encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(cmd: list[str], *, env: dict[str, str] | None = None) -> tuple[float, float, int, str, str]:
    """Run a command as a child: (wall seconds, peak MB of the child and its waited children, rc, out,
    err). The child is forked from a small launcher (_LAUNCH), so its peak is its own."""
    t0 = time.perf_counter()
    read, write = os.pipe()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            p = subprocess.Popen(
                [sys.executable, "-c", _LAUNCH, str(write), *cmd],
                stdout=out,
                stderr=err,
                env=env,
                pass_fds=(write,),
            )
        finally:
            os.close(write)
        with os.fdopen(read) as pipe:
            peak_kib = pipe.read()
        p.wait()
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return wall, int(peak_kib or 0) / 1024.0, p.returncode, out.read(), err.read()


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


# ------------------------------------------------------------------------------------- child side


def _nothing(*_: object) -> None:
    return None


def child(real: str, synthetic: str, label: str) -> None:
    """One dataset in this process: every metric, the queries, the product, total and peak memory."""
    from dagster_privacy.decision.policy import resolve
    from dagster_privacy.engine.chunks import map_chunks
    from dagster_privacy.evaluate import prepare, run_metrics

    t0 = time.perf_counter()
    ctx, _ = prepare(real, synthetic)
    t_prep = time.perf_counter() - t0
    t1 = time.perf_counter()
    ev = run_metrics(ctx, resolve("report-only", IDS))
    t_metrics = time.perf_counter() - t1
    print(
        f"== {label}: real {ctx.n('real')} rows, synthetic {ctx.n('synthetic')} rows, "
        f"{len(ctx.schema.names)} columns; load + schema {t_prep:.2f} s"
    )
    print(f"  {'metric':18s} {'value':>7s} {'raw':>9s} {'seconds':>8s}")
    for r in ev:
        extra = f"  {r.status.value}: {r.reason}" if r.reason else ""
        print(f"  {r.id:18s} {_fmt(r.value):>7s} {_fmt(r.raw):>9s} {r.seconds:8.3f}{extra}")
    print("  shared work (seconds):")
    for name, sec in ctx.query_seconds.items():
        print(f"    {name:58s} {sec:7.3f}")
    print(f"    {'encodings (one-hot, codes, Φ^k)':58s} {ctx.encode_seconds:7.3f}")
    x_syn, x_real = ctx.euclidean("synthetic"), ctx.euclidean("real")
    tp = time.perf_counter()
    map_chunks(_nothing, None, x_syn, x_real)
    t_prod = time.perf_counter() - tp
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(
        f"  one float32 product synthetic × realᵀ ({x_syn.shape[0]} × {x_real.shape[0]}, "
        f"{x_real.shape[1]} dims, chunked): {t_prod:.3f} s"
    )
    print(
        f"  17 metrics: {t_metrics:.2f} s (load + schema + metrics {t_prep + t_metrics:.2f} s); "
        f"peak memory {peak:.0f} MB"
    )
    values = {r.id: (r.value, r.status.value) for r in ev}
    print(
        "JSON "
        + json.dumps(
            {
                "label": label,
                "values": values,
                "metrics_seconds": t_metrics,
                "peak_mb": peak,
                "product_seconds": t_prod,
            }
        )
    )


# ------------------------------------------------------------------------------------ parent side


def run_child(real: Path, synthetic: Path, label: str) -> dict:
    wall, peak, rc, out, err = run_measured(
        [sys.executable, __file__, "--child", str(real), str(synthetic), label]
    )
    if rc != 0:
        print(err, file=sys.stderr)
        raise SystemExit(f"child {label} failed ({rc})")
    data = {}
    for line in out.splitlines():
        if line.startswith("JSON "):
            data = json.loads(line[5:])
        else:
            print(line)
    print(f"  whole child process: {wall:.2f} s wall, peak {peak:.0f} MB\n")
    return data


def leaky_vs_clean(leaky: dict, clean: dict) -> None:
    print("== value per metric, leaky (f = 0.2) vs clean (f = 0)")
    print(f"  {'metric':18s} {'leaky':>7s} {'clean':>7s} {'Δ':>8s}  separates")
    for mid in IDS:
        (lv, ls), (cv, cs) = leaky["values"][mid], clean["values"][mid]
        if lv is None or cv is None:
            print(f"  {mid:18s} {ls:>7s} {cs:>7s} {'—':>8s}  —")
            continue
        d = lv - cv
        print(f"  {mid:18s} {lv:7.4f} {cv:7.4f} {d:+8.4f}  {'yes' if d > SEPARATES else 'no'}")
    print()


def vs_priveval(real: Path, synthetic: Path, mirror: str | None) -> None:
    script = SHARED / "tools" / "priveval_ref.sh"
    cli = shutil.which("dagster-privacy") or ""
    ours_cmd = ([cli] if cli else [sys.executable, "-m", "dagster_privacy.cli"]) + [
        "evaluate",
        "--real",
        str(real),
        "--synthetic",
        str(synthetic),
        "--metrics",
        ",".join(IDS),
        "--policy",
        "report-only",
    ]
    print("== side by side on the leaky split (whole processes, same files)")
    w_ours, m_ours, rc, _out, err = run_measured(ours_cmd)
    if rc not in (0, 1):
        print(err, file=sys.stderr)
        raise SystemExit(f"our CLI failed ({rc})")
    env = dict(os.environ)
    if mirror:
        env["PRIVEVAL_MIRROR"] = mirror
    w_pe, m_pe, rc, out, err = run_measured(
        ["bash", str(script), "--real", str(real), "--synthetic", str(synthetic)], env=env
    )
    if rc != 0:
        print(err, file=sys.stderr)
        raise SystemExit(f"priveval_ref.sh failed ({rc})")
    print("  PrivEval output:")
    for line in out.splitlines():
        print("    " + line)
    print(f"  dagster-privacy (17 metrics, CLI): {w_ours:7.2f} s wall, peak {m_ours:6.0f} MB")
    print(f"  PrivEval        (17 metrics)     : {w_pe:7.2f} s wall, peak {m_pe:6.0f} MB")
    print(f"  ratio PrivEval / ours: {w_pe / w_ours:.1f}× time, {m_pe / max(1.0, m_ours):.1f}× memory")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adult", default=str(SHARED / "datasets" / "adult.csv"))
    ap.add_argument("--vs-priveval", action="store_true")
    ap.add_argument("--priveval-mirror", default=os.environ.get("PRIVEVAL_MIRROR"))
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI run on the halves")
    ap.add_argument("--keep", default=None, help="write the splits here and keep them")
    ap.add_argument("--child", nargs=3, metavar=("REAL", "SYNTHETIC", "LABEL"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    base = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench_seed000_"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        leaky = make_split(Path(a.adult), base / "leaky", 0.2)
        clean = make_split(Path(a.adult), base / "clean", 0.0)
        halves = concat_csv([clean / "control.csv", clean / "release.csv"], base / "halves_synthetic.csv")
        r_leaky = run_child(leaky / "train.csv", leaky / "synthetic.csv", "leaky split f = 0.2")
        r_clean = run_child(clean / "train.csv", clean / "synthetic.csv", "clean split f = 0")
        run_child(clean / "train.csv", halves, "Adult halves (train vs control + release)")
        leaky_vs_clean(r_leaky, r_clean)
        if not a.no_cli:
            print("== CLI on Adult halves: dagster-privacy evaluate --metrics <the 17> --policy report-only")
            cli = shutil.which("dagster-privacy")
            cmd = ([cli] if cli else [sys.executable, "-m", "dagster_privacy.cli"]) + [
                "evaluate",
                "--real",
                str(clean / "train.csv"),
                "--synthetic",
                str(halves),
                "--metrics",
                ",".join(IDS),
                "--policy",
                "report-only",
            ]
            p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "160"})
            print(p.stdout)
            print(f"  exit code {p.returncode}\n")
        if a.vs_priveval:
            vs_priveval(leaky / "train.csv", leaky / "synthetic.csv", a.priveval_mirror)
    finally:
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
