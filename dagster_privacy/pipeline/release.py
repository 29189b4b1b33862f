"""``build_release_definitions``: the whole release pipeline as one ``dg.Definitions``.

The one assembler: the reference code location (``definitions.py`` at the repository root, over
``assets/`` and ``checks/``), the installed demo and ``PrivacyChecksComponent`` all build through these
factories, so a policy's sign-off check and evidence report apply whichever way the pipeline is set up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg

from .assets import DUCKDB_KEY, PUBLISH_KEY, RELEASE_KEY, build_table_asset
from .automation import (
    CHECKS_JOB,
    RELEASE_JOB,
    build_checks_job,
    build_checks_schedule,
    build_new_release_sensor,
    build_release_job,
)
from .calibration_job import CALIBRATION_JOB, CALIBRATION_OP, build_calibration_job
from .checks import EvaluationHook, build_privacy_checks, required_check_names
from .governance.rejudge import build_published_release_check
from .publish import PublishTarget, build_published_release
from .resources import PrivacyRelease, tables_resource
from .schema_gate import build_schema_gate_check
from .settings import ReleaseSettings


def _keys(settings: ReleaseSettings) -> dict[str, str]:
    """The resource keys of this release (namespaced by its name)."""
    return {
        "tables": settings.named(DUCKDB_KEY),
        "release": settings.named(RELEASE_KEY),
        "publish": settings.named(PUBLISH_KEY),
    }


def build_release_assets(*, settings: ReleaseSettings) -> list[dg.AssetsDefinition]:
    """``real_table``, ``holdout_table`` (when there is a holdout) and the synthetic table (unless
    ``settings.tables`` is False), and ``published_release`` (when there is a publication target); each
    ``<name>_…`` when the release has a name.

    Args:
        settings: the release's ``ReleaseSettings``.

    Returns:
        The asset definitions: the read-only table assets, then ``published_release``, which requires the
        checks ``required_check_names`` names for the policy and ``settings.required_checks``.

    Example:
        ``build_release_assets(settings=ReleaseSettings(database="data/release.duckdb", policy="standard",
        publish_target=None))``
    """
    keys, group = _keys(settings), settings.named("privacy_release")
    out = []
    if settings.tables:
        out.append(
            build_table_asset(
                key=settings.named("real_table"),
                source=settings.real,
                role="real",
                description="The training table the generator saw (read-only; never published).",
                group_name=group,
                resource_key=keys["tables"],
            )
        )
        if settings.holdout:
            out.append(
                build_table_asset(
                    key=settings.named("holdout_table"),
                    source=settings.holdout,
                    role="holdout",
                    description="Records of the same population the generator never saw.",
                    group_name=group,
                    resource_key=keys["tables"],
                )
            )
        out.append(
            build_table_asset(
                key=settings.synthetic_key,
                source=settings.synthetic,
                role="synthetic",
                release_resource_key=keys["release"],
                description="The synthetic release under test (staging: not yet published).",
                group_name=group,
                resource_key=keys["tables"],
            )
        )
    if settings.publish_target:
        required = required_check_names(
            settings.loaded_policy(),
            schema_gate=settings.schema_gate,
            extra=settings.required_checks,
            lineage=bool(settings.lineage),
        )
        out.append(
            build_published_release(
                synthetic_asset=settings.synthetic_key,
                synthetic=settings.synthetic,
                required_checks=required,
                real=settings.real,
                holdout=settings.holdout,
                key=settings.named("published_release"),
                group_name=group,
                resource_key=keys["tables"],
                publish_resource_key=keys["publish"],
            )
        )
    return out


def build_release_checks(
    *,
    settings: ReleaseSettings,
    on_evaluation: EvaluationHook | None = None,
) -> list[dg.AssetChecksDefinition]:
    """The privacy checks (one per policy metric), the schema gate and, when the policy requires it, the
    sign-off check on the synthetic table asset.

    Args:
        settings: the release's ``ReleaseSettings``.
        on_evaluation: called with each ``Evaluation`` and the check's context, may return extra
            metadata; None: the HTML evidence report (``build_report_hook``).

    Returns:
        The check definitions: the privacy checks (with ``privacy_lineage`` when ``settings.lineage``),
        the schema gate when ``settings.schema_gate``, the sign-off check when the policy requires one,
        and, with a publication target, the check that re-judges what is published.

    Example:
        ``build_release_checks(settings=ReleaseSettings.from_env(), on_evaluation=None)``
    """
    policy, keys, asset = settings.loaded_policy(), _keys(settings), settings.synthetic_key
    deps: list[str] = (
        ([settings.named("real_table")] + ([settings.named("holdout_table")] if settings.holdout else []))
        if settings.tables
        else []
    )
    if on_evaluation is None:  # the HTML evidence report, written by the check itself (evidence.py)
        from .evidence import build_report_hook

        on_evaluation = build_report_hook(asset=asset, policy=policy, release_resource_key=keys["release"])
    checks = list(
        build_privacy_checks(
            asset=asset,
            policy=policy,
            real=settings.real,
            synthetic=settings.synthetic,
            holdout=settings.holdout,
            additional_deps=deps,
            on_evaluation=on_evaluation,
            name=settings.named("privacy_checks"),
            resource_key=keys["tables"],
            release_resource_key=keys["release"],
            lineage=settings.lineage,
            ledger=settings.ledger_location,
        )
    )
    if settings.schema_gate:
        checks += build_schema_gate_check(
            asset=asset,
            real=settings.real,
            synthetic=settings.synthetic,
            policy=policy,
            additional_deps=deps[:1],
            resource_key=keys["tables"],
            release_resource_key=keys["release"],
        )
    if policy.require_signoff:  # warns "awaiting sign-off" until a person decides (signoff.py)
        from .governance.signoff import build_signoff_check

        checks.append(build_signoff_check(asset=asset))
    if settings.publish_target:  # the scheduled re-evaluation also re-judges what is published (rejudge.py)
        checks.append(
            build_published_release_check(
                policy=policy,
                real=settings.real,
                holdout=settings.holdout,
                asset=settings.named("published_release"),
                resource_key=keys["tables"],
                publish_resource_key=keys["publish"],
            )
        )
    return checks


def build_release_resources(*, settings: ReleaseSettings) -> dict[str, Any]:
    keys = _keys(settings)
    out: dict[str, Any] = {
        keys["tables"]: tables_resource(settings.database),
        keys["release"]: PrivacyRelease(release_id=settings.release_id),
    }
    if settings.publish_target:
        out[keys["publish"]] = PublishTarget(path=settings.publish_target)
    return out


def build_release_definitions(
    *,
    settings: ReleaseSettings | None = None,
    assets: Sequence[dg.AssetsDefinition] | None = None,
    checks: Sequence[dg.AssetChecksDefinition] | None = None,
    extra_checks: Sequence[dg.AssetChecksDefinition] = (),
    on_evaluation: EvaluationHook | None = None,
    executor: dg.ExecutorDefinition | None = dg.in_process_executor,
    **settings_kwargs: Any,
) -> dg.Definitions:
    """The release pipeline: table assets, privacy checks, schema gate, gated publication, a release
    job, a checks-only job with its schedule, and a new-release sensor.

    With ``settings.name``, every name it creates is ``<name>_…``: several releases merge into one
    code location (``dg.Definitions.merge``, or one component each).

    Args:
        settings: the release's ``ReleaseSettings``; None: built from ``settings_kwargs``.
        assets: the asset definitions; None: ``build_release_assets(settings=settings)``.
        checks: the check definitions; None: ``build_release_checks(settings=settings,
            on_evaluation=on_evaluation)``.
        extra_checks: more checks, added as given (a human sign-off: name it in ``required_checks``).
        on_evaluation: the privacy checks' report hook when ``checks`` is None; None: the evidence report.
        executor: default in-process (the steps share only read-only files, and one process imports the
            engine once); None: Dagster's multiprocess one.
        **settings_kwargs: ``ReleaseSettings`` fields; with ``settings``, they replace its own.

    Returns:
        The ``dg.Definitions``: assets, checks, the release job, the checks-only job and its schedule
        (``settings.checks_cron``), the calibration job (on demand), the new-release sensor and the
        resources (tables, release and, with a target, publication).

    Example:
        ``build_release_definitions(database="data/release.duckdb", policy="strict",
        publish_target="data/published.duckdb")``
    """
    if settings is None:
        settings = ReleaseSettings(**settings_kwargs)
    elif settings_kwargs:
        settings = settings.with_(**settings_kwargs)
    keys, named = _keys(settings), settings.named
    assets = list(assets) if assets is not None else build_release_assets(settings=settings)
    checks = (
        list(checks)
        if checks is not None
        else build_release_checks(settings=settings, on_evaluation=on_evaluation)
    )
    published = named("published_release")
    release_job = build_release_job(
        assets=[a.key.to_user_string() for a in assets], name=named(RELEASE_JOB), published_asset=published
    )
    checks_job = build_checks_job(
        synthetic_asset=settings.synthetic_key,
        published_asset=published if settings.publish_target else None,
        name=named(CHECKS_JOB),
    )
    calibration = build_calibration_job(
        settings=settings,
        name=named(CALIBRATION_JOB),
        real_asset=named("real_table"),
        resource_key=keys["tables"],
        op_name=named(CALIBRATION_OP),
    )  # on demand only
    schedule = build_checks_schedule(
        job=checks_job, cron_schedule=settings.checks_cron, name=named("privacy_checks_schedule")
    )
    sensor = build_new_release_sensor(
        job=release_job, synthetic=settings.synthetic, synthetic_asset=settings.synthetic_key,
        name=named("new_release_sensor"), resource_key=keys["tables"],
    )  # fmt: skip
    resources = build_release_resources(settings=settings)
    return dg.Definitions(assets=assets, asset_checks=[*checks, *extra_checks], executor=executor,
                          jobs=[release_job, checks_job, calibration], schedules=[schedule], sensors=[sensor],
                          resources=resources)  # fmt: skip
