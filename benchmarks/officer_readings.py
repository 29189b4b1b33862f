"""The officer's reading of four releases (issue 57): a clean release, a 20-copy leak below the printed
floor, a 20-copy leak above it, and a table too small to decide; each report rendered by Chromium.

    python benchmarks/officer_readings.py [--out docs/img] [--chromium chromium]

Real tables (validity_data: ISLR Wage, Fair; the 20 copies are unique training records copied
verbatim into the unseen rows of the leaky risk model's split, seed 0). Prints each case's verdict and
the report's sentence on exposed records (what an officer reads first), and writes
``report-{case}.png`` (the top of each report, 1200 × 1400) to ``--out``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from html import unescape
from pathlib import Path

import numpy as np
import polars as pl

CASES = {
    "clean": ("islr_wage", 0, None),
    "below-floor": ("statsmodels_fair", 20, None),
    "above-floor": ("islr_wage", 20, None),
    "too-small": ("islr_wage", 0, 160),
}


def release(table: str, copies: int, rows: int | None) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(train, synthetic, holdout) of the leaky split (seed 0), the first ``rows`` rows of the table."""
    from validity_data import load

    from dagster_privacy.calibration import leaky_split

    df = load(table)
    sp = leaky_split(df.head(rows) if rows else df, 0.0, seed=0)
    pooled = pl.concat([sp.train, sp.control])
    unique = np.flatnonzero(~pooled.is_duplicated().to_numpy()[: sp.train.height])
    picked = np.random.default_rng(57).choice(unique, size=copies, replace=False) if copies else []
    synthetic = pl.concat([sp.release, sp.train[np.sort(np.asarray(picked, dtype=int))]])
    return sp.train, synthetic, sp.control


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def reading(html: str) -> tuple[str, str]:
    """The report's headline (the summary's first line) and its sentence on exposed records."""
    summary = html.split('id="summary"', 1)[-1]
    head = re.search(r'<p class="lead">(.*?)</p>', summary, re.S)
    para = next((p for p in re.findall(r"<p[^>]*>(.*?)</p>", summary, re.S) if "rare real record" in p), "")
    return (_text(head.group(1)) if head else "", _text(para).split(". A release copying")[0] + ".")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "img"))
    ap.add_argument("--chromium", default="chromium")
    a = ap.parse_args()
    import dagster_privacy as dp
    from dagster_privacy.report.html import render_report

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for case, (table, copies, rows) in CASES.items():
            train, synthetic, holdout = release(table, copies, rows)
            ev = dp.evaluate(train, synthetic, holdout=holdout, policy="standard", seed=0, progress=False)
            html = render_report(ev)
            page = Path(tmp) / f"{case}.html"
            page.write_text(html, encoding="utf-8")
            shot = out / f"report-{case}.png"
            subprocess.run(
                [a.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--screenshot={shot}", "--window-size=1200,1400", page.as_uri()],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            floor = ((ev.detection_floor or {}).get("people") or {}).get("verbatim")
            print(f"{case:12s} {table} ({train.height:,} training rows, {copies} copied): verdict "
                  f"{ev.verdict.value}; verbatim floor {floor} people; {shot.name}", flush=True)  # fmt: skip
            for line in reading(html):
                print(f"    {line}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
