"""Publication: ``published_release`` re-verifies, then writes the release atomically to its own target.

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

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg
import polars as pl

from ..data.tables import fingerprint
from ..errors import safe_reason
from . import metadata as md
from .assets import DUCKDB_KEY, PUBLISH_KEY
from .checks import AssetRef, asset_value, key_of
from .evidence import REPORT_SHA256
from .lineage_check import mark_published
from .publication.asset_locations import Declared
from .publication.target import PublicationRefused, PublishTarget
from .records import latest_check_records, latest_materialization
from .resources import PostgresTables, ReadOnlyDuckDB


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


def build_published_release(  # noqa: PLR0913
    *,
    synthetic_asset: AssetRef = "synthetic_table",
    synthetic: str = "synthetic",
    required_checks: Sequence[str | dg.AssetCheckKey],
    key: str = "published_release",
    group_name: str = "privacy_release",
    resource_key: str = DUCKDB_KEY,
    publish_resource_key: str = PUBLISH_KEY,
    automation_condition: dg.AutomationCondition | None = None,
    real: str | None = None,
    holdout: str | None = None,
    real_asset: AssetRef | None = None,
    holdout_asset: AssetRef | None = None,
    input_locations: Mapping[str, Declared] | None = None,
    partitions_def: dg.PartitionsDefinition | None = None,
    name_prefix: str = "",
) -> dg.AssetsDefinition:
    """The gated publication asset downstream of the synthetic table.

    ``required_checks``: check names on the synthetic asset (or full keys) whose latest evaluation must
    have passed on this very content; add e.g. ``privacy_signoff`` to require a human sign-off.
    Default automation: ``eager() & all_deps_blocking_checks_passed()`` (it schedules, it does not
    enforce: the body re-verifies).

    Tables by name (``synthetic``, ``real``, ``holdout`` through the table resource under
    ``resource_key``), or as assets (``real_asset``, ``holdout_asset``; the synthetic asset too): each
    loaded by its own IO manager, its fingerprint compared with the one the checks judged. The target is
    then compared with each input's location as its IO manager reported it on the latest materialization
    (``path`` or ``uri`` metadata, of each partition loaded) and as declared in ``input_locations``
    (asset key or role → path or URI; both are compared), and with any path a loaded value names; an
    input whose location is neither reported nor declared is refused (asset_locations.py). A partitioned
    synthetic asset publishes partition by partition, each re-verified against that partition's checks,
    into a directory target (one file per release id, which names the partition). ``name_prefix``: the
    privacy checks' (several policies on one asset), whose report a required sign-off must approve.
    """
    syn_key = key_of(synthetic_asset)
    if partitions_def is None and isinstance(synthetic_asset, dg.AssetsDefinition | dg.AssetSpec):
        partitions_def = synthetic_asset.partitions_def
    from_assets = real_asset is not None
    if from_assets and (real or holdout):
        raise dg.DagsterInvalidDefinitionError("give real/holdout as table names or as assets, not both")
    if partitions_def is not None and not from_assets:
        raise dg.DagsterInvalidDefinitionError(
            "a partitioned release is published through its IO manager: give real_asset= (and holdout_asset=)"
        )
    required = [
        k if isinstance(k, dg.AssetCheckKey) else dg.AssetCheckKey(syn_key, k) for k in required_checks
    ]
    if not required:
        raise dg.DagsterInvalidDefinitionError("published_release needs at least one required check")
    condition = automation_condition or (
        dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()
    )
    spec: dict[str, Any] = {
        "name": key,
        "group_name": group_name,
        "automation_condition": condition,
        "description": "The synthetic release, published only after re-verifying that every required "
        "privacy check passed on the latest materialization and on this very content. Required: "
        + ", ".join(k.name for k in required),
        "metadata": {"required_checks": ", ".join(k.name for k in required)},
        # awaiting a sign-off, the step succeeds without publishing (issue 46: waiting is no failure)
        "output_required": False,
    }
    common = {"syn_key": syn_key, "required": required, "name_prefix": name_prefix}
    if not from_assets:
        resources = {resource_key, publish_resource_key}

        @dg.asset(deps=[syn_key], kinds={"duckdb"}, required_resource_keys=resources, **spec)
        def _published(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
            db: ReadOnlyDuckDB | PostgresTables = getattr(context.resources, resource_key)
            target: PublishTarget = getattr(context.resources, publish_resource_key)

            def read() -> tuple[pl.DataFrame, dict[str, str]]:
                target.guard(db.database, (real, holdout, synthetic))
                inputs = {
                    role: fingerprint(db.read(src, role=role))
                    for role, src in (("real", real), ("holdout", holdout))
                    if src
                }
                return db.read(synthetic, role="synthetic"), inputs

            yield from _published_if(publish_verified(context, target=target, read=read, **common))

        return _published

    real_key = key_of(real_asset)
    holdout_key = key_of(holdout_asset) if holdout_asset is not None else None
    keys = {"synthetic": syn_key, "real": real_key} | ({"holdout": holdout_key} if holdout_key else {})
    declared = dict(input_locations or {})

    def from_values(
        context: dg.AssetExecutionContext, values: Mapping[str, Any]
    ) -> Iterator[dg.MaterializeResult]:
        from ..data.loading import load
        from .publication.asset_locations import AssetInput
        from .publication.asset_locations import input_locations as located

        target: PublishTarget = getattr(context.resources, publish_resource_key)
        partition = context.partition_key if context.has_partition_key else None

        def read() -> tuple[pl.DataFrame, dict[str, str]]:
            inputs = [
                AssetInput(role, k, _loaded_partitions(context, f"{role}_table")) for role, k in keys.items()
            ]
            # a value that is a path is read by the loader: that file is an input too
            paths = [str(v) for v in values.values() if isinstance(v, os.PathLike)]
            target.guard(inputs=lambda: located(context.instance, inputs, declared, paths))
            frames = {role: load(asset_value(v, role), role=role) for role, v in values.items()}
            return frames.pop("synthetic"), {role: fingerprint(df) for role, df in frames.items()}

        yield from _published_if(
            publish_verified(context, target=target, read=read, partition=partition, **common)
        )

    ins = {f"{role}_table": dg.AssetIn(key=k) for role, k in keys.items()}
    asset_spec = {**spec, "ins": ins, "required_resource_keys": {publish_resource_key}, "kinds": {"parquet"}}
    if partitions_def is not None:
        asset_spec["partitions_def"] = partitions_def
    if holdout_key is None:

        @dg.asset(**asset_spec)
        def _published_values(
            context: dg.AssetExecutionContext, synthetic_table: Any, real_table: Any
        ) -> Iterator[dg.MaterializeResult]:
            yield from from_values(context, {"synthetic": synthetic_table, "real": real_table})

        return _published_values

    @dg.asset(**asset_spec)
    def _published_with_holdout(
        context: dg.AssetExecutionContext, synthetic_table: Any, real_table: Any, holdout_table: Any
    ) -> Iterator[dg.MaterializeResult]:
        values = {"synthetic": synthetic_table, "real": real_table, "holdout": holdout_table}
        yield from from_values(context, values)

    return _published_with_holdout


def _published_if(result: dg.MaterializeResult | None) -> Iterator[dg.MaterializeResult]:
    """The materialization of a publication, none while it awaits a sign-off."""
    if result is not None:
        yield result


def _loaded_partitions(context: dg.AssetExecutionContext, input_name: str) -> tuple[str, ...] | None:
    """The partitions of an input asset this run loaded (None: the input is not partitioned)."""
    try:
        return tuple(context.asset_partition_keys_for_input(input_name))
    except Exception as exc:  # Dagster 1.13 says so by a failed check; anything else fails the publication
        if "no asset partitions" in str(exc):
            return None
        raise


def publish_verified(  # noqa: C901, PLR0915
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
    signoff = any(k.name == "privacy_signoff" for k in required)
    checks_named = ", ".join(k.name for k in required)
    refusal = pending = None
    try:
        if partition is not None and target.kind() != "directory":
            raise PublicationRefused(
                "a partitioned release publishes one file per partition: give a directory as the "
                f"publication target (this one is a {target.kind()} target, which holds one release)"
            )
        df, inputs = read()
        sha = fingerprint(df)
        audit_rows = _audit_rows(context.instance, syn_key)
        anchor = audit_rows[-1] if audit_rows else None  # the head the log records
        problems = []
        gone = target.withdrawn(sha)
        if gone and not signoff:
            problems.append(
                f"this content was withdrawn as release {gone['release_id']} ({gone['published_at']}, "
                f"by {gone['by']}): publish it again only under a policy with a sign-off"
            )
        if signoff:  # approval of this very report (signoff.py)
            from .governance.signoff import SignoffError, SignoffPending, verify_signoff

            why, waiting = None, False
            try:
                verify_signoff(
                    context.instance, syn_key, rows=audit_rows, partition=partition, name_prefix=name_prefix
                )
            except SignoffError as exc:
                why, waiting = str(exc), isinstance(exc, SignoffPending)
            if why and waiting:
                pending = why  # not a problem: decided below, once every other check is verified
            elif why:
                problems.append(why)
        try:
            verified = verify_release(
                context.instance,
                asset=syn_key,
                # awaiting a decision, the sign-off check is verified by the decision, not its evaluation
                required=[k for k in required if not (pending and k.name == "privacy_signoff")],
                sha256=sha,
                inputs=inputs,
                partition=partition,
            )
        except PublicationRefused as exc:
            problems.append(str(exc))
        if problems:
            raise PublicationRefused("; ".join(problems))
    except Exception as exc:  # refusal or unreadable table: nothing is written
        refusal = safe_reason(exc)
    if refusal is not None:
        context.log.error(f"publication refused: {refusal}")
        raise dg.Failure(
            description=f"publication refused: {refusal}",
            metadata={"refused": dg.MetadataValue.text(refusal)},
        )
    if pending is not None:  # every other check passed on this content: a person decides next
        context.log.warning(f"not published, {pending}")
        return None

    def under_lock() -> dict[str, Any]:
        """The sign-off decided again under the target's lock (no withdrawal or other publication
        slips in), on the audit rows as they are now; the head the log records is the one this
        decision read. A decision recorded during the write itself follows the publication."""
        nonlocal anchor
        rows = _audit_rows(context.instance, syn_key)
        who: dict[str, Any] = {"reason": "required checks passed on this content: " + checks_named}
        if signoff:  # who approved, and which decision, on the log row too
            from .governance.signoff import SignoffError, verify_signoff

            try:
                approval = verify_signoff(
                    context.instance, syn_key, rows=rows, partition=partition, name_prefix=name_prefix
                )
            except SignoffError as exc:
                raise PublicationRefused(str(exc)) from None
            if verified.reports and approval["report_sha256"] not in verified.reports:
                raise PublicationRefused(  # another policy's report on the same asset (name_prefix)
                    f"the approval is of report {str(approval['report_sha256'])[:12]}…, not of the report "
                    "the required checks recorded: sign off that report (signoff --name-prefix)"
                )
            who = {
                "by": approval["approver"],
                "reason": f"approved in audit row #{approval['audit_seq']} (report sha256 "
                f"{str(approval['report_sha256'])[:16]}…)",
            }
        anchor = rows[-1] if rows else None
        return {
            **who,
            "audit_seq": anchor.seq if anchor else None,
            "audit_head": anchor.row_hash if anchor else None,
        }

    failure = None
    try:
        path = target.publish(
            df,
            release_id=verified.release_id,
            sha256=verified.sha256,
            withdrawn_ok=signoff,
            under_lock=under_lock,
            real_sha256=inputs.get("real"),
            holdout_sha256=inputs.get("holdout"),
        )
    except PublicationRefused as exc:  # decided under the lock: a refusal, as before the lock
        failure = f"publication refused: {safe_reason(exc)}"
    except Exception as exc:  # the previous publication is untouched (atomic replace)
        failure = f"publication failed, nothing was replaced: {safe_reason(exc)}"
    if failure is not None:
        context.log.error(failure)
        raise dg.Failure(description=failure)
    context.log.info(f"published release {verified.release_id} ({df.height} rows) to {path}")
    if said := mark_published(context.instance, list(required), partition, verified.release_id):
        context.log.info(said)
    return dg.MaterializeResult(
        metadata={
            md.RELEASE_ID: dg.MetadataValue.text(verified.release_id),
            md.FINGERPRINT: dg.MetadataValue.text(verified.sha256),
            "dagster/row_count": dg.MetadataValue.int(df.height),
            "inputs": md.json(inputs),
            "audit_head": md.json({"seq": anchor.seq, "row_hash": anchor.row_hash} if anchor else None),
            "target": dg.MetadataValue.path(path),
            # a directory target: where `withdraw` finds it (the file above is one release in it)
            **(
                {"target_directory": dg.MetadataValue.path(target.path)}
                if target.kind() == "directory"
                else {}
            ),
            "verified_checks": dg.MetadataValue.table(
                [
                    dg.TableRecord(
                        {
                            "check": r["check"],
                            "passed": r["passed"],
                            "current": r["current"],
                            "same_content": r["content"],
                        }
                    )
                    for r in verified.checks
                ],
                schema=dg.TableSchema(
                    columns=[
                        dg.TableColumn("check", "string"),
                        dg.TableColumn("passed", "bool"),
                        dg.TableColumn("current", "bool"),
                        dg.TableColumn("same_content", "bool"),
                    ]
                ),
            ),
        }
    )
