"""Fixtures the test modules share, and where their helpers are found: tests/support/ (servers, the
browser, the policies' gates, the docs' blocks), and the modules other directories import from
(tests/pipeline/test_signoff.py's Env, tests/console/test_console.py's Served, tests/lineage/lineage_data)."""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

TESTS = Path(__file__).parent
sys.path[:0] = [str(TESTS / d) for d in ("support", "pipeline", "console", "lineage")]

from postgres_server import bin_dir, server  # noqa: E402

from dagster_privacy.calibration import leaky_split  # noqa: E402
from dagster_privacy.demo import load_demo  # noqa: E402

# the privacy checks write their evidence report by default (issue 46): under a temporary folder here,
# never the home directory of the machine running the suite (an ephemeral instance has no directory)
os.environ.setdefault("DAGSTER_PRIVACY_REPORTS", tempfile.mkdtemp(prefix="dp_test_reports_"))


@dataclasses.dataclass
class Release:
    real: pl.DataFrame
    holdout: pl.DataFrame
    clean: pl.DataFrame
    leaky: pl.DataFrame


def _in_domain(df: pl.DataFrame, real: pl.DataFrame) -> pl.DataFrame:
    from dagster_privacy.pipeline.demo_run import in_domain

    return in_domain(df, real)


@pytest.fixture(scope="module")
def release() -> Release:
    data = load_demo().head(1200)
    clean, leaky = leaky_split(data, 0.0, seed=0), leaky_split(data, 0.3, seed=0)
    return Release(
        clean.train,
        clean.control,
        _in_domain(clean.synthetic, clean.train),
        _in_domain(leaky.synthetic, leaky.train),
    )


@pytest.fixture(scope="module")
def pg() -> Iterator[str]:
    """A real PostgreSQL server for the module (tests/support/postgres_server.py); skipped where none is
    installed, except under CI=true (.ci/run installs it)."""
    if bin_dir() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed: .ci/run installs it with apt")
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    with server() as base:
        yield base


#: the files of the long whole-pipeline and walkthrough tests (Dagster runs, the CLI in subprocesses, a
#: browser, servers, Ray, calibration sweeps): marked ``slow``, so that ``-m "not slow"`` is a quick pass
SLOW_FILES = frozenset({
    "calibration/test_calibration_demo_walkthrough.py", "calibration/test_calibration_walkthrough.py",
    "calibration/test_calibration.py", "pipeline/test_walkthroughs.py", "engine/test_executors.py",
    "lineage/test_pg_ledger.py", "lineage/test_lineage_cli.py", "lineage/test_lineage.py",
    "pipeline/test_pipeline_cli.py", "pipeline/test_asset_publication.py", "pipeline/test_governance.py",
    "pipeline/test_scaffold.py", "pipeline/test_postgres.py", "pipeline/test_lineage_check.py",
    "pipeline/test_dagster_ui.py", "pipeline/test_dagster_ui_partitions.py", "pipeline/test_partitions.py",
    "pipeline/test_signoff.py", "pipeline/test_ray_check.py", "pipeline/test_own_assets.py",
    "cli/test_hostile_cli.py", "decision/test_validity.py", "console/test_console.py",
    "console/test_console_lineage.py", "console/test_console_proxy.py", "console/test_console_releases.py",
    "test_docs_blocks.py",
})  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(TESTS).as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
