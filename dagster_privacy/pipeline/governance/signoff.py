"""Recorded human sign-off: the ``privacy_signoff`` check, the decision API and CLI, and the
verification publication runs.

- ``build_signoff_check(asset=...)``: a check that warns "awaiting sign-off" when it runs; defined
  only when the policy has ``require_signoff: true``. Every run that evaluates the release leaves it
  unpublished until a person decides (waiting is no failure: the run succeeds and says so).
- ``record_signoff(...)`` (signoff_record.py): appends a decision to the audit table, then records it as
  an evaluation of ``privacy_signoff``.
- ``verify_signoff(...)``: what ``published_release`` requires — the latest sign-off approves, targets
  the latest materialization, approves the report of the current evaluation (a new evaluation
  invalidates an older approval), is in the audit table and is the audit table's *latest* decision on
  that release and report (a replayed approval event does not beat a later rejection).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg

from ...metrics import registry
from .. import metadata as md
from ..evidence import REPORT_PATH, REPORT_SHA256
from ..instance_records import latest_check_records, latest_materialization
from ..publication.target import PublicationRefused, PublishTarget
from .audit import Anchor, AuditError, AuditLog, AuditRow, verify_anchors, verify_publications

SIGNOFF_CHECK = "privacy_signoff"
DECISIONS = ("approve", "reject")
DEFAULT_ASSET = "synthetic_table"


class SignoffError(PublicationRefused):
    """A sign-off that cannot be recorded, or one that does not allow publication; one line, no values."""


class SignoffPending(SignoffError):
    """No decision on the current report yet: the release waits for a person, which is no failure
    (publication leaves it unpublished and the run succeeds, saying so)."""


AWAITING = "awaiting sign-off"  # the decision the sign-off check records while it waits


def evaluation_of(rec: Any) -> dg.AssetCheckEvaluation | None:
    """The evaluation of a check record; None while it is only planned (or has no event)."""
    ev = rec.evaluation if rec is not None and rec.event is not None else None
    return ev if isinstance(ev, dg.AssetCheckEvaluation) else None


def _key(asset: dg.AssetsDefinition | dg.AssetKey | str) -> dg.AssetKey:
    return dg.AssetKey.from_coercible_or_definition(asset)


def _command(release: str | None, partition: str | None = None) -> str:
    part = f" --partition {partition}" if partition is not None else ""
    rid = release or "<release id>"
    return f"dagster-privacy signoff --release {rid}{part} --decision approve|reject --by NAME --reason TEXT"


def _current_id(
    instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None, prefix: str
) -> str | None:
    """The current evaluation's release id for a hint (None: no evaluation to name)."""
    try:
        return str(current_evaluation(instance, key, partition=partition, name_prefix=prefix).release_id)
    except SignoffError:
        return None


def build_signoff_check(
    *,
    asset: dg.AssetsDefinition | dg.AssetKey | str = DEFAULT_ASSET,
    name: str = SIGNOFF_CHECK,
    partitions_def: dg.PartitionsDefinition | None = None,
) -> dg.AssetChecksDefinition:
    """The blocking ``privacy_signoff`` check: fails, awaiting a person's recorded decision. On a
    partitioned release (``partitions_def``, default: the asset's), one per partition."""
    key = _key(asset)
    if partitions_def is None and isinstance(asset, dg.AssetsDefinition):
        partitions_def = asset.partitions_def
    part: dict[str, Any] = {"partitions_def": partitions_def} if partitions_def is not None else {}

    @dg.asset_check(
        asset=key,
        name=name,
        description="Human sign-off of the privacy report: awaiting sign-off (a warning, not a failure) "
        "until a privacy officer records a decision on this release's report (dagster-privacy signoff); "
        "publication requires an approval.",
        **part,
    )
    def _signoff(context) -> dg.AssetCheckResult:  # no annotation: a string under __future__ annotations
        partition = context.partition_key if context.has_partition_key else None
        latest = latest_materialization(context.instance, key, partition)
        meta = latest.asset_materialization.metadata if latest and latest.asset_materialization else {}
        # a partition's release id is the checks' (<release>+<partition>), not the materialization's
        release = md.recorded(meta, md.RELEASE_ID) if partition is None else None
        out: dict[str, Any] = {
            "decision": md.text(AWAITING),
            "how": dg.MetadataValue.md(
                "Read the privacy report (path and sha256 in the privacy checks' metadata), then run"
                f"\n\n`{_command(release, partition)}`"
            ),
        }
        if release:
            out[md.RELEASE_ID] = dg.MetadataValue.text(str(release))
        # WARN: waiting for a person is not a failure (the run succeeds; publication, which checks the
        # approval itself, leaves the release unpublished and says so)
        return dg.AssetCheckResult(
            passed=False, severity=dg.AssetCheckSeverity.WARN, metadata=out, description=AWAITING
        )

    return _signoff


# ------------------------------------------------------------------------------------ the evaluation


@dataclass(frozen=True)
class CurrentEvaluation:
    """The latest privacy check evaluation of the asset (the one with the report)."""

    release_id: str | None
    report_path: str | None
    report_sha256: str
    synthetic_sha256: str | None
    run_id: str
    target_storage_id: int | None
    verdict: str | None


def current_evaluation(
    instance: dg.DagsterInstance,
    asset: dg.AssetsDefinition | dg.AssetKey | str = DEFAULT_ASSET,
    *,
    partition: str | None = None,
    name_prefix: str = "",
) -> CurrentEvaluation:
    """The latest privacy check evaluation (over every registered metric id, each name after
    ``name_prefix``) and its report; of ``partition`` on a partitioned release."""
    key = _key(asset)
    keys = [dg.AssetCheckKey(key, name_prefix + m) for m in registry()]
    recs = latest_check_records(instance, keys, partition)
    of = f"{key.to_user_string()}" + (f" partition {partition}" if partition is not None else "")
    if not recs:
        raise SignoffError(f"no privacy check evaluation is recorded for {of}")
    latest = max(recs.values(), key=lambda r: r.id)
    if partition is None and latest.partition is not None:
        raise SignoffError(f"the privacy checks of {of} are partitioned: name the partition (--partition)")
    ev = evaluation_of(latest)
    if ev is None:
        raise SignoffError(
            f"the latest privacy evaluation of {of} (run {latest.run_id[:8]}) has not completed"
        )
    sha = md.recorded(ev.metadata, REPORT_SHA256)
    if not sha:
        raise SignoffError(
            f"the latest privacy evaluation of {of} (run {latest.run_id[:8]}) wrote no report: it "
            "failed before one could be written; fix it and run the checks again"
        )
    tmd = ev.target_materialization_data
    return CurrentEvaluation(
        release_id=md.recorded(ev.metadata, md.RELEASE_ID),
        report_path=md.recorded(ev.metadata, REPORT_PATH),
        report_sha256=str(sha),
        synthetic_sha256=md.recorded(ev.metadata, md.FINGERPRINT),
        run_id=latest.run_id,
        target_storage_id=tmd.storage_id if tmd else None,
        verdict=md.recorded(ev.metadata, "verdict"),
    )


def _latest_materialization(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None) -> Any:
    latest = latest_materialization(instance, key, partition)
    if latest is None:
        of = f" partition {partition}" if partition is not None else ""
        raise SignoffError(f"{key.to_user_string()}{of} has never been materialized")
    return latest


# ------------------------------------------------------------------------------------ verification


def verify_signoff(
    instance: dg.DagsterInstance,
    asset: dg.AssetsDefinition | dg.AssetKey | str = DEFAULT_ASSET,
    *,
    audit: AuditLog | str | Path | None = None,
    rows: list[AuditRow] | None = None,
    partition: str | None = None,
    name_prefix: str = "",
) -> dict[str, Any]:
    """Raise ``SignoffError`` unless an approving, audited sign-off of the current evaluation's report
    exists for the latest materialization (of ``partition``); returns the approval's figures for the
    publication metadata. ``rows``: the audit table's rows, already checked by ``anchored_rows`` (else
    read and checked here)."""
    key = _key(asset)
    check = dg.AssetCheckKey(key, SIGNOFF_CHECK)
    rec = latest_check_records(instance, [check], partition)
    ev = evaluation_of(rec.get(check))
    if ev is None:  # the check never ran (not defined, or never evaluated): a refusal, not a wait
        hint = _command(_current_id(instance, key, partition, name_prefix), partition)
        raise SignoffError(f"{AWAITING}: no decision recorded ({hint})")
    decision = md.recorded(ev.metadata, "decision")
    log = audit if isinstance(audit, AuditLog) else AuditLog(audit, instance=instance)
    if decision == AWAITING:  # a re-run check waits anew, but an audited rejection stands (review)
        rows = anchored_rows(log, instance, key) if rows is None else rows
        cur = current_evaluation(instance, key, partition=partition, name_prefix=name_prefix)
        last = latest_decision(rows, release=str(cur.release_id), report_sha256=cur.report_sha256)
        if last is not None and last.decision != "approve":
            what = f"#{last.seq} '{last.decision}' by {last.approver}"
            raise SignoffError(f"the audit's latest decision on this report is {what}: it stays blocked")
        raise SignoffPending(
            f"{AWAITING}: no decision on this report yet ({_command(str(cur.release_id), partition)})"
        )
    if decision != "approve" or not ev.passed:
        who = md.recorded(ev.metadata, "approver")
        raise SignoffError(
            f"the latest sign-off is '{decision or 'awaiting sign-off'}'"
            + (f" by {who}" if who else "")
            + ": the release stays blocked"
        )
    mat = _latest_materialization(instance, key, partition)
    tmd = ev.target_materialization_data
    if tmd is None or tmd.storage_id != mat.storage_id:
        raise SignoffPending(
            f"{AWAITING}: the approval is of an older materialization of the synthetic table"
        )
    cur = current_evaluation(instance, key, partition=partition, name_prefix=name_prefix)
    approved = md.recorded(ev.metadata, REPORT_SHA256)
    if approved != cur.report_sha256:
        raise SignoffPending(
            f"{AWAITING}: the approval is of report {str(approved)[:12]}…, the current evaluation's "
            f"report is {cur.report_sha256[:12]}… (a new evaluation needs a new sign-off)"
        )
    if md.recorded(ev.metadata, md.RELEASE_ID) != cur.release_id:
        raise SignoffError("the approval is of another release than the current evaluation's")
    rows = anchored_rows(log, instance, key) if rows is None else rows
    row = next((r for r in rows if r.row_hash == str(md.recorded(ev.metadata, "audit_row_hash"))), None)
    if (
        row is None
        or row.decision != "approve"
        or row.report_sha256 != approved
        or row.release_id != cur.release_id
    ):
        raise SignoffError(f"the approval is not in the audit table {log.path}")
    last = latest_decision(rows, release=str(cur.release_id), report_sha256=str(approved))
    if last is not None and last.row_hash != row.row_hash:  # a replayed or out-of-order approval event
        raise SignoffError(
            f"the audit table's latest decision on this release and report is #{last.seq} "
            f"'{last.decision}' by {last.approver}, not the approval #{row.seq} presented"
        )
    return {
        "release_id": cur.release_id,
        "approver": row.approver,
        "signed_at": row.recorded_at,
        "report_sha256": row.report_sha256,
        "audit_seq": row.seq,
    }


def anchored_rows(
    log: AuditLog,
    instance: dg.DagsterInstance | None,
    asset: dg.AssetsDefinition | dg.AssetKey | str = DEFAULT_ASSET,
) -> list[Any]:
    """The audit table's rows after checking its chain *and* every head recorded in the Dagster
    sign-off events: a table swapped for an older copy, or cut after a rejection, is refused before
    any decision in it is trusted."""
    try:
        rows, _, problems = audit_problems(log, instance, asset=asset)
    except AuditError as exc:
        raise SignoffError(str(exc)) from None
    if problems:
        raise SignoffError(
            f"the audit table {log.path} does not match the heads Dagster recorded: {problems[0]}"
        )
    return rows


def latest_decision(rows: list[Any], *, release: str, report_sha256: str) -> Any:
    """The latest audited decision on a release and report — a withdrawal of the release counts
    whatever report it followed (None: none)."""
    return next(
        (
            r
            for r in reversed(rows)
            if r.release_id == release and (r.report_sha256 == report_sha256 or r.decision == "withdraw")
        ),
        None,
    )


def audit_anchors(
    instance: dg.DagsterInstance | None,
    log: AuditLog,
    *,
    asset: dg.AssetsDefinition | dg.AssetKey | str = DEFAULT_ASSET,
    target: str | Path | None = None,
) -> list[Any]:
    """The audit heads recorded outside the audit table: every ``privacy_signoff`` evaluation of
    ``asset`` in the Dagster instance (one audit table per deployment: a moved or copied file is still
    held to them), and every publication-log row of a DuckDB ``target`` that recorded one."""
    out: list[Anchor] = []
    if instance is not None:
        key = dg.AssetCheckKey(_key(asset), SIGNOFF_CHECK)
        for rec in instance.event_log_storage.get_asset_check_execution_history(key, limit=100_000):
            ev = evaluation_of(rec)
            seq = md.recorded(ev.metadata, "audit_seq") if ev else None
            row_hash = md.recorded(ev.metadata, "audit_row_hash") if ev else None
            if seq and row_hash:
                out.append(Anchor(int(seq), str(row_hash), f"the Dagster sign-off event of decision #{seq}"))
    if target is not None:
        for row in PublishTarget(path=str(target)).log():
            if row.get("audit_seq") and row.get("audit_head"):
                out.append(
                    Anchor(
                        int(row["audit_seq"]),
                        str(row["audit_head"]),
                        f"the publication log of {target} ({row['action']} {row['release_id']})",
                    )
                )
    return out


def audit_problems(
    log: AuditLog,
    instance: dg.DagsterInstance | None,
    *,
    asset: dg.AssetsDefinition | dg.AssetKey | str = DEFAULT_ASSET,
    target: str | Path | None = None,
) -> tuple[list[AuditRow], int, list[str]]:
    """(the rows, how many recorded heads were compared, what is wrong): the hash chain (AuditError
    when broken), every recorded head, and with a ``target`` its publications and withdrawals."""
    rows = log.verify_chain()
    anchors = audit_anchors(instance, log, asset=asset, target=target)
    problems = verify_anchors(rows, anchors)
    if target is not None:
        problems += verify_publications(
            rows, PublishTarget(path=str(target)).log(), f"the publication log of {target}"
        )
    return rows, len(anchors), problems
