"""Privacy checks on any asset through its IO manager (issue 34 part 1): the same evaluation whether
the tables are read by name from DuckDB, stored as Parquet files by an IO manager of our own, or kept
as polars frames by Dagster's default IO manager; a leaky release is blocked (its downstream asset does
not run) and a clean one passes, on every route."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pytest
from gates import covering

from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import PrivacyRelease, ReadOnlyDuckDB, build_privacy_checks
from dagster_privacy.pipeline.demo_run import write_tables

POLICY = covering(
    {
        "metrics": {
            "crp": {"threshold": 0.05, "severity": "WARN"},
            "dcr": {"threshold": 0.95, "severity": "WARN"},
        }
    }
)
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _frames() -> dict[str, pl.DataFrame]:
    df = load_demo().head(1500)
    real, holdout, clean = df[:600], df[600:900], df[900:1200]
    return {"real": real, "holdout": holdout, "clean": clean, "leaky": pl.concat([clean[:150], real[:150]])}


class ParquetIOManager(dg.ConfigurableIOManager):
    """Each asset's polars frame as one Parquet file under ``root`` (a stand-in for Parquet on S3)."""

    root: str

    def _path(self, key: dg.AssetKey) -> Path:
        return Path(self.root) / ("__".join(key.path) + ".parquet")

    def handle_output(self, context: dg.OutputContext, obj: pl.DataFrame) -> None:
        Path(self.root).mkdir(parents=True, exist_ok=True)
        obj.write_parquet(self._path(context.asset_key))
        context.add_output_metadata({"path": dg.MetadataValue.path(str(self._path(context.asset_key)))})

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        return pl.read_parquet(self._path(context.asset_key))


def _run(defs: dg.Definitions, captured: list[str]) -> dict[str, Any]:
    job = defs.resolve_implicit_global_asset_job_def()
    with dg.instance_for_test() as instance:
        res = job.execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET)
        assert captured, [e.event_specific_data.error.cause for e in res.all_events if e.is_failure][:1]
        checks = {c.check_name: c.passed for c in res.get_asset_check_evaluations()}
        mats = {e.asset_key.to_user_string() for e in res.get_asset_materialization_events()}
    doc = json.loads(captured[-1])
    doc.pop("timings")
    return {"checks": checks, "published": "published_copy" in mats, "json": doc}


def _route(kind: str, synthetic: pl.DataFrame, tmp_path: Path) -> dict[str, Any]:
    frames = _frames()
    captured: list[str] = []

    def hook(ev, context):  # noqa: ANN001, ANN202
        captured.append(ev.to_json())
        return {}

    if kind == "duckdb":  # by name, through the DuckDB resource
        db = tmp_path / "release.duckdb"
        write_tables(db, {"real": frames["real"], "holdout": frames["holdout"], "synthetic": synthetic})

        @dg.asset(name="synthetic_table")
        def syn() -> None: ...

        checks = build_privacy_checks(asset=syn, policy=POLICY, real="real", holdout="holdout",
                                      synthetic="synthetic", on_evaluation=hook)  # fmt: skip
        resources: dict[str, Any] = {
            "duckdb": ReadOnlyDuckDB(database=str(db)),
            "privacy_release": PrivacyRelease(),
        }
        assets = [syn]
    else:

        @dg.asset(name="real_table")
        def real() -> pl.DataFrame:
            return frames["real"]

        @dg.asset(name="holdout_table")
        def holdout() -> pl.DataFrame:
            return frames["holdout"]

        @dg.asset(name="synthetic_table")
        def syn() -> pl.DataFrame:
            return synthetic

        checks = build_privacy_checks(asset=syn, policy=POLICY, real_asset=real, holdout_asset=holdout,
                                      release_resource_key=None, on_evaluation=hook)  # fmt: skip
        resources = {"io_manager": ParquetIOManager(root=str(tmp_path))} if kind == "parquet" else {}
        assets = [real, holdout, syn]

    @dg.asset(deps=["synthetic_table"])
    def published_copy() -> None:  # runs only when every blocking check on the release passed
        ...

    defs = dg.Definitions(assets=[*assets, published_copy], asset_checks=checks, resources=resources)
    return _run(defs, captured)


@pytest.mark.parametrize("release", ["clean", "leaky"])
def test_every_route_gives_the_same_evaluation_and_gates_alike(tmp_path, release) -> None:
    synthetic = _frames()[release]
    out = {kind: _route(kind, synthetic, tmp_path / kind) for kind in ("duckdb", "parquet", "polars")}
    for kind in ("parquet", "polars"):
        assert out[kind]["json"] == out["duckdb"]["json"], kind
        assert out[kind]["checks"] == out["duckdb"]["checks"], kind
    leaky = release == "leaky"
    for kind, o in out.items():
        assert o["checks"]["privacy_risk_membership"] is not leaky, kind
        assert o["published"] is not leaky, kind
    assert (tmp_path / "parquet" / "synthetic_table.parquet").is_file()  # really stored by the IO manager


def test_a_check_needs_real_by_name_or_as_an_asset() -> None:
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="real="):
        build_privacy_checks(asset="s", policy=POLICY)
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="not both"):
        build_privacy_checks(asset="s", policy=POLICY, real="real", real_asset="real_table")


def test_an_asset_value_that_is_text_none_or_a_mapping_fails_closed_without_echo(tmp_path) -> None:
    """Review: a text value was read as a path, a query or a URI, and echoed whole in the reason (50
    real records in a JSON string); a None holdout read as 'no holdout'."""
    frames = _frames()
    canary = frames["real"].head(5).write_json()
    for bad, role in ((canary, "real"), (None, "holdout"), ({"2026-01": frames["real"]}, "real")):

        @dg.asset(name="real_table")
        def real() -> Any:
            return bad if role == "real" else frames["real"]  # noqa: B023 - run within this iteration

        @dg.asset(name="holdout_table")
        def holdout() -> Any:
            return bad if role == "holdout" else frames["holdout"]  # noqa: B023

        @dg.asset(name="synthetic_table")
        def syn() -> pl.DataFrame:
            return frames["clean"]

        checks = build_privacy_checks(asset=syn, policy=POLICY, real_asset=real, holdout_asset=holdout,
                                      release_resource_key=None)  # fmt: skip
        defs = dg.Definitions(assets=[real, holdout, syn], asset_checks=checks)
        with dg.instance_for_test() as instance:
            res = defs.resolve_implicit_global_asset_job_def().execute_in_process(
                instance=instance, raise_on_error=False, run_config=QUIET
            )
            evals = res.get_asset_check_evaluations()
        assert evals and not any(e.passed for e in evals), role
        reasons = {e.metadata["reason"].value for e in evals}
        assert all(f"the {role} asset's value is" in r for r in reasons), reasons
        assert not any(canary[:40] in r for r in reasons)


def test_default_op_names_do_not_collide() -> None:
    keys = ["a__b", dg.AssetKey(["a", "b"]), "a_b", "my-asset", "my_asset"]
    checks = [build_privacy_checks(asset=k, policy=POLICY, real="real")[0] for k in keys]
    assert len({c.node_def.name for c in checks}) == len(keys)
