"""Recording a sign-off: ``record_signoff(...)`` (the ``dagster-privacy signoff`` command of
``dagster_privacy/cli/governance.py`` and the console's decide form) appends the decision to the audit
table, then records a runless ``AssetCheckEvaluation`` of ``privacy_signoff`` against the latest synthetic
materialization (``target_materialization_data``, dagster-facts §5) carrying approver, time, decision,
reason and the sha256 of the report approved. A rejection is a failed evaluation."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)

from .. import metadata as md
from ..evidence import REPORT_PATH, REPORT_SHA256
from ..resources import ReleaseIdError, valid_release_id
from .audit import AuditLog, os_user
from .signoff import (
    DECISIONS,
    DEFAULT_ASSET,
    SIGNOFF_CHECK,
    SignoffError,
    _key,
    _latest_materialization,
    current_evaluation,
)


@dataclass(frozen=True)
class SignoffRecord:
    release_id: str
    decision: str
    approver: str
    reason: str
    signed_at: str
    report_sha256: str
    report_path: str | None
    storage_id: int
    audit_seq: int
    audit_path: str
    audit_row_hash: str


def record_signoff(  # noqa: PLR0913
    *,
    release: str,
    decision: str,
    by: str,
    reason: str,
    instance: dg.DagsterInstance | None = None,
    asset: dg.AssetsDefinition | dg.AssetKey | str = DEFAULT_ASSET,
    report_sha256: str | None = None,
    audit: AuditLog | str | Path | None = None,
    now: dt.datetime | None = None,
    partition: str | None = None,
    name_prefix: str = "",
) -> SignoffRecord:
    """Record a decision on the release of the latest evaluation; returns what was recorded.

    Refused (``SignoffError``) when the release is not the one the latest evaluation judged, when that
    evaluation is not of the latest materialization, when the report file on disk no longer has the
    recorded sha256, or when ``report_sha256`` (the hash of the report the officer read) differs.
    The decision is appended to the audit table first; then the runless check evaluation is recorded.
    A partitioned release is signed off partition by partition (``partition``); with several policies
    on one asset, ``name_prefix`` names the checks (and so the report) the sign-off is of.
    """
    decision = _valid_decision(release, decision, by, reason)
    instance = instance or dg.DagsterInstance.get()
    key = _key(asset)
    cur, mat = _decidable(instance, key, release, decision, report_sha256, partition, name_prefix)
    log = audit if isinstance(audit, AuditLog) else AuditLog(audit, instance=instance)
    utc = dt.timezone.utc
    signed_at = (now or dt.datetime.now(utc)).astimezone(utc).isoformat(timespec="seconds")
    row = log.append(
        recorded_at=signed_at,
        release_id=release,
        decision=decision,
        approver=by.strip(),
        os_user=os_user(),
        reason=reason.strip(),
        report_sha256=cur.report_sha256,
        report_path=cur.report_path,
        asset_key=key.to_user_string(),
        synthetic_sha256=cur.synthetic_sha256,
        materialization_storage_id=mat.storage_id,
        evaluation_run_id=cur.run_id,
        verdict=cur.verdict,
    )
    meta = _signoff_metadata(cur, row, log, decision=decision, by=by, reason=reason, signed_at=signed_at)
    instance.report_runless_asset_event(
        dg.AssetCheckEvaluation(
            asset_key=key,
            check_name=SIGNOFF_CHECK,
            passed=decision == "approve",
            severity=dg.AssetCheckSeverity.ERROR,
            metadata=meta,
            description=f"{decision} by {by.strip()}: {reason.strip()}",
            target_materialization_data=AssetCheckEvaluationTargetMaterializationData(
                storage_id=mat.storage_id, run_id=mat.run_id, timestamp=mat.timestamp
            ),
            partition=partition,
        )
    )
    return SignoffRecord(
        release,
        decision,
        by.strip(),
        reason.strip(),
        signed_at,
        cur.report_sha256,
        cur.report_path,
        mat.storage_id,
        row.seq,
        str(log.path),
        row.row_hash,
    )


def _valid_decision(release: str, decision: str, by: str, reason: str) -> str:
    """The decision, normalised, once the release id, the decision word and the names pass."""
    try:
        valid_release_id(release)
    except ReleaseIdError as exc:
        raise SignoffError(str(exc)) from None
    decision = decision.strip().lower()
    if decision not in DECISIONS:
        raise SignoffError(f"decision must be one of {', '.join(DECISIONS)}")
    if not by.strip() or not reason.strip():
        raise SignoffError("a sign-off needs the name of who decides (--by) and a reason (--reason)")
    from .audit import people_text

    people_text("--by", by)  # AuditError: the CLI turns it into one line and exit 2
    people_text("--reason", reason)
    return decision


def _decidable(
    instance: dg.DagsterInstance, key: dg.AssetKey, release: str, decision: str, report_sha256: str | None,
    partition: str | None, name_prefix: str,
) -> tuple[Any, Any]:  # fmt: skip
    """(the latest evaluation, the latest materialization) when ``release`` is theirs and the report
    read is theirs, unchanged; else SignoffError."""
    cur = current_evaluation(instance, key, partition=partition, name_prefix=name_prefix)
    if cur.release_id != release:
        raise SignoffError(
            f"release {release!r} is not the release of the latest privacy evaluation of "
            f"{key.to_user_string()} ({cur.release_id!r})"
        )
    mat = _latest_materialization(instance, key, partition)
    if cur.target_storage_id != mat.storage_id:
        raise SignoffError(
            f"the latest privacy evaluation is of an older materialization of "
            f"{key.to_user_string()}: run the privacy checks again, then sign off"
        )
    if decision == "approve" and cur.verdict == "fail":
        raise SignoffError(
            f"the latest privacy evaluation of release {release!r} failed its gates: publication "
            "stays blocked whatever the decision (reject it, or fix the release and evaluate again)"
        )
    if report_sha256 and report_sha256.strip().lower() != cur.report_sha256:
        raise SignoffError(
            f"the report you read (sha256 {report_sha256[:12]}…) is not the current evaluation's "
            f"report ({cur.report_sha256[:12]}…)"
        )
    if cur.report_path and Path(cur.report_path).is_file():
        from ...report import file_sha256

        if file_sha256(cur.report_path) != cur.report_sha256:
            raise SignoffError(f"the report file {cur.report_path} changed after the evaluation wrote it")
    return cur, mat


def _signoff_metadata(
    cur: Any, row: Any, log: AuditLog, *, decision: str, by: str, reason: str, signed_at: str
) -> dict[str, Any]:
    """The sign-off check evaluation's metadata: the decision, who, why, the report and the audit row."""
    meta: dict[str, Any] = {
        "decision": dg.MetadataValue.text(decision),
        "approver": dg.MetadataValue.text(by.strip()),
        "os_user": md.text(row.os_user),
        "signed_at": dg.MetadataValue.text(signed_at),
        "reason": dg.MetadataValue.text(reason.strip()),
        REPORT_SHA256: dg.MetadataValue.text(cur.report_sha256),
        md.RELEASE_ID: dg.MetadataValue.text(cur.release_id),
        "evaluation_run_id": dg.MetadataValue.text(cur.run_id),
        "audit_path": dg.MetadataValue.path(str(log.path)),
        "audit_seq": dg.MetadataValue.int(row.seq),
        "audit_row_hash": dg.MetadataValue.text(row.row_hash),
    }
    if cur.report_path:
        meta[REPORT_PATH] = dg.MetadataValue.path(cur.report_path)
    if cur.synthetic_sha256:
        meta[md.FINGERPRINT] = dg.MetadataValue.text(cur.synthetic_sha256)
    return meta


__all__ = ["SignoffRecord", "record_signoff"]
