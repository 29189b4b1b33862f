"""The privacy check with its neighbour blocks on Ray (issue 22): a real local Ray started by
dagster-ray's ``LocalRay`` resource (2 CPUs, 200 MB object store), the check still one step, its
figures those of the in-process check."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from conftest import Release
from gates import STANDARD_CHECKS, covering

from dagster_privacy.pipeline import PrivacyRelease, ReadOnlyDuckDB, build_privacy_checks, build_table_asset
from dagster_privacy.pipeline import metadata as md
from dagster_privacy.pipeline.assets import DUCKDB_KEY, RELEASE_KEY
from dagster_privacy.pipeline.demo_run import write_tables

dagster_ray = pytest.importorskip("dagster_ray")

POLICY = covering(
    {
        "seed": 0,
        "metrics": {
            "crp": {"threshold": 0.05, "severity": "WARN"},
            "dcr_percentile": {"threshold": 0.02, "on": "ci_upper", "severity": "ERROR"},  # standard's
            "nndr": {"threshold": 0.9, "severity": "WARN"},
            "gcap": {"threshold": 0.9, "severity": "WARN"},  # the Hamming (mixed) kernel
        },
    }
)


def _checks(db: Path, ray_key: str | None) -> dict[str, dg.AssetCheckEvaluation]:
    asset = build_table_asset(
        key="synthetic_table", source="synthetic", role="synthetic", release_resource_key=RELEASE_KEY
    )
    checks = build_privacy_checks(
        asset="synthetic_table", policy=POLICY, real="real", holdout="holdout", ray_resource_key=ray_key
    )
    resources = {DUCKDB_KEY: ReadOnlyDuckDB(database=str(db)), RELEASE_KEY: PrivacyRelease()}
    if ray_key:
        resources[ray_key] = dagster_ray.LocalRay(
            ray_init_options={"num_cpus": 2, "object_store_memory": 200 * 2**20, "include_dashboard": False}
        )
    res = dg.materialize(
        [asset, *checks], resources=resources, instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
    )
    return {e.check_name: e for e in res.get_asset_check_evaluations()}


def test_the_check_on_ray_records_the_figures_of_the_in_process_check(
    tmp_path: Path, release: Release
) -> None:
    db = tmp_path / "release.duckdb"
    write_tables(db, {"real": release.real, "holdout": release.holdout, "synthetic": release.leaky})
    here, there = _checks(db, None), _checks(db, "ray")
    assert set(there) == set(POLICY["metrics"]) | {"privacy_risk_membership"} | STANDARD_CHECKS
    for name, ev in here.items():
        other = there[name]
        assert ev.passed == other.passed, name
        for key in ("value", "raw", "baseline", "ci_low", "ci_high", "status", "details"):
            assert md.recorded(ev.metadata, key) == md.recorded(other.metadata, key), (name, key)
    assert not there["crp"].passed  # the leaky release is still blocked on the cluster
    import ray

    ray.shutdown()
