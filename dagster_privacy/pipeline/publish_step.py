"""The body of ``published_release``: re-verify, then write the release atomically to its own target.

Blocking checks act only inside one run (dagster-facts §1, §3): a later run that selects only
``published_release`` would materialize it regardless of check state. So the asset verifies by itself,
before writing anything, that

1. the latest evaluation of every required check exists (not PLANNED) and passed;
2. each targeted the latest materialization of the synthetic asset (storage id);
3. the content it is about to publish is the content that was evaluated: it reads the synthetic table,
   recomputes its fingerprint and compares it with the one the checks and the materialization recorded;
4. the real and holdout tables are still the ones the checks evaluated against (their fingerprints,
   recorded in each privacy check's ``tables`` metadata): a new training extract voids the pass;
5. the sign-off audit table, when there is one, verifies; its head (sequence and hash) is written to
   the publication log, an anchor its writer does not control (audit.py).

Anything else raises ``dg.Failure`` and nothing is written. The target (a DuckDB file, a Parquet file or a
directory of Parquet files) is separate from the real data and is written atomically: to a temporary file
next to it, then ``os.replace`` — a failure leaves the previous publication untouched.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import polars as pl

from ..data.tables import fingerprint
from ..errors import safe_reason
from . import metadata as md
from .evidence import REPORT_SHA256
from .instance_records import latest_check_records, latest_materialization
from .lineage_check import mark_published
from .publication.target import PublicationRefused, PublishTarget

#: the verified checks table's columns (Dagster column types)
VERIFIED_CHECKS = {"check": "string", "passed": "bool", "current": "bool", "same_content": "bool"}


@dataclass(frozen=True)
class Verified:
    release_id: str
    sha256: str
    checks: list[dict[str, Any]]
    #: the evidence reports the required checks recorded (a sign-off must approve one of them)
    reports: frozenset[str] = frozenset()


def verify_release(
    instance: dg.DagsterInstance,
    *,
    asset: dg.AssetKey,
    required: Sequence[dg.AssetCheckKey],
    sha256: str,
    inputs: Mapping[str, str] | None = None,
    partition: str | None = None,
) -> Verified:
    """Re-verify a release from the instance's records; raises ``PublicationRefused`` with the reasons.
    ``inputs``: role → fingerprint of the real / holdout table now, compared with what each check that
    recorded its tables evaluated against. ``partition``: that partition's materialization and check
    evaluations (a partitioned release)."""
    if not required:
        raise PublicationRefused("no required check guards this release")
    of = f" partition {partition}" if partition is not None else ""
    mat = latest_materialization(instance, asset, partition)
    if mat is None:
        raise PublicationRefused(f"{asset.to_user_string()}{of} has never been materialized")
    mat_meta = mat.asset_materialization.metadata if mat.asset_materialization else {}
    mat_fp = md.recorded(mat_meta, md.FINGERPRINT)
    problems: list[str] = []
    if mat_fp is not None and mat_fp != sha256:
        problems.append(
            f"the {asset.to_user_string()} table changed after its latest materialization "
            f"(fingerprint {sha256[:12]} ≠ recorded {mat_fp[:12]}); re-materialize it"
        )
    rows: list[dict[str, Any]] = []
    fingerprints_seen = 0
    release_ids: list[str] = []
    reports: set[str] = set()
    recs = latest_check_records(instance, required, partition)
    for key in required:
        rec = recs.get(key)
        ev = rec.evaluation if rec else None
        row = {"check": key.name, "passed": bool(ev and ev.passed), "current": False, "content": None}
        if ev is None:
            problems.append(
                f"{key.name}: no evaluation recorded" + (" (planned or never run)" if rec else "")
            )
        else:
            tmd = ev.target_materialization_data
            row["current"] = bool(tmd and tmd.storage_id == mat.storage_id)
            if not ev.passed:
                problems.append(f"{key.name}: its latest evaluation failed")
            if not row["current"]:
                problems.append(
                    f"{key.name}: its latest evaluation targets an older materialization "
                    f"of {asset.to_user_string()}{of}"
                )
            fp = md.recorded(ev.metadata, md.FINGERPRINT)
            if fp is not None:
                fingerprints_seen += 1
                row["content"] = fp == sha256
                if fp != sha256:
                    problems.append(
                        f"{key.name}: evaluated other content (fingerprint {fp[:12]} ≠ {sha256[:12]})"
                    )
            report = md.recorded(ev.metadata, REPORT_SHA256)
            if report and key.name != "privacy_signoff":  # the sign-off records the report it approved
                reports.add(str(report))
            rid = md.recorded(ev.metadata, md.RELEASE_ID)
            if rid:
                release_ids.append(str(rid))
            problems += _stale_inputs(key.name, md.recorded(ev.metadata, "tables"), inputs or {})
        rows.append(row)
    if not fingerprints_seen and not problems:
        problems.append("no required check recorded the fingerprint of the content it evaluated")
    if problems:
        raise PublicationRefused("; ".join(problems))
    release = (
        release_ids[0] if release_ids else md.recorded(mat_meta, md.RELEASE_ID) or f"sha256:{sha256[:16]}"
    )
    return Verified(release_id=str(release), sha256=sha256, checks=rows, reports=frozenset(reports))


def _audit_rows(instance: dg.DagsterInstance, asset: dg.AssetKey) -> list[Any] | None:
    """The sign-off audit table's rows, when there is a table, after checking its chain and the heads
    Dagster recorded (SignoffError: it was altered, cut or swapped); read once per publication."""
    from .governance.audit import AuditLog
    from .governance.signoff import anchored_rows

    log = AuditLog(instance=instance)
    return anchored_rows(log, instance, asset) if log.path.is_file() else None


def _stale_inputs(check: str, tables: Any, inputs: Mapping[str, str]) -> list[str]:
    """The input tables that changed since ``check`` evaluated against them."""
    if not isinstance(tables, Mapping):
        return []
    out = []
    for role, now in inputs.items():
        then = (tables.get(role) or {}).get("sha256")
        if then is not None and then != now:
            out.append(
                f"{check}: the {role} table changed after it was evaluated against it (fingerprint "
                f"{now[:12]} ≠ {str(then)[:12]}); run the checks again"
            )
    return out


@dataclass(frozen=True)
class Step:
    """One run of ``published_release``: the synthetic asset, the checks it requires, the partition and
    the privacy checks' prefix (whose report a required sign-off approves)."""

    context: dg.AssetExecutionContext
    syn_key: dg.AssetKey
    required: tuple[dg.AssetCheckKey, ...]
    partition: str | None = None
    name_prefix: str = ""

    @property
    def signoff(self) -> bool:
        return any(k.name == "privacy_signoff" for k in self.required)

    def audit_rows(self) -> list[Any] | None:
        return _audit_rows(self.context.instance, self.syn_key)

    def verify_signoff(self, rows: list[Any] | None) -> dict[str, Any]:
        from .governance.signoff import verify_signoff

        instance, prefix = self.context.instance, self.name_prefix
        return verify_signoff(instance, self.syn_key, rows=rows, partition=self.partition, name_prefix=prefix)


@dataclass(frozen=True)
class Ready:
    """A release verified and ready to write: the table, the inputs' fingerprints now, what the checks
    said, and the audit head read while verifying."""

    df: pl.DataFrame
    inputs: dict[str, str]
    verified: Verified
    anchor: Any = None


def publish_verified(
    context: dg.AssetExecutionContext,
    *,
    target: PublishTarget,
    read: Callable[[], tuple[pl.DataFrame, dict[str, str]]],
    syn_key: dg.AssetKey,
    required: Sequence[dg.AssetCheckKey],
    partition: str | None = None,
    name_prefix: str = "",
) -> dg.MaterializeResult | None:
    """The body of ``published_release`` whichever way the tables are read: ``read()`` guards the target
    against the inputs and returns (the synthetic table, role → fingerprint of real / holdout now); then
    re-verification, the sign-off, and the atomic write under the target's lock (module docstring).
    None, nothing written, while the release awaits a sign-off and every other check passed."""
    step = Step(context, syn_key, tuple(required), partition, name_prefix)
    ready = _verify(step, target, read)
    if ready is None:
        return None
    approval = Approval(step, ready)
    path = _write(step, target, ready, approval)
    context.log.info(f"published release {ready.verified.release_id} ({ready.df.height} rows) to {path}")
    if said := mark_published(context.instance, list(required), partition, ready.verified.release_id):
        context.log.info(said)
    return dg.MaterializeResult(metadata=_metadata(ready, approval.anchor, path, target))


def _verify(
    step: Step, target: PublishTarget, read: Callable[[], tuple[pl.DataFrame, dict[str, str]]]
) -> Ready | None:
    """The release read and re-verified (None: every check passed but the sign-off awaits a person);
    any problem raises ``dg.Failure`` and nothing is written."""
    refusal = pending = None
    try:
        if step.partition is not None and target.kind() != "directory":
            raise PublicationRefused(
                "a partitioned release publishes one file per partition: give a directory as the "
                f"publication target (this one is a {target.kind()} target, which holds one release)"
            )
        df, inputs = read()
        sha = fingerprint(df)
        audit_rows = step.audit_rows()
        problems = _withdrawn(target, sha, step.signoff)
        if step.signoff:  # approval of this very report (signoff.py)
            pending, refused = _signoff_state(step, audit_rows)
            problems += refused
        try:
            verified = verify_release(
                step.context.instance,
                asset=step.syn_key,
                # awaiting a decision, the sign-off check is verified by the decision, not its evaluation
                required=[k for k in step.required if not (pending and k.name == "privacy_signoff")],
                sha256=sha,
                inputs=inputs,
                partition=step.partition,
            )
        except PublicationRefused as exc:
            problems.append(str(exc))
        if problems:
            raise PublicationRefused("; ".join(problems))
    except Exception as exc:  # refusal or unreadable table: nothing is written
        refusal = safe_reason(exc)
    if refusal is not None:
        step.context.log.error(f"publication refused: {refusal}")
        raise dg.Failure(
            description=f"publication refused: {refusal}",
            metadata={"refused": dg.MetadataValue.text(refusal)},
        )
    if pending is not None:  # every other check passed on this content: a person decides next
        step.context.log.warning(f"not published, {pending}")
        return None
    return Ready(df, inputs, verified, audit_rows[-1] if audit_rows else None)


def _withdrawn(target: PublishTarget, sha: str, signoff: bool) -> list[str]:
    """Content withdrawn before is published again only under a policy with a sign-off."""
    gone = target.withdrawn(sha)
    if not gone or signoff:
        return []
    return [
        f"this content was withdrawn as release {gone['release_id']} ({gone['published_at']}, "
        f"by {gone['by']}): publish it again only under a policy with a sign-off"
    ]


def _signoff_state(step: Step, rows: list[Any] | None) -> tuple[str | None, list[str]]:
    """(why it awaits a decision, or None; the problems of a sign-off that refuses)."""
    from .governance.signoff import SignoffError, SignoffPending

    try:
        step.verify_signoff(rows)
    except SignoffPending as exc:  # not a problem: decided once every other check is verified
        return str(exc) or None, []
    except SignoffError as exc:
        return None, [str(exc)] if str(exc) else []
    return None, []


class Approval:
    """The sign-off decided again under the target's lock (no withdrawal or other publication slips in),
    on the audit rows as they are now; ``anchor``, the head the log records, is the one this decision
    read. A decision recorded during the write itself follows the publication."""

    def __init__(self, step: Step, ready: Ready) -> None:
        self.step, self.ready, self.anchor = step, ready, ready.anchor

    def __call__(self) -> dict[str, Any]:
        rows = self.step.audit_rows()
        checks = ", ".join(k.name for k in self.step.required)
        passed = {"reason": "required checks passed on this content: " + checks}
        who = self._approved(rows) if self.step.signoff else passed
        self.anchor = rows[-1] if rows else None
        return {
            **who,
            "audit_seq": self.anchor.seq if self.anchor else None,
            "audit_head": self.anchor.row_hash if self.anchor else None,
        }

    def _approved(self, rows: list[Any] | None) -> dict[str, Any]:
        """Who approved, and which decision, for the log row."""
        from .governance.signoff import SignoffError

        try:
            approval = self.step.verify_signoff(rows)
        except SignoffError as exc:
            raise PublicationRefused(str(exc)) from None
        reports = self.ready.verified.reports
        if reports and approval["report_sha256"] not in reports:
            raise PublicationRefused(  # another policy's report on the same asset (name_prefix)
                f"the approval is of report {str(approval['report_sha256'])[:12]}…, not of the report "
                "the required checks recorded: sign off that report (signoff --name-prefix)"
            )
        return {
            "by": approval["approver"],
            "reason": f"approved in audit row #{approval['audit_seq']} (report sha256 "
            f"{str(approval['report_sha256'])[:16]}…)",
        }


def _write(step: Step, target: PublishTarget, ready: Ready, approval: Approval) -> str:
    """The atomic write under the target's lock; a refusal or failure raises ``dg.Failure``."""
    failure = None
    try:
        return target.publish(
            ready.df,
            release_id=ready.verified.release_id,
            sha256=ready.verified.sha256,
            withdrawn_ok=step.signoff,
            under_lock=approval,
            real_sha256=ready.inputs.get("real"),
            holdout_sha256=ready.inputs.get("holdout"),
        )
    except PublicationRefused as exc:  # decided under the lock: a refusal, as before the lock
        failure = f"publication refused: {safe_reason(exc)}"
    except Exception as exc:  # the previous publication is untouched (atomic replace)
        failure = f"publication failed, nothing was replaced: {safe_reason(exc)}"
    step.context.log.error(failure)
    raise dg.Failure(description=failure)


def _metadata(ready: Ready, anchor: Any, path: str, target: PublishTarget) -> dict[str, Any]:
    """What the publication records: the release, its size, the inputs' fingerprints, the audit head,
    where it went and the checks it verified."""
    verified = ready.verified
    checks = [{**r, "same_content": r["content"]} for r in verified.checks]
    return {
        md.RELEASE_ID: dg.MetadataValue.text(verified.release_id),
        md.FINGERPRINT: dg.MetadataValue.text(verified.sha256),
        "dagster/row_count": dg.MetadataValue.int(ready.df.height),
        "inputs": md.json(ready.inputs),
        "audit_head": md.json({"seq": anchor.seq, "row_hash": anchor.row_hash} if anchor else None),
        "target": dg.MetadataValue.path(path),
        # a directory target: where `withdraw` finds it (the file above is one release in it)
        **({"target_directory": dg.MetadataValue.path(target.path)} if target.kind() == "directory" else {}),
        "verified_checks": md.table(checks, VERIFIED_CHECKS),
    }


__all__ = ["Approval", "Ready", "Step", "Verified", "publish_verified", "verify_release"]
