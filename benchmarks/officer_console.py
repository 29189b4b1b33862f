"""The officer's console on the four releases of officer_readings.py (issue 57): a clean release, a 20-copy
leak below the printed floor, a 20-copy leak above it, and a table too small to decide — each released
through the Dagster release job under ``standard`` with a required sign-off, then opened in the console
in Chromium by a signed-in officer.

    python benchmarks/officer_console.py [--out docs/img]

Prints each case's verdict and the console page's sentence on exposed records, and writes
``console-{case}.png`` (the release page, 1200 × 1400) to ``--out``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# officer_readings' cases; the tests' browser driver and console helpers (Served, sign_in)
TESTS = HERE.parent / "tests"
sys.path[:0] = [str(HERE), *(str(TESTS / d) for d in ("support", "pipeline", "console"))]

POLICY = {"preset": "standard", "require_signoff": True, "seed": 0}


def released(root: Path, case: str) -> tuple[Path, str]:
    """Release the case's tables through the Dagster release job; (Dagster home, release id)."""
    import dagster as dg
    from officer_readings import CASES, release

    from dagster_privacy.pipeline import ReleaseSettings, build_release_definitions
    from dagster_privacy.pipeline.demo_run import write_tables
    from dagster_privacy.pipeline.resources import RELEASE_ID_TAG

    train, synthetic, holdout = release(*CASES[case])
    home = root / case / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    database = root / case / "release.duckdb"
    write_tables(database, {"real": train, "holdout": holdout, "synthetic": synthetic})
    target = str(root / case / "pub.duckdb")
    settings = ReleaseSettings(database=str(database), policy=POLICY, publish_target=target)
    defs = build_release_definitions(settings=settings)
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
        defs.resolve_job_def("privacy_release_job").execute_in_process(
            instance=instance, raise_on_error=False, run_config=quiet, tags={RELEASE_ID_TAG: case}
        )
    finally:
        instance.dispose()
    return home, case


def serve(home: Path, root: Path):  # -> the console, served (tests/console/test_console.py's Served)
    from test_console import PASSWORD, Served

    from dagster_privacy.console import ConsoleSettings
    from dagster_privacy.console.identity import Users

    users = root / "users.json"
    if not users.exists():
        Users(users).add("dana", "officer", PASSWORD)
    return Served(ConsoleSettings(instance_dir=str(home), audit=str(root / "audit.duckdb"), users=str(users)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE.parent / "docs" / "img"))
    a = ap.parse_args()
    from browser import Browser
    from officer_readings import CASES
    from test_console import sign_in

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for case in CASES:
            t0 = time.perf_counter()
            home, release_id = released(root, case)
            served = serve(home, root)
            try:
                with Browser(width=1200, height=1400) as b:
                    sign_in(b, served.url)  # the console's form, as an officer signs in
                    b.goto(f"{served.url}/release/{release_id}")
                    b.wait_for("document.readyState === 'complete'")
                    text = b.js("document.body.innerText")
                    shot = b.screenshot(out / f"console-{case}.png")
            finally:
                served.stop()
            verdict = re.search(r"Latest evaluation: (\w+)", text)
            sentence = next((s for s in re.split(r"(?<=\.)\s+", text) if "rare real record" in s), "")
            print(f"{case:12s} verdict {verdict.group(1) if verdict else '?'}; {shot.name} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
            print(f"    {' '.join(sentence.split())}", flush=True)


if __name__ == "__main__":
    main()
