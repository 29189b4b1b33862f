"""What the console shows, read from where the pipeline keeps it: the privacy check evaluations in the
Dagster instance (release id, verdict, report path and sha256), the sign-off audit table (decisions)
and the publication target's log (publications, withdrawals). Read-only: decisions go through
``record_signoff`` and ``withdraw_release``, the CLI's code path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ..pipeline.checks import risk_check_name
from ..pipeline.evidence import check_history
from ..pipeline.governance.audit import AuditLog, AuditRow
from ..pipeline.publication.target import PublishTarget
from ..results import RISK_NAMES

#: the states a release can be in, in the order the release list groups them
STATES = ("awaiting decision", "blocked by its gates", "approved", "rejected", "published", "withdrawn",
          "superseded")  # fmt: skip


@dataclass(frozen=True)
class Evaluated:
    """One evaluation (one run of the privacy checks) of a release."""

    release_id: str
    run_id: str
    time: float
    verdict: str | None
    report_path: str | None
    report_sha256: str | None
    partition: str | None = None  # a partitioned release: the partition it is of
    exposed_records: str | None = None  # the count of exposed records in words (counts, never rows)
    rows: int | None = None  # the release's rows
    generator: str | None = None  # the generator the run was tagged with (evidence.GENERATOR_TAG)


@dataclass
class ReleaseView:
    release_id: str
    evaluations: list[Evaluated] = field(default_factory=list)  # oldest first
    decisions: list[AuditRow] = field(default_factory=list)
    publications: list[dict[str, Any]] = field(default_factory=list)
    #: the release of the asset's latest evaluation (of its partition): the only ones decidable
    current: bool = False
    #: the synthetic asset it is a release of (None: known only from the audit or the log)
    asset: dg.AssetKey | None = None

    @property
    def latest(self) -> Evaluated | None:
        return self.evaluations[-1] if self.evaluations else None

    @property
    def state(self) -> str:
        if self.publications:
            return "published" if self.publications[-1].get("action") == "publish" else "withdrawn"
        latest = self.latest
        on_report = [
            d for d in self.decisions if latest is not None and d.report_sha256 == latest.report_sha256
        ]
        if on_report and on_report[-1].decision in ("approve", "reject"):
            return "approved" if on_report[-1].decision == "approve" else "rejected"
        if not self.current and latest is not None:  # a later evaluation replaced it: nothing to decide
            return "superseded"
        if latest is not None and latest.verdict == "fail":
            return "blocked by its gates"
        return "awaiting decision"


def evaluations(
    instance: dg.DagsterInstance, asset: dg.AssetKey, *, limit: int = 500, name_prefix: str = ""
) -> list[Evaluated]:
    """Every evaluation that wrote a report, one per run, oldest first (the report hook's history)."""
    return [
        Evaluated(
            release_id=str(p["release"]),
            run_id=p["run_id"],
            time=p["time"],
            verdict=p["verdict"],
            report_path=p["report_path"],
            report_sha256=str(p["report_sha256"]),
            partition=p.get("partition"),
            exposed_records=p.get("exposed_records"),
            rows=p.get("rows"),
            generator=p.get("generator"),
        )
        for p in check_history(instance, asset, limit=limit, name_prefix=name_prefix)
        if p["report_sha256"]
    ]


def releases(
    instance: dg.DagsterInstance,
    asset: dg.AssetKey,
    audit: AuditLog,
    target: str | None,
    *,
    name_prefix: str = "",
) -> dict[str, ReleaseView]:
    """Every release the instance, the audit table or the publication log knows, by id; the checks of
    the policy named by ``name_prefix`` (several policies on one asset: ``build_privacy_checks``'s)."""
    out: dict[str, ReleaseView] = {}
    evs = evaluations(instance, asset, name_prefix=name_prefix)
    for e in evs:
        out.setdefault(e.release_id, ReleaseView(e.release_id, asset=asset)).evaluations.append(e)
    latest: dict[str | None, Evaluated] = {e.partition: e for e in evs}  # per partition, the latest
    for e in latest.values():  # each partition's latest release is decidable (one, unpartitioned)
        out[e.release_id].current = True
    for row in audit.rows() if audit.path.is_file() else []:
        out.setdefault(row.release_id, ReleaseView(row.release_id)).decisions.append(row)
    if target:
        for logged in PublishTarget(path=target).log():
            release = str(logged["release_id"])
            out.setdefault(release, ReleaseView(release)).publications.append(logged)
    return out


def privacy_assets(instance: dg.DagsterInstance, *, name_prefix: str = "") -> list[dg.AssetKey]:
    """Every asset of the instance whose privacy checks (of ``name_prefix``) have run: one of its four
    risk checks has an evaluation (issue 46: the console finds an own asset without --asset)."""
    names = [name_prefix + risk_check_name(r) for r in RISK_NAMES]
    return sorted(
        (
            key
            for key in instance.get_asset_keys()
            if any(instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(key, n)) for n in names)
        ),
        key=lambda k: k.to_user_string(),
    )


def releases_of(
    instance: dg.DagsterInstance,
    assets: list[dg.AssetKey],
    audit: AuditLog,
    target: str | None,
    *,
    name_prefix: str = "",
) -> tuple[dict[str, ReleaseView], set[str]]:
    """``releases`` over several assets, and the release ids evaluated on more than one (ambiguous: no
    decision is taken on them without --asset)."""
    out: dict[str, ReleaseView] = {}
    twice: set[str] = set()
    for asset in assets:
        for rid, view in releases(instance, asset, audit, target, name_prefix=name_prefix).items():
            if rid in out and view.evaluations and out[rid].evaluations:
                twice.add(rid)
            elif rid not in out or view.evaluations:  # the asset that evaluated it
                out[rid] = view
    return out, twice


def audit_of(
    audit: AuditLog, instance: dg.DagsterInstance, assets: list[dg.AssetKey], target: str | None
) -> tuple[list[AuditRow], int, list[str]]:
    """The audit table checked against each asset's recorded heads (its sign-off events); the chain and
    the publication log are shared, their problems said once (signoff.audit_problems)."""
    from ..pipeline.governance.signoff import audit_problems

    rows: list[Any] = []
    anchors, problems = 0, list[str]()
    for asset in assets or [dg.AssetKey("synthetic_table")]:
        rows, found, more = audit_problems(audit, instance, asset=asset, target=target)
        anchors, problems = anchors + found, problems + [p for p in more if p not in problems]
    return rows, anchors, problems


__all__ = [
    "STATES",
    "audit_of",
    "Evaluated",
    "ReleaseView",
    "evaluations",
    "privacy_assets",
    "releases",
    "releases_of",
]
