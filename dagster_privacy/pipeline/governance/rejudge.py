"""Re-judging what is published: ``published_release_still_passes``, a blocking check on
``published_release``.

The release checks judge the *latest materialization* of the synthetic table; a release already in
the publication target stays there whatever a newer metric version, a stricter policy or a new real
extract would say of it. This check reads the release the target holds (its content fingerprint
checked against the publication log), evaluates it under the current policy against the current real
and holdout tables, and fails when the verdict is fail — so the Dagster UI and alerts show a published
release that no longer passes. ``dagster-privacy withdraw`` then removes it with a record.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from ...data.tables import fingerprint
from ...decision import policy as pol
from ...errors import safe_reason
from ...evaluation import Evaluation
from ...results import Status
from .. import metadata as md
from ..assets import DUCKDB_KEY, PUBLISH_KEY
from ..checks import PolicyLike, failed_closed
from ..publication.target import PublicationRefused, PublishTarget
from ..resources import ReadOnlyDuckDB

CHECK = "published_release_still_passes"


#: the figures table's columns (Dagster column types)
FIGURES = {"metric": "string", "value": "float", "ci_high": "float", "threshold": "float",
           "severity": "string", "status": "string"}  # fmt: skip


def _figures(ev: Evaluation) -> dg.MetadataValue:
    rows = [
        {
            "metric": r.id,
            "value": r.value,
            "ci_high": r.ci[1] if r.ci else None,
            "threshold": r.threshold,
            "severity": r.severity.value,
            "status": r.status.value if r.status else None,
        }  # fmt: skip
        for r in ev.results
    ]
    return md.table(rows, FIGURES)


def judge_published(
    db: ReadOnlyDuckDB, target: PublishTarget, *, policy: pol.Policy, real: str, holdout: str | None
) -> tuple[bool, dict[str, Any], str]:
    """(passed, metadata, description) for the release the target holds, under ``policy`` now."""
    from ...evaluate import evaluate

    held = target.held()
    if held is None:
        return True, {"held": md.text("no release")}, "the publication target holds no release"
    df, row = held
    sha = fingerprint(df)
    if sha != row["sha256"]:
        raise PublicationRefused(
            f"the target's release table (fingerprint {sha[:12]}) is not the release its "
            f"log names ({str(row['sha256'])[:12]}): it was changed outside publication"
        )
    ev = evaluate(
        db.read(real, role="real"),
        df,
        db.read(holdout, role="holdout") if holdout else None,
        policy=policy,
        progress=False,
    )
    passed = ev.verdict is not Status.FAIL
    failing = ev.blocking
    meta = {
        md.RELEASE_ID: dg.MetadataValue.text(str(row["release_id"])),
        md.FINGERPRINT: dg.MetadataValue.text(sha),
        "published_at": md.text(row.get("published_at")),
        "verdict": md.text(ev.verdict.value),
        "failing_metrics": md.json(failing),
        "findings": md.json(ev.findings),
        "metrics": _figures(ev),
        "policy": md.json(ev.policy),
        "versions": md.json(ev.versions),
        "tables": md.json(ev.tables),
        "summary": dg.MetadataValue.md(
            f"**Published release `{row['release_id']}`** under policy `{ev.policy.get('name')}` now: "
            f"**{ev.verdict.value.upper()}**"
            + (f" — failing: {', '.join(failing)}" if failing else "")
            + (
                ""
                if passed
                else f"\n\nWithdraw it: `dagster-privacy withdraw --release {row['release_id']} "
                "--by NAME --reason TEXT`"
            )
        ),
    }
    desc = (
        f"published release {row['release_id']} still passes"
        if passed
        else f"published release {row['release_id']} no longer passes: "
        f"{', '.join(failing) or ev.verdict.value}"
    )
    return passed, meta, desc


def build_published_release_check(
    *,
    policy: PolicyLike,
    real: str,
    holdout: str | None,
    asset: str = "published_release",
    name: str = CHECK,
    resource_key: str = DUCKDB_KEY,
    publish_resource_key: str = PUBLISH_KEY,
) -> dg.AssetChecksDefinition:
    """The blocking check that re-judges the published release under the current policy and tables."""
    p = pol.load_policy(policy)

    @dg.asset_check(
        asset=asset,
        name=name,
        blocking=True,
        required_resource_keys={resource_key, publish_resource_key},
        description="The release the publication target holds still passes the current policy on "
        "the current real and holdout tables (re-read from the target).",
    )
    def _still_passes(context) -> dg.AssetCheckResult:  # no annotation: a string under __future__ annotations
        try:
            passed, meta, desc = judge_published(
                getattr(context.resources, resource_key),
                getattr(context.resources, publish_resource_key),
                policy=p,
                real=real,
                holdout=holdout,
            )
        except Exception as exc:  # fail closed
            return failed_closed(context, "re-judging the published release", safe_reason(exc))
        return dg.AssetCheckResult(
            passed=passed, severity=dg.AssetCheckSeverity.ERROR, metadata=meta, description=desc
        )

    return _still_passes


def withdraw_release(
    target: PublishTarget,
    *,
    release_id: str,
    by: str,
    reason: str,
    audit: Any = None,
    instance: dg.DagsterInstance | None = None,
    asset: str = "published_release",
) -> dict[str, Any]:
    """Remove ``release_id`` from the DuckDB target with a record. Under the target's lock: check it holds
    that release, append the withdrawal to the sign-off audit table (decision ``withdraw``), then drop
    the release and log the withdrawal with that audit row as its anchor in one atomic replace (a crash
    between the two leaves an audited withdrawal the log lacks; ``audit verify`` names it). Returns
    the log row."""
    import datetime as dt

    from ..resources import valid_release_id
    from .audit import AuditLog, os_user, people_text

    valid_release_id(release_id)
    if not by.strip() or not reason.strip():
        raise PublicationRefused("a withdrawal needs who decides (--by) and a reason (--reason)")
    people_text("--by", by)
    people_text("--reason", reason)
    log = audit if isinstance(audit, AuditLog) else AuditLog(audit)

    def record(held: dict[str, Any]) -> dict[str, Any]:  # under the target's lock, after its check
        row = log.append(
            recorded_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            release_id=release_id,
            decision="withdraw",
            approver=by.strip(),
            os_user=os_user(),
            reason=reason.strip(),
            asset_key=asset,
            synthetic_sha256=held["sha256"],
        )
        return {"audit_seq": row.seq, "audit_head": row.row_hash}

    row = target.withdraw(release_id=release_id, by=by.strip(), reason=reason.strip(), record=record)
    if instance is not None:  # the Dagster UI shows it on the published asset's timeline
        instance.report_runless_asset_event(
            dg.AssetObservation(
                asset_key=dg.AssetKey.from_user_string(asset),
                description=f"release {release_id} withdrawn by {by.strip()}: {reason.strip()}",
                metadata={
                    "withdrawn_release": dg.MetadataValue.text(release_id),
                    "by": dg.MetadataValue.text(by.strip()),
                    "reason": dg.MetadataValue.text(reason.strip()),
                    "withdrawn_at": dg.MetadataValue.text(str(row["published_at"])),
                    "audit_seq": dg.MetadataValue.int(int(row["audit_seq"])),
                },
            )
        )
    return row


__all__ = ["CHECK", "build_published_release_check", "judge_published", "withdraw_release"]
