"""Jobs, the re-evaluation schedule and the new-release sensor."""

from collections.abc import Sequence
from datetime import datetime, timezone

import dagster as dg
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from ..data.tables import fingerprint
from ..errors import TableError
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
    selection: dg.AssetSelection = dg.AssetSelection.checks_for_assets(synthetic_asset)
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


def build_partitioned_checks_schedule(
    *,
    checks: Sequence[dg.AssetChecksDefinition],
    cron_schedule: str = "0 3 * * *",
    name: str = "privacy_checks_schedule",
    default_status: dg.DefaultScheduleStatus = dg.DefaultScheduleStatus.STOPPED,
) -> dg.ScheduleDefinition:
    """Re-judge a partitioned release partition by partition: each tick requests, for every partition of
    the checked asset that has been materialized, one run of ``checks`` (those ``build_privacy_checks``
    returned) alone — nothing is re-materialized, each month's release is judged again on its own
    content. The schedule's job is the asset's (``<name>_job``): a job of checks alone has no partitions
    in Dagster 1.13, so the runs select the checks and no asset."""
    keys = [k for c in checks for k in c.check_keys]
    assets = {k.asset_key for k in keys}
    if len(assets) != 1:
        raise dg.DagsterInvalidDefinitionError("give the checks of one partitioned asset")
    key = assets.pop()
    job = dg.define_asset_job(f"{name}_job", selection=dg.AssetSelection.assets(key))

    @dg.schedule(
        name=name,
        job=job,
        cron_schedule=cron_schedule,
        default_status=default_status,
        description="Re-evaluate the privacy checks of every materialized partition of the release.",
    )
    def _schedule(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
        parts = sorted(context.instance.get_materialized_partitions(key))
        if not parts:
            return dg.SkipReason(f"no partition of {key.to_user_string()} is materialized yet")
        # a run key per tick and partition (Dagster requires one for several requests and skips a key
        # it has seen: the tick's time keeps every tick's runs)
        try:
            tick = context.scheduled_execution_time.isoformat()
        except Exception:  # evaluated outside a tick (build_schedule_context without a time)
            tick = datetime.now(timezone.utc).isoformat()
        return [
            dg.RunRequest(run_key=f"{p}@{tick}", partition_key=p, asset_selection=[], asset_check_keys=keys)
            for p in parts
        ]

    return _schedule


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
