"""``dagster-privacy signoff``: record a privacy officer's decision on a release;
``dagster-privacy withdraw``: remove a published release with a record;
``dagster-privacy audit verify``: check the audit table against the anchors its writer does not control.

The command imports Dagster only when it runs (the other commands start without it); the logic lives
in ``dagster_privacy.pipeline.governance`` (``signoff_record.record_signoff``, ``signoff.verify_signoff``) and
``dagster_privacy.pipeline.governance.audit`` (the append-only audit table).
"""

from __future__ import annotations

from typing import Any

import click

DECISIONS = ("approve", "reject")


@click.command("signoff")
@click.option("--release", required=True, help="the release id (as in the report and the check metadata)")
@click.option("--decision", required=True, type=click.Choice(DECISIONS), help="approve or reject")
@click.option("--by", "by", required=True, help="who decides (name or id of the privacy officer)")
@click.option("--reason", required=True, help="why: recorded with the decision")
@click.option("--asset", default="synthetic_table", show_default=True, help="the synthetic table asset")
@click.option("--partition", default=None, help="the partition, when the release is partitioned (a month…)")
@click.option(
    "--name-prefix", default="", help="the privacy checks' name prefix (several policies on one asset)"
)
@click.option("--report-sha256", default=None, help="sha256 of the report you read (checked when given)")
@click.option(
    "--report",
    "report_file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="the report file you read: its sha256 is computed and checked (instead of --report-sha256)",
)
@click.option(
    "--audit",
    "audit_path",
    default=None,
    help="audit DuckDB file [default: $DAGSTER_PRIVACY_AUDIT, else "
    "$DAGSTER_HOME/dagster_privacy/audit.duckdb]",
)
def signoff_command(  # noqa: PLR0913
    release: str,
    decision: str,
    by: str,
    reason: str,
    asset: str,
    partition: str | None,
    name_prefix: str,
    report_sha256: str | None,
    report_file: str | None,
    audit_path: str | None,
) -> None:
    """Record a decision on a release, in the Dagster instance at $DAGSTER_HOME and the audit table."""
    import dagster as dg

    from ..pipeline.governance.audit import AuditError
    from ..pipeline.governance.signoff import SignoffError
    from ..pipeline.governance.signoff_record import record_signoff
    from ..report import file_sha256
    from .args import UsageFailure

    if report_file is not None:
        computed = file_sha256(report_file)
        if report_sha256 and report_sha256.strip().lower() != computed:
            raise UsageFailure("--report and --report-sha256 name different reports")
        report_sha256 = computed

    try:
        instance = dg.DagsterInstance.get()
    except Exception as exc:
        raise UsageFailure(
            f"no Dagster instance ({type(exc).__name__}): set DAGSTER_HOME to the instance "
            "the privacy checks ran in"
        ) from None
    try:
        with instance:
            rec = record_signoff(
                release=release,
                decision=decision,
                by=by,
                reason=reason,
                instance=instance,
                asset=dg.AssetKey.from_user_string(asset),
                report_sha256=report_sha256,
                audit=audit_path,
                partition=partition,
                name_prefix=name_prefix,
            )
    except (SignoffError, AuditError) as exc:
        raise UsageFailure(f"sign-off not recorded: {exc}") from None
    click.echo(f"{rec.decision} of release {rec.release_id} by {rec.approver} recorded at {rec.signed_at}")
    click.echo(f"  report sha256 {rec.report_sha256}" + (f" ({rec.report_path})" if rec.report_path else ""))
    click.echo(
        f"  privacy_signoff evaluation against {asset} materialization {rec.storage_id}; "
        f"audit row #{rec.audit_seq} in {rec.audit_path}"
    )


@click.command("withdraw")
@click.option("--release", required=True, help="the release id the publication target holds")
@click.option("--by", "by", required=True, help="who decides")
@click.option("--reason", required=True, help="why: recorded in the audit table and the publication log")
@click.option(
    "--target",
    default=None,
    help="DuckDB file, directory or postgresql:// publication target [default: "
    "$DAGSTER_PRIVACY_PUBLISH_TARGET, else the target the pipeline last published to, from the instance at "
    "$DAGSTER_HOME]",
)
@click.option("--audit", "audit_path", default=None, help="audit DuckDB file [default: as for signoff]")
@click.option(
    "--asset",
    default="published_release",
    show_default=True,
    help="the published asset (a named release's is <name>_published_release)",
)
def withdraw_command(
    release: str, by: str, reason: str, target: str | None, audit_path: str | None, asset: str
) -> None:
    """Withdraw a published release: remove it from the target in one transaction and record why in
    the audit table and the publication log."""
    import os

    from ..pipeline.governance.audit import AuditError
    from ..pipeline.governance.rejudge import withdraw_release
    from ..pipeline.publication.target import PublicationRefused, PublishTarget
    from ..pipeline.resources import ReleaseIdError
    from .args import UsageFailure

    instance = _instance_if_home()
    path = target or os.environ.get("DAGSTER_PRIVACY_PUBLISH_TARGET") or _published_to(instance, asset)
    kind = PublishTarget(path=path).kind() if path else None
    where = str(path or "")
    missing = (kind == "duckdb" and not os.path.isfile(where)) or (
        kind == "directory" and not os.path.isdir(where)
    )
    if not path or kind not in ("duckdb", "postgresql", "directory") or missing:
        raise UsageFailure(
            "give the DuckDB, PostgreSQL or directory publication target, which keeps a log (--target "
            "or DAGSTER_PRIVACY_PUBLISH_TARGET)"
        )
    try:
        row = withdraw_release(
            PublishTarget(path=path), release_id=release, by=by, reason=reason, audit=audit_path,
            instance=instance, asset=asset,
        )  # fmt: skip
    except (PublicationRefused, AuditError, ReleaseIdError) as exc:
        raise UsageFailure(f"not withdrawn: {exc}") from None
    click.echo(
        f"withdrew release {release} from {path} at {row['published_at']} by {row['by']}: {row['reason']} "
        f"(audit row #{row['audit_seq']})"
    )


def _instance_if_home() -> Any:
    """The Dagster instance at $DAGSTER_HOME, or None when it is unset (a withdrawal still works)."""
    import os

    import dagster as dg

    return dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None


def _published_to(instance: Any, asset: str = "published_release") -> str | None:
    """The target the pipeline's latest publication went to (its ``target_directory`` or ``target``
    metadata), if any."""
    import os

    import dagster as dg

    if instance is None:
        return None
    recs = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
    meta = recs[0].asset_materialization.metadata if recs else {}
    folder = getattr(meta.get("target_directory"), "value", None)  # a directory target holds many
    if folder and os.path.isdir(str(folder)):
        return str(folder)
    where = getattr(meta.get("target"), "value", None)
    return str(where) if where and os.path.isfile(str(where)) else None


@click.group("audit")
def audit_command() -> None:
    """The sign-off audit table."""


@audit_command.command("verify")
@click.option(
    "--audit",
    "audit_path",
    default=None,
    help="audit DuckDB file [default: $DAGSTER_PRIVACY_AUDIT, else "
    "$DAGSTER_HOME/dagster_privacy/audit.duckdb]",
)
@click.option(
    "--target",
    default=None,
    help="a DuckDB file or postgresql:// publication target whose log recorded audit heads",
)
@click.option("--asset", default="synthetic_table", show_default=True, help="the synthetic table asset")
def verify_command(audit_path: str | None, target: str | None, asset: str) -> None:
    """List every decision after checking the hash chain and every recorded head (the Dagster sign-off
    events when $DAGSTER_HOME is set, the publication log with --target); exit 1 on any break."""
    import os
    import sys

    import dagster as dg

    from ..pipeline.governance.audit import AuditError, AuditLog
    from ..pipeline.governance.signoff import audit_problems
    from ..pipeline.publication.target import PublishTarget
    from .args import UsageFailure

    try:
        log = AuditLog(audit_path)
    except AuditError as exc:
        raise UsageFailure(str(exc)) from None
    if target is not None:
        kind = PublishTarget(path=target).kind()
        missing = (kind == "duckdb" and not os.path.isfile(target)) or (
            kind == "directory" and not os.path.isdir(target)
        )
        if kind not in ("duckdb", "postgresql", "directory") or missing:
            raise UsageFailure(
                f"--target {target}: give a DuckDB file, a publication directory or a postgresql:// "
                "publication target"
            )
    if not log.path.is_file():  # a mistyped path must not read as a clean audit
        raise UsageFailure(f"no audit table at {log.path} (--audit, or DAGSTER_PRIVACY_AUDIT)")
    instance = _instance_if_home()
    try:
        rows, anchors, problems = audit_problems(
            log, instance, asset=dg.AssetKey.from_user_string(asset), target=target
        )
    except AuditError as exc:
        click.echo(f"audit: {exc}", err=True)
        sys.exit(1)
    for p in problems:
        click.echo(f"audit: {p}", err=True)
    if problems:
        sys.exit(1)
    click.echo(
        f"audit table {log.path}: {len(rows)} decision(s), hash chain intact, {anchors} recorded "
        "head(s) match" + ("" if instance else " (no DAGSTER_HOME: Dagster sign-off events not checked)")
    )
    for r in rows:
        # a withdrawal is of a publication: it has no report, materialization or verdict
        of = (
            "(of the publication)"
            if r.decision == "withdraw"
            else f"(report sha256 {(r.report_sha256 or '')[:16]}…, materialization "
            f"{r.materialization_storage_id}, verdict {r.verdict})"
        )
        click.echo(
            f"  #{r.seq} {r.recorded_at} release {r.release_id}: {r.decision.upper()} by {r.approver} — "
            f"{r.reason} {of}"
        )
