"""Jobs, the re-evaluation schedule and the new-release sensor."""

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from ..errors import TableError
from ..tables import fingerprint
from . import metadata as md
from .assets import DUCKDB_KEY
from .resources import RELEASE_ID_TAG, PostgresTables, ReadOnlyDuckDB, release_id

RELEASE_JOB = "privacy_release_job"
CHECKS_JOB = "privacy_checks_job"


def build_release_job(
    *, assets: list[str] | None = None, name: str = RELEASE_JOB, published_asset: str = "published_release"
) -> UnresolvedAssetJobDefinition:
    """Materialize the tables, run their checks and publish (the gate acts inside this run)."""
    keys = assets or ["real_table", "holdout_table", "synthetic_table", published_asset]
    # re-judging the published release belongs to the scheduled re-evaluation, not to the run publishing it
    selection = dg.AssetSelection.assets(*keys) - dg.AssetSelection.checks_for_assets(published_asset)
    return dg.define_asset_job(
        name, selection=selection, description="A whole release: tables, privacy checks, gated publication."
    )


def build_checks_job(
    *, synthetic_asset: str = "synthetic_table", published_asset: str | None = None, name: str = CHECKS_JOB
) -> UnresolvedAssetJobDefinition:
    """Re-run only the checks (no materialization): those on the current release, which target its latest
    materialization, and those on ``published_asset``, which re-judge what the target holds."""
    selection = dg.AssetSelection.checks_for_assets(synthetic_asset)
    if published_asset:
        selection = selection | dg.AssetSelection.checks_for_assets(published_asset)
    return dg.define_asset_job(
        name,
        selection=selection,
        description="Re-evaluate the privacy checks on the current release and re-judge the published one.",
    )


def build_checks_schedule(
    *,
    job: UnresolvedAssetJobDefinition,
    cron_schedule: str = "0 3 * * *",
    name: str = "privacy_checks_schedule",
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
) -> dg.ScheduleDefinition:
    """Re-run the checks on a schedule (new metric versions or policies apply to the current release)."""
    return dg.ScheduleDefinition(
        name=name,
        job=job,
        cron_schedule=cron_schedule,
        default_status=default_status,
        description="Re-evaluate the privacy checks on the current release.",
    )


def build_new_release_sensor(
    *,
    job: UnresolvedAssetJobDefinition,
    synthetic: str = "synthetic",
    synthetic_asset: str = "synthetic_table",
    name: str = "new_release_sensor",
    resource_key: str = DUCKDB_KEY,
    minimum_interval_seconds: int = 60,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
) -> dg.SensorDefinition:
    """Detect a new synthetic release — new content (fingerprint) or a new release id — and launch the
    release job for it. Nothing is requested while the latest materialization already recorded both."""

    @dg.sensor(
        name=name,
        job=job,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description="Launches the release job when the synthetic table holds a new release.",
    )
    def _sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        db: ReadOnlyDuckDB | PostgresTables = getattr(context.resources, resource_key)
        try:
            fp = fingerprint(db.read(synthetic, role="synthetic"))
        except TableError as exc:
            return dg.SkipReason(f"synthetic table not readable: {exc}")
        rid = release_id(None, fingerprint=fp)
        run_key = f"{rid}@{fp[:16]}"
        event = context.instance.get_latest_materialization_event(dg.AssetKey(synthetic_asset))
        mat = event.asset_materialization if event else None
        meta = mat.metadata if mat else {}
        if md.recorded(meta, md.FINGERPRINT) == fp and md.recorded(meta, md.RELEASE_ID) == rid:
            return dg.SkipReason(f"release {rid} already materialized")
        if context.cursor == run_key:
            return dg.SkipReason(f"release {rid} already requested")
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=run_key, tags={RELEASE_ID_TAG: rid})], cursor=run_key
        )

    return _sensor
