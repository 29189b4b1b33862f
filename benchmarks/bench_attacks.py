"""Benchmark of the attack family (seed 004 §4.3) on the Adult leaky split: seconds per attack, peak memory.

    python benchmarks/bench_attacks.py                       # f = 0.2: seconds per attack and total
    python benchmarks/bench_attacks.py --fractions 0,0.2,1   # E per attack at each leak fraction
    python benchmarks/bench_attacks.py --vs-anonymeter       # side by side with the reference

The splits come from ../shared/tools/make_leaky_splits.py (seed 0); --vs-anonymeter runs
../shared/tools/anonymeter_ref.sh --n-attacks 2000 --link-neighbors 1 on the same files and sets our
parameters to match it (its Adult linkability split, exact matching of secrets, 3-column predicates).
Figures only: no value of a record is printed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
IDS = [
    "singling_out_univariate",
    "singling_out_multivariate",
    "linkability",
    "inference_distance",
    "inference_ml",
    "gtcap",
    "domias",
    "membership_inference",
]
ADULT_AUX = [
    ["workclass", "education", "hours-per-week", "capital-loss", "capital-gain"],
    ["race", "sex", "fnlwgt", "age", "native-country"],
]
MATCH_REFERENCE = {
    "singling_out_multivariate": {"min_cols": 3, "max_cols": 3},
    "linkability": {"columns": ADULT_AUX, "k": 1},
    "inference_distance": {"tolerance": 0.0},
}


def splits(out: Path, fraction: float, data: Path) -> Path:
    d = out / f"f{fraction:g}"
    if not (d / "synthetic.csv").exists():
        subprocess.run(
            [
                sys.executable,
                str(SHARED / "tools" / "make_leaky_splits.py"),
                "--input",
                str(data),
                "--out-dir",
                str(d),
                "--leak-fraction",
                str(fraction),
                "--seed",
                "0",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return d


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def battery(
    d: Path, params: dict[str, dict[str, Any]] | None = None, ids: list[str] = IDS
) -> tuple[dict[str, Any], dict[str, float], float]:
    """Run the attacks on one split; (results, wall seconds per attack incl. the encodings it
    triggered, seconds to load and prepare the tables)."""
    from dagster_privacy.evaluate import prepare

    reg = importlib.import_module("dagster_privacy.metrics.registration")
    specs = importlib.import_module("dagster_privacy.metrics").registry()
    t0 = time.perf_counter()
    ctx, _ = prepare(d / "train.csv", d / "synthetic.csv", d / "control.csv", seed=0)
    load = time.perf_counter() - t0
    results, secs = {}, {}
    for mid in ids:
        t = time.perf_counter()
        results[mid] = reg.run(specs[mid], ctx, (params or {}).get(mid))
        secs[mid] = time.perf_counter() - t
    return results, secs, load


def fmt_ci(ci: Any) -> str:
    return "[   -   ,   -   ]" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def print_battery(results: dict[str, Any], secs: dict[str, float], load: float) -> None:
    print(f"{'attack':<27} {'E':>7} {'95% CI':<18} {'e_train':>8} {'e_control':>9} {'seconds':>8}")
    for mid, r in results.items():
        e_t = r.details.get("e_train", {}).get("rate")
        e_c = r.details.get("e_control", {}).get("rate")
        val = "  n/a  " if r.value is None else f"{r.value:7.4f}"
        extra = f"  ({r.status.value}: {r.reason})" if r.reason else ""
        print(
            f"{mid:<27} {val} {fmt_ci(r.ci):<18} {'' if e_t is None else f'{e_t:8.4f}'} "
            f"{'' if e_c is None else f'{e_c:9.4f}'} {secs[mid]:8.2f}{extra}"
        )
    total = sum(secs.values())
    print(
        f"{'attacks total':<27} {total:.2f} s   (+ load/prepare {load:.2f} s = {total + load:.2f} s); "
        f"peak memory {peak_mb():.0f} MB"
    )


def reference(d: Path, out: Path, reuse: bool = False) -> dict[str, Any]:
    js = out / f"anonymeter_{d.name}.json"
    if reuse and js.exists():
        print(f"reusing {js}")
        return json.loads(js.read_text())
    cmd = [
        str(SHARED / "tools" / "anonymeter_ref.sh"),
        "--train",
        str(d / "train.csv"),
        "--control",
        str(d / "control.csv"),
        "--synthetic",
        str(d / "synthetic.csv"),
        "--n-attacks",
        "2000",
        "--link-neighbors",
        "1",
        "--json",
        str(js),
    ]
    print("running:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(js.read_text())


def at95(rate: dict[str, Any] | None) -> dict[str, Any] | None:
    """Our rate with its plain 95 % Wilson interval (per-column details carry Bonferroni intervals)."""
    if rate is None:
        return None
    from dagster_privacy.metrics.stats import wilson

    w = wilson(rate["successes"], rate["n"])
    return {"center": w.center, "ci": [w.low, w.high], "error": w.error}


def z_diff(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    """Two-sample z of the difference (the two tools attack different random samples of targets)."""
    if a is None or b is None:
        return "  -  "
    se = ((a["error"] / 1.96) ** 2 + (b["error"] / 1.96) ** 2) ** 0.5
    return f"{(a['center'] - b['value']) / se:+5.2f}" if se > 0 else "  -  "


def _ours(rate: dict[str, Any] | None) -> str:
    return "      -        " if rate is None else f"{rate['center']:.4f} {fmt_ci(rate['ci'])}"


def _ref(rate: dict[str, Any] | None) -> str:
    if rate is None:
        return "      -        "
    v, e = rate["value"], rate["error"]
    return f"{v:.4f} [{max(0.0, v - e):.4f}, {min(1.0, v + e):.4f}]"


def overlap(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    """Whether each point estimate lies within the other's 95 % interval: 'both', 'one' or 'no'."""
    if a is None or b is None:
        return "-"
    va, (la, ha) = a["center"], a["ci"]
    vb, lb, hb = b["value"], b["value"] - b["error"], b["value"] + b["error"]
    n = int(lb <= va <= hb) + int(la <= vb <= ha)
    return ("no", "one", "both")[n]


def vs_anonymeter(d: Path, out: Path, reuse: bool = False) -> None:
    ref = reference(d, out, reuse)
    by = {r["attack"]: r for r in ref["results"]}
    ours, secs, load = battery(d, MATCH_REFERENCE, IDS[:4])
    print(
        f"\nside by side on {d} (ours with the reference's settings; e = success rate on training "
        f"records, Wilson centre and 95 % CI; within = each centre in the other's CI (both/one/no); "
        f"z = difference / its two-sample standard error: the tools attack different random targets)"
    )
    print(
        f"{'attack':<30} {'e_train ours':<26} {'e_train anonymeter':<26} {'within':<6} {'z':>5} "
        f"{'risk ours':<25} {'risk anonymeter':<25} {'s ours':>7} {'s ref':>7} {'speed':>6}"
    )

    def line(name: str, o_rate: Any, r: dict[str, Any], o_risk: float | None, o_ci: Any, s_o: float) -> None:
        rr = f"{r['risk']:.4f} {fmt_ci(r['ci'])}" if r.get("risk") is not None else "error"
        orisk = f"{o_risk:.4f} {fmt_ci(o_ci)}" if o_risk is not None else "n/a"
        o95, ra = at95(o_rate), r.get("attack_rate")
        print(
            f"{name:<30} {_ours(o95):<26} {_ref(ra):<26} "
            f"{overlap(o95, ra):<6} {z_diff(o95, ra):>5} {orisk:<25} {rr:<25} {s_o:7.2f} "
            f"{r['seconds']:7.2f} {r['seconds'] / max(s_o, 1e-9):5.0f}x"
        )

    so_u, so_m, ln = ours["singling_out_univariate"], ours["singling_out_multivariate"], ours["linkability"]
    line(
        "singling_out univariate",
        so_u.details.get("e_train"),
        by["singling_out_uni"],
        so_u.value,
        so_u.ci,
        secs["singling_out_univariate"],
    )
    line(
        "singling_out multivariate(3)",
        so_m.details.get("e_train"),
        by["singling_out_multi(n_cols=3)"],
        so_m.value,
        so_m.ci,
        secs["singling_out_multivariate"],
    )
    line(
        "linkability k=1",
        ln.details.get("e_train"),
        by["linkability(k=1)"],
        ln.value,
        ln.ci,
        secs["linkability"],
    )
    inf = ours["inference_distance"]
    per = inf.details.get("per_column", {})
    n_cols = max(1, len(per))
    ref_total = 0.0
    for col in sorted(per):
        r = by.get(f"inference[{col}]")
        if r is None:
            continue
        ref_total += r["seconds"]
        p = per[col]
        line(
            f"inference[{col}]",
            p.get("e_train"),
            r,
            p.get("risk"),
            p.get("risk_ci"),
            secs["inference_distance"] / n_cols,
        )
    print(
        f"{'inference (all columns)':<30} ours {secs['inference_distance']:.2f} s vs anonymeter "
        f"{ref_total:.2f} s "
        f"= {ref_total / max(secs['inference_distance'], 1e-9):.0f}x  (per-column ours = total / {n_cols})"
    )
    print(
        f"ours: load/prepare {load:.2f} s (shared by all attacks); anonymeter total "
        f"{ref['summary']['total_seconds']:.1f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=SHARED / "datasets" / "adult.csv")
    ap.add_argument("--out-dir", type=Path, default=None, help="where the splits go (default: a temp dir)")
    ap.add_argument("--fraction", type=float, default=0.2)
    ap.add_argument("--fractions", default=None, help="comma list: run the battery at each leak fraction")
    ap.add_argument("--vs-anonymeter", action="store_true")
    ap.add_argument(
        "--reuse-reference", action="store_true", help="reuse a reference JSON already in --out-dir"
    )
    a = ap.parse_args()
    out = a.out_dir or Path(tempfile.mkdtemp(prefix="bench_attacks_"))
    out.mkdir(parents=True, exist_ok=True)
    if a.vs_anonymeter:
        vs_anonymeter(splits(out, a.fraction, a.data), out, a.reuse_reference)
        return
    for f in [float(x) for x in a.fractions.split(",")] if a.fractions else [a.fraction]:
        d = splits(out, f, a.data)
        print(f"\nleak fraction f = {f:g}  ({d})")
        print_battery(*battery(d))


if __name__ == "__main__":
    main()
