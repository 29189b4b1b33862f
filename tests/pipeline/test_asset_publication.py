"""Publication of a release whose tables are assets stored by IO managers (issue 34 part 1): the published
asset loads each side through its IO manager, re-verifies the fingerprint the checks judged, and never
writes where an input lives — the location each IO manager reported (``path`` metadata), or the one the
user declared (``input_locations=``); an input of unknown location is refused with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pyarrow.parquet as pq
import pytest
from gates import covering, signed

from dagster_privacy.data.tables import fingerprint
from dagster_privacy.demo import load_demo
from dagster_privacy.pipeline import PublishTarget, build_privacy_checks, build_published_release

POLICY = covering(
    {
        "metrics": {
            "crp": {"threshold": 0.05, "severity": "WARN"},
            "dcr": {"threshold": 0.95, "severity": "WARN"},
        }
    }
)
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
REQUIRED = ["privacy_risk_membership"]


def _frames() -> dict[str, pl.DataFrame]:
    df = load_demo().head(1500)
    real, holdout, clean = df[:600], df[600:900], df[900:1200]
    return {"real": real, "holdout": holdout, "clean": clean, "leaky": pl.concat([clean[:150], real[:150]])}


class ParquetIOManager(dg.ConfigurableIOManager):
    """Each asset's polars frame as one Parquet file under ``root``; reports its path unless told not to
    (a warehouse IO manager reports none)."""

    root: str
    report_path: bool = True

    def _path(self, key: dg.AssetKey) -> Path:
        return Path(self.root) / ("__".join(key.path) + ".parquet")

    def handle_output(self, context: dg.OutputContext, obj: pl.DataFrame) -> None:
        Path(self.root).mkdir(parents=True, exist_ok=True)
        obj.write_parquet(self._path(context.asset_key))
        if self.report_path:
            context.add_output_metadata({"path": dg.MetadataValue.path(str(self._path(context.asset_key)))})

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        return pl.read_parquet(self._path(context.asset_key))


def _assets(synthetic: pl.DataFrame) -> tuple[dg.AssetsDefinition, dg.AssetsDefinition, dg.AssetsDefinition]:
    """real_table, holdout_table and synthetic_table, each a polars frame stored by the IO manager."""
    frames = _frames()

    @dg.asset
    def real_table() -> pl.DataFrame:
        return frames["real"]

    @dg.asset
    def holdout_table() -> pl.DataFrame:
        return frames["holdout"]

    @dg.asset
    def synthetic_table() -> pl.DataFrame:
        return synthetic

    return real_table, holdout_table, synthetic_table


def _defs(synthetic: pl.DataFrame, target: str, io: dg.IOManager | None, **publish: Any) -> dg.Definitions:
    real_table, holdout_table, synthetic_table = _assets(synthetic)

    checks = build_privacy_checks(asset=synthetic_table, policy=POLICY, real_asset=real_table,
                                  holdout_asset=holdout_table, release_resource_key=None)  # fmt: skip
    published = build_published_release(
        synthetic_asset=synthetic_table,
        required_checks=REQUIRED,
        real_asset=real_table,
        holdout_asset=holdout_table,
        **publish,
    )
    resources: dict[str, Any] = {"publish_target": PublishTarget(path=target)}
    if io is not None:
        resources["io_manager"] = io
    return dg.Definitions(
        assets=[real_table, holdout_table, synthetic_table, published],
        asset_checks=checks,
        resources=resources,
    )


def _run(
    defs: dg.Definitions, instance: dg.DagsterInstance, only_published: bool = False, only: str | None = None
) -> dict[str, Any]:
    job = defs.resolve_implicit_global_asset_job_def()
    published = only or "published_release"
    sel = [dg.AssetKey(published)] if only_published or only else None
    res = job.execute_in_process(
        instance=instance, raise_on_error=False, run_config=QUIET, asset_selection=sel
    )
    mats = {e.asset_key.to_user_string() for e in res.get_asset_materialization_events()}
    failures = [e.event_specific_data.error.message for e in res.all_events if e.is_step_failure]
    checks = {c.check_name: c.passed for c in res.get_asset_check_evaluations()}
    logged = "\n".join(e.user_message or "" for e in instance.all_logs(res.run_id))
    return {"published": published in mats, "failures": failures, "checks": checks, "logged": logged,
            "success": res.success}  # fmt: skip


@pytest.mark.parametrize("io", ["parquet", "polars"])
def test_a_clean_release_publishes_the_very_content_and_a_leaky_one_is_blocked(tmp_path, io) -> None:
    frames = _frames()
    target = tmp_path / "published.parquet"

    def io_manager(root: Path) -> dg.IOManager | None:  # polars: Dagster's default (pickles, reports path)
        return ParquetIOManager(root=str(root)) if io == "parquet" else None

    with dg.instance_for_test() as instance:
        out = _run(_defs(frames["clean"], str(target), io_manager(tmp_path / "store")), instance)
        assert out["published"], out["failures"]
        written = pl.from_arrow(pq.read_table(target))
        assert fingerprint(written) == fingerprint(frames["clean"])
        leaky = _defs(frames["leaky"], str(tmp_path / "leaky.parquet"), io_manager(tmp_path / "store2"))
        out = _run(leaky, instance)
        assert out["checks"]["privacy_risk_membership"] is False
        assert not out["published"] and not (tmp_path / "leaky.parquet").exists()
        # a run of the publication alone re-verifies from the records: the leaky release's check failed
        again = _run(leaky, instance, only_published=True)
        assert not again["published"]
        assert any("privacy_risk_membership: its latest evaluation failed" in f for f in again["failures"])


def test_content_changed_after_the_checks_is_not_published(tmp_path) -> None:
    """The synthetic file is rewritten behind Dagster's back after the checks passed: the published
    asset loads it through the IO manager, and its fingerprint no longer matches."""
    frames = _frames()
    store = tmp_path / "store"
    defs = _defs(frames["clean"], str(tmp_path / "out.parquet"), ParquetIOManager(root=str(store)))
    with dg.instance_for_test() as instance:
        job = defs.resolve_implicit_global_asset_job_def()
        sel = [dg.AssetKey(k) for k in ("real_table", "holdout_table", "synthetic_table")]
        job.execute_in_process(instance=instance, run_config=QUIET, asset_selection=sel)
        frames["leaky"].write_parquet(store / "synthetic_table.parquet")
        out = _run(defs, instance, only_published=True)
    assert not out["published"]
    assert any("evaluated other content" in f for f in out["failures"]), out["failures"]
    assert not (tmp_path / "out.parquet").exists()


def test_the_target_is_never_where_an_input_lives(tmp_path) -> None:
    frames = _frames()
    store = tmp_path / "store"
    real_file = store / "real_table.parquet"
    for target, words in (
        (str(real_file), "is the input"),  # the real table's own file, as its IO manager reported it
        (str(store), "holds the input"),  # a directory target: the IO manager's folder
        ("file://" + str(store / "sub" / ".." / "holdout_table.parquet"), "is the input"),
    ):
        with dg.instance_for_test() as instance:
            out = _run(_defs(frames["clean"], target, ParquetIOManager(root=str(store))), instance)
        assert not out["published"], target
        assert any(words in f for f in out["failures"]), out["failures"]
        assert fingerprint(pl.read_parquet(real_file)) == fingerprint(frames["real"])


def test_an_input_of_unknown_location_must_be_declared(tmp_path) -> None:
    frames = _frames()
    store = tmp_path / "store"
    quiet_io = ParquetIOManager(root=str(store), report_path=False)  # a warehouse: no path metadata
    target = tmp_path / "out" / "release.parquet"
    with dg.instance_for_test() as instance:
        out = _run(_defs(frames["clean"], str(target), quiet_io), instance)
        assert not out["published"] and not target.exists()
        line = next(f for f in out["failures"] if "location is unknown" in f)
        assert "input_locations=" in line and "\n" not in line.strip()
        # declared as stored elsewhere (a warehouse URI, and the store's folder): published
        declared = {
            "real_table": "snowflake://acct/db/real",
            "holdout": str(store),
            "synthetic_table": str(store),
        }
        out = _run(_defs(frames["clean"], str(target), quiet_io, input_locations=declared), instance)
        assert out["published"], out["failures"]
        # declared, and the target is inside it: refused
        bad = {**declared, "real_table": str(tmp_path / "out")}
        out = _run(_defs(frames["clean"], str(target), quiet_io, input_locations=bad), instance)
        assert not out["published"]
        assert any("holds the input" in f or "is inside" in f for f in out["failures"]), out["failures"]


def test_two_policies_on_one_asset_by_name_prefix(tmp_path) -> None:
    """Review: the readers took the checks' names without their prefix — publication required
    unprefixed names no check had, and the report's history found no earlier run."""
    from dagster_privacy.pipeline import required_check_names
    from dagster_privacy.pipeline.evidence import check_history

    frames = _frames()
    loose = signed(covering({"metrics": {"crp": {"threshold": 0.9}}}, threshold=0.9))  # its loosenings waived

    real_table, holdout_table, synthetic_table = _assets(frames["leaky"])

    sides = {"real_asset": real_table, "holdout_asset": holdout_table, "release_resource_key": None}
    checks = [
        *build_privacy_checks(asset=synthetic_table, policy=POLICY, name_prefix="strict_", **sides),
        *build_privacy_checks(asset=synthetic_table, policy=loose, name_prefix="loose_", **sides),
    ]
    required = {p: required_check_names(pol, schema_gate=False, name_prefix=p + "_")
                for p, pol in (("strict", POLICY), ("loose", loose))}  # fmt: skip
    risks = [f"privacy_risk_{r}" for r in ("singling_out", "linkability", "inference", "membership")]
    # issue 54: the loose policy's loosenings are waived, so it requires a sign-off too
    assert required == {"strict": [f"strict_{r}" for r in risks],
                        "loose": [*(f"loose_{r}" for r in risks), "privacy_signoff"]}  # fmt: skip
    published = [
        build_published_release(
            synthetic_asset=synthetic_table,
            required_checks=required[p],
            key=f"{p}_copy",
            real_asset=real_table,
            holdout_asset=holdout_table,
        )  # fmt: skip
        for p in required
    ]
    defs = dg.Definitions(
        assets=[real_table, holdout_table, synthetic_table, *published],
        asset_checks=checks,
        resources={"publish_target": PublishTarget(path=str(tmp_path / "out"))},
    )
    job = defs.resolve_implicit_global_asset_job_def()
    with dg.instance_for_test() as instance:
        for _ in range(2):
            res = job.execute_in_process(instance=instance, raise_on_error=False, run_config=QUIET)
        history = check_history(instance, synthetic_table.key, metric_ids=["crp"], name_prefix="strict_")
        # a failing blocking check stops every downstream asset of its run; alone, each publication
        # re-verifies the checks it requires
        alone = {p: _run(defs, instance, only=f"{p}_copy") for p in required}
    evals = {e.check_name: e.passed for e in res.get_asset_check_evaluations()}
    assert evals["strict_privacy_risk_membership"] is False and evals["loose_privacy_risk_membership"] is True
    assert not alone["loose"]["published"] and not alone["strict"]["published"]  # loose awaits a sign-off
    assert not any("loose_privacy_risk" in f for f in alone["loose"]["failures"])  # its own gates passed
    assert any("strict_privacy_risk_membership: its latest" in f for f in alone["strict"]["failures"])
    assert len(history) == 2 and all(h["failed"] == ["crp"] for h in history)


# ---------------------------------------------------------------- review: how a location may be spelled


def _reported(instance: dg.DagsterInstance, key: str, partition: str | None = None, **meta: str) -> None:
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key=key, partition=partition, metadata=meta)
    )


def _guarded(target: str, instance: dg.DagsterInstance, inputs: list, declared=None, read=()) -> str | None:  # noqa: ANN001
    """The refusal publication would give for ``target`` (None: it may be written)."""
    from dagster_privacy.pipeline.publication.asset_locations import input_locations
    from dagster_privacy.pipeline.publication.target import PublicationRefused

    try:
        PublishTarget(path=target).guard(
            inputs=lambda: input_locations(instance, inputs, declared or {}, read)
        )
    except PublicationRefused as exc:
        return str(exc)
    return None


def test_every_spelling_of_a_local_location_is_placed(tmp_path) -> None:
    """Review: a location of a scheme the guard did not know (duckdb:///, sqlite:///, local://, file:
    with one slash, a percent-encoded file URI) was dropped as 'remote', and the real file was
    published over; an unknown scheme or another host's file URI is refused, not ignored."""
    from dagster_privacy.pipeline.publication.asset_locations import AssetInput

    folder = tmp_path / "données réelles"
    folder.mkdir()
    db = folder / "warehouse.duckdb"
    db.write_bytes(b"")
    real = [AssetInput("real", dg.AssetKey("real_table"))]
    spellings = [f"duckdb:///{db}", f"sqlite:///{db}", f"local://{db}", f"file:{db}", db.as_uri(),
                 f"file://localhost{db}"]  # fmt: skip
    with dg.instance_for_test() as instance:
        for uri in spellings:
            _reported(instance, "real_table", uri=uri)
            assert "is the input" in (_guarded(str(db), instance, real) or ""), uri
        _reported(instance, "real_table", uri=folder.as_uri())  # a percent-encoded folder
        assert "inside" in (_guarded(str(folder / "out"), instance, real) or "")
        for uri, words in (("foo://bucket/real", "foo:// location"), ("file://otherhost/x", "another host")):
            _reported(instance, "real_table", uri=uri)
            assert words in (_guarded(str(tmp_path / "out.parquet"), instance, real) or ""), uri
        _reported(instance, "real_table", uri="s3://bucket/real")  # remote: never a local target
        assert _guarded(str(tmp_path / "out.parquet"), instance, real) is None


def test_a_declaration_never_hides_what_the_io_manager_reported(tmp_path) -> None:
    """Review: input_locations replaced the reported folder, so a target inside it was published."""
    from dagster_privacy.pipeline.publication.asset_locations import AssetInput

    store = tmp_path / "real_store"
    store.mkdir()
    real = [AssetInput("real", dg.AssetKey("real_table"))]
    with dg.instance_for_test() as instance:
        _reported(instance, "real_table", path=str(store))
        refused = _guarded(str(store / "release"), instance, real, {"real": "s3://warehouse/real"})
    assert refused and str(store) in refused


def test_a_partitioned_input_is_placed_at_the_partitions_loaded(tmp_path) -> None:
    """Review: a partitioned real table was placed at its latest materialization of any partition."""
    from dagster_privacy.pipeline.publication.asset_locations import AssetInput

    aug, octo = tmp_path / "real" / "2026-08-01", tmp_path / "real" / "2026-10-01"
    for d in (aug, octo):
        d.mkdir(parents=True)
    real = [AssetInput("real", dg.AssetKey("real_table"), ("2026-08-01",))]
    with dg.instance_for_test() as instance:
        _reported(instance, "real_table", "2026-08-01", path=str(aug))
        _reported(instance, "real_table", "2026-10-01", path=str(octo))  # the latest, another month
        assert _guarded(str(aug / "release"), instance, real)
        assert _guarded(str(octo / "release"), instance, real) is None
        never = [AssetInput("real", dg.AssetKey("real_table"), ("2026-09-01",))]
        assert "partition 2026-09-01" in (_guarded(str(tmp_path / "x"), instance, never) or "")


def test_a_path_value_the_loader_reads_is_an_input(tmp_path) -> None:
    """Review: an IO manager returning Path('wh.duckdb:real_table') and reporting a remote mirror let the
    target be wh.duckdb."""
    from dagster_privacy.pipeline.publication.asset_locations import AssetInput

    wh = tmp_path / "wh.duckdb"
    wh.write_bytes(b"")
    real = [AssetInput("real", dg.AssetKey("real_table"))]
    with dg.instance_for_test() as instance:
        _reported(instance, "real_table", uri="s3://mirror/real_table")
        assert _guarded(str(wh), instance, real) is None  # the report alone says remote
        assert "is the input" in (_guarded(str(wh), instance, real, read=[f"{wh}:real_table"]) or "")


def test_a_sign_off_is_of_the_report_of_the_policy_that_requires_it(tmp_path) -> None:
    """Review: with a strict policy (checks 'strict_…', sign-off required) and a loose one on one asset,
    the approval was recorded against the loose policy's report and published the strict release."""
    from dagster_privacy.pipeline import build_report_hook, build_signoff_check
    from dagster_privacy.pipeline.governance.audit import AuditLog
    from dagster_privacy.pipeline.governance.signoff import current_evaluation
    from dagster_privacy.pipeline.governance.signoff_record import record_signoff

    frames = _frames()

    real_table, holdout_table, synthetic_table = _assets(frames["clean"])

    sides = {"real_asset": real_table, "holdout_asset": holdout_table, "release_resource_key": None}
    reports = {"reports_dir": tmp_path / "reports", "release_resource_key": None}
    hook = {p: build_report_hook(asset=synthetic_table, name_prefix=p, **reports) for p in ("strict_", "")}
    loose = signed(covering({"metrics": {"crp": {"threshold": 0.9}}}, threshold=0.9))  # its loosenings waived
    checks = [
        *build_privacy_checks(asset=synthetic_table, policy=POLICY, name_prefix="strict_", **sides,
                              on_evaluation=hook["strict_"]),
        *build_privacy_checks(asset=synthetic_table, policy=loose, **sides, on_evaluation=hook[""]),
        build_signoff_check(asset=synthetic_table),
    ]  # fmt: skip
    publish = {"synthetic_asset": synthetic_table, "real_asset": real_table, "holdout_asset": holdout_table,
               "required_checks": ["strict_privacy_risk_membership", "privacy_signoff"]}  # fmt: skip
    strict = build_published_release(key="strict_copy", name_prefix="strict_", **publish)
    unprefixed = build_published_release(key="strict_copy_unprefixed", **publish)  # name_prefix forgotten
    defs = dg.Definitions(
        assets=[real_table, holdout_table, synthetic_table, strict, unprefixed],
        asset_checks=checks,
        resources={"publish_target": PublishTarget(path=str(tmp_path / "out"))},
    )
    with dg.instance_for_test() as instance:
        _run(defs, instance)
        key = synthetic_table.key
        mine, other = (current_evaluation(instance, key, name_prefix=p) for p in ("strict_", ""))
        assert mine.report_sha256 != other.report_sha256 and mine.release_id == other.release_id
        who = {"release": mine.release_id, "decision": "approve", "by": "officer", "reason": "read it",
               "instance": instance, "asset": key, "audit": AuditLog(instance=instance)}  # fmt: skip
        record_signoff(**who)  # of the loose policy's report
        waiting = _run(defs, instance, only="strict_copy")  # its own report awaits a sign-off (issue 46)
        assert not waiting["published"] and waiting["success"], waiting["failures"]
        assert "not published, awaiting sign-off: the approval is of report" in waiting["logged"]
        refused = _run(defs, instance, only="strict_copy_unprefixed")  # second review: it published
        assert not refused["published"]
        assert any("not of the report the required checks recorded" in f for f in refused["failures"])
        record_signoff(**who, name_prefix="strict_")
        assert _run(defs, instance, only="strict_copy")["published"]
        # issue 44: the console finds each policy's releases by its checks' prefix (it passed none)
        from dagster_privacy.console.release_views import releases

        audit = AuditLog(instance=instance)
        by = {
            p: releases(instance, key, audit, None, name_prefix=p)[mine.release_id] for p in ("strict_", "")
        }
        assert by["strict_"].latest.report_sha256 == mine.report_sha256
        assert by[""].latest.report_sha256 == other.report_sha256
        assert by["strict_"].state == "approved"


def test_an_io_manager_that_cannot_load_an_input_fails_the_checks_and_publishes_nothing(tmp_path) -> None:
    """The check step fails before the evaluation (Dagster loads the inputs): no check passes, the
    publication in the run is skipped, and a publication run alone fails loading the same input."""
    frames = _frames()
    store = tmp_path / "store"

    class Broken(ParquetIOManager):
        def load_input(self, context: dg.InputContext) -> pl.DataFrame:
            if context.asset_key == dg.AssetKey("real_table"):
                raise OSError("the warehouse is unreachable")
            return super().load_input(context)

    target = tmp_path / "out.parquet"
    defs = _defs(frames["clean"], str(target), Broken(root=str(store)))
    with dg.instance_for_test() as instance:
        out = _run(defs, instance)
        again = _run(defs, instance, only_published=True)
    assert not any(out["checks"].values())
    assert not out["published"] and not again["published"] and not target.exists()
    assert any("loading input" in f for f in again["failures"]), again["failures"]  # it loads real too


def test_second_review_spellings_and_reports(tmp_path) -> None:
    """Second review: duckdb:///<absolute path> was read as relative to the working directory; a UPath
    file URI holding '#' was cut there; a free-text 'location' counted as a place and a table in a
    database (dagster/table_name) as reported; a declaration with a leading space, or empty, declared
    nothing."""
    from dagster_privacy.pipeline.publication.asset_locations import AssetInput

    store = tmp_path / "q#1 100%"
    store.mkdir()
    db = store / "warehouse.duckdb"
    db.write_bytes(b"")
    real = [AssetInput("real", dg.AssetKey("real_table"))]
    other = str(tmp_path / "elsewhere.parquet")
    with dg.instance_for_test() as instance:
        for uri in (f"duckdb://{db}", f"sqlite://{db}", f"file://{db}", f"file://localhost{db}"):
            _reported(instance, "real_table", uri=uri)  # written as UPath and SQLAlchemy record it
            assert "is the input" in (_guarded(str(db), instance, real) or ""), uri
        _reported(instance, "real_table", location="amsterdam")  # no path: unknown
        assert "location is unknown" in (_guarded(other, instance, real) or "")
        _reported(instance, "real_table", path=str(db), **{"dagster/table_name": "public.real"})
        assert "location is unknown" in (_guarded(other, instance, real) or "")  # which database?
        assert "is the input" in (_guarded(str(db), instance, real, {"real": f"  {db}\n"}) or "")
        assert "empty location" in (_guarded(other, instance, real, {"real": " "}) or "")
        assert "is the input" in (_guarded(str(db), instance, real, {"real": [db]}) or "")  # a Path


# ---------------------------------------------------------------- issue 44: assets stored in PostgreSQL


class PostgresIOManager(dg.ConfigurableIOManager):
    """Each asset's polars frame as one table of the PostgreSQL database at ``uri``; reports the
    database as its IO manager would (``report="uri"``: a ``postgresql+psycopg2://`` URI, as SQLAlchemy
    spells it; ``"table"``: only ``dagster/table_name``, whose database it does not say)."""

    uri: str
    report: str = "uri"

    def handle_output(self, context: dg.OutputContext, obj: pl.DataFrame) -> None:
        from dagster_privacy.data import postgres

        name = "__".join(context.asset_key.path)
        postgres.replace_tables(self.uri, {name: obj})
        if self.report == "uri":
            spelt = self.uri.replace("postgresql://", "postgresql+psycopg2://", 1)
            context.add_output_metadata({"uri": dg.MetadataValue.text(spelt)})
        else:
            context.add_output_metadata({"dagster/table_name": dg.MetadataValue.text(name)})

    def load_input(self, context: dg.InputContext) -> pl.DataFrame:
        from dagster_privacy.data import postgres

        return postgres.read(self.uri, "__".join(context.asset_key.path))


def test_a_target_in_the_database_an_input_asset_is_stored_in_is_refused_however_spelt(pg) -> None:
    """The PostgreSQL side of the asset route: inputs stored in a database by an IO manager; the target
    is that database over its Unix socket (another route to the same data), refused with the real table
    unchanged; a database the IO manager only names a table of must be declared; another database
    publishes."""
    from postgres_server import create_database
    from test_publication_guard import pg_fingerprint, socket_uri

    from dagster_privacy.data import postgres

    frames = _frames()
    store = create_database(pg, "asset_store")
    same = f"{socket_uri(pg)}/asset_store"
    elsewhere = create_database(pg, "asset_release")
    with dg.instance_for_test() as instance:
        out = _run(_defs(frames["clean"], same, PostgresIOManager(uri=store)), instance)
        assert not out["published"]
        assert any("database holding the real data" in f for f in out["failures"]), out["failures"]
        before = pg_fingerprint(store, "real_table")
        with_table = PostgresIOManager(uri=store, report="table")
        out = _run(_defs(frames["clean"], elsewhere, with_table), instance)
        assert not out["published"] and any("location is unknown" in f for f in out["failures"])
        declared = {"real_table": same, "holdout_table": store, "synthetic_table": store}
        out = _run(_defs(frames["clean"], store, with_table, input_locations=declared), instance)
        assert not out["published"]
        assert any("database holding the real data" in f for f in out["failures"]), out["failures"]
        assert pg_fingerprint(store, "real_table") == before
        with postgres.transaction(store) as cur:
            cur.execute("select to_regclass('publications') is null")
            assert cur.fetchall()[0][0]  # not even the log was written
        out = _run(_defs(frames["clean"], elsewhere, PostgresIOManager(uri=store)), instance)
        assert out["published"], out["failures"]
