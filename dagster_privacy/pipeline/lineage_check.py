"""``privacy_lineage``: the blocking check that judges a release with every earlier release judged
against the same real table (issue 56).

The lineage is named by the real table: the real asset's key (partition-independent: every month of a
partitioned release is one lineage) or, for tables read by name, ``table:<name>``; ``lineage="NAME"``
names it yourself. The ledger is ``ledger=`` (a DuckDB file or a ``postgresql://`` URI), else
``DAGSTER_PRIVACY_LEDGER``, else ``<instance directory or $DAGSTER_HOME>/dagster_privacy/ledger.duckdb``
(beside the audit table), else ``~/.dagster_privacy/ledger.duckdb``; a release pipeline that publishes
to PostgreSQL keeps it in that database (settings.ledger_location). A database ledger's keys stay in
the instance's folder. The check reserves a release whose verdict lets it publish (it
counts from then on, published or not: a crash over-counts, never under-counts) and records a blocked one
as refused; a re-run on the same release is judged as before and not recorded twice.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import dagster as dg

from ..data import postgres
from ..evaluation import Evaluation
from ..lineage import sentence
from . import metadata as md
from .settings import LEDGER_ENV, privacy_folder

CHECK = "privacy_lineage"
#: the figures a user charts over the lineage's releases (numeric metadata)
FIGURES = ("look", "people", "people_holdout", "chance", "candidate_people", "added_people", "room_people",
           "floor_people", "level")  # fmt: skip


def default_ledger(instance: Any = None) -> str:
    """``DAGSTER_PRIVACY_LEDGER`` (a file or a ``postgresql://`` URI), else the file beside the instance."""
    return os.environ.get(LEDGER_ENV) or str(privacy_folder(instance) / "ledger.duckdb")


def open_at(location: str | None, instance: Any) -> Any:
    """The ledger at ``location`` (None: the default), its keys folder beside the instance; a file
    ledger's folder is made."""
    from ..lineage import open_ledger

    where = location or default_ledger(instance)
    if not postgres.is_postgres(where):
        Path(where).parent.mkdir(parents=True, exist_ok=True)
    return open_ledger(where, home=privacy_folder(instance))


def lineage_name(real_key: dg.AssetKey | None, real_table: str | None) -> str:
    """The default lineage: the real asset's key, or the real table's name (a readable name when it is
    made of lineage characters, else a hash of it)."""
    text = real_key.to_user_string() if real_key is not None else f"table:{real_table}"
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:+/-]{0,127}", text) and ".." not in text:
        return text
    return "real:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def spec(key: dg.AssetKey, name_prefix: str, deps: list[Any], part: dict[str, Any]) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(
        name_prefix + CHECK,
        asset=key,
        blocking=True,
        additional_deps=deps or None,
        description="Blocking: the release judged with every earlier release of its lineage (the union of "
        "the real people they expose, against chance; a withdrawn release still counts)",
        **part,
    )


def result(
    context: Any, ev: Evaluation, *, key: dg.AssetKey, lineage: str, ledger: str | None, release: str,
    name_prefix: str, extra: dict[str, Any],
) -> dg.AssetCheckResult:  # fmt: skip
    """Judge ``ev`` with its lineage, record it (reserved or refused) and give the check's result."""
    from ..lineage import judge_lineage

    led = open_at(ledger, getattr(context, "instance", None))
    judged = judge_lineage(ev, lineage=lineage, ledger=led, release_id=release, record=True)
    d = judged.lineage or {}
    meta: dict[str, Any] = {f"lineage/{k}": md.number(d.get(k)) for k in FIGURES}
    meta |= {
        "lineage/name": md.text(lineage),
        "lineage/status": md.text(d.get("status")),
        "lineage/recorded": md.text((d.get("recorded") or {}).get("event")),
        "lineage/ledger": md.text(led.location),
        "lineage/releases": md.json(d.get("releases")),
        "lineage/held_by": md.json(d.get("held_by")),
        "release_id": md.text(release),
        # the policy's lineage_budget and what the releases used of it (people beyond chance, estimate)
        "lineage/budget_people": md.number((d.get("budget") or {}).get("people")),
        "lineage/beyond_chance": md.number((d.get("budget") or {}).get("estimate")),
        **extra,
    }
    recorded = (d.get("recorded") or {}).get("event")
    # a release recorded as refused (its own verdict fails) is not counted: this check never passes it
    passed = d.get("status") == "pass" and recorded != "refused"
    context.log.info(sentence(d))
    return dg.AssetCheckResult(
        asset_key=key,
        check_name=name_prefix + CHECK,
        passed=passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=meta,
        description=sentence(d) if passed else str(d.get("reason") or _refused(d)),
    )


def mark_published(instance: Any, required: list[Any], partition: str | None, release: str) -> str | None:
    """After a publication: the lineage's reservation of ``release`` committed as published (what the
    ledger says of it; a reserved release counts already). Returns a line for the log, or None when no
    lineage check is required."""
    from ..lineage import LineageError, commit
    from .instance_records import latest_check_records

    keys = [k for k in required if k.name.endswith(CHECK)]
    for key, rec in latest_check_records(instance, keys, partition).items():
        ev = rec.evaluation if rec is not None and rec.event is not None else None
        meta = ev.metadata if isinstance(ev, dg.AssetCheckEvaluation) else {}
        if md.recorded(meta, "release_id") != release or md.recorded(meta, "lineage/recorded") != "reserved":
            continue
        name, path = md.recorded(meta, "lineage/name"), md.recorded(meta, "lineage/ledger")
        try:
            commit(open_at(str(path), instance), str(name), release, "published")
        except (LineageError, OSError) as exc:  # the publication stands; the reservation counts as it is
            return f"lineage {name}: release {release} stays reserved in the ledger ({exc})"
        return f"lineage {name}: release {release} committed as published ({key.name})"
    return None


def _refused(d: dict[str, Any]) -> str:
    return f"{sentence(d)}; its own verdict fails, so it is recorded as refused and not counted"


__all__ = [
    "CHECK",
    "LEDGER_ENV",
    "default_ledger",
    "lineage_name",
    "mark_published",
    "open_at",
    "result",
    "spec",
]
