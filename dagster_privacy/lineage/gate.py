"""A candidate judged with its lineage, and recorded (issue 56): the one entry point the CLI and the
Dagster check share.

Under the ledger's lock: read the lineage's releases (chain checked), name the candidate's exposed
records with the lineage's key, refuse a holdout other than the lineage's, judge the union
(cumulative.py) at this look's level, and — when asked to record — append the candidate as ``reserved``
(its verdict lets it publish: it counts from now on) or ``refused`` (a look, no exposure counted).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..results import Evaluation, Status
from . import cumulative as cu
from .ledger import Entry, Ledger, Release, releases
from .names import LineageError, fingerprint, lineage_key, record_names

#: a lineage name: the characters of a release id (it is printed and stored, never a path)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+/-]{0,127}")
#: how many training records the JSON lists by row number
LIST_CAP = 1000


def valid_lineage(name: str) -> str:
    if not _NAME.fullmatch(name) or ".." in name:
        raise LineageError(
            f"a lineage name ({len(name)} characters) must be letters, digits and . _ : + - /, at most "
            "128, starting with a letter or digit, without '..'"
        )
    return name


@dataclass(frozen=True)
class Named:
    """The candidate's records by name: per part, (rare training, rare holdout, exposed training,
    exposed holdout) as name sets; every training name in row order (for row numbers)."""

    rare: dict[str, cu.Sides]
    exposed: dict[str, cu.Sides]
    train: np.ndarray
    train_rows: np.ndarray | None
    holdout_fingerprint: str


def named(records: Any, key: bytes) -> Named:
    t = record_names(records.train, key)
    h = record_names(records.holdout, key)
    rare, exposed = {}, {}
    for name, p in records.parts.items():
        rare[name] = (set(t[p.rare_train].tolist()), set(h[p.rare_holdout].tolist()))
        exposed[name] = (set(t[p.exposed_train].tolist()), set(h[p.exposed_holdout].tolist()))
    return Named(rare, exposed, t, records.train_rows, fingerprint(h, key))


def _records(ev: Evaluation) -> Any:
    try:
        r = ev["exposed_records"]
    except KeyError:
        raise LineageError("a lineage counts people: the policy must run exposed_records") from None
    if r.records is None:
        raise LineageError(
            f"exposed_records did not count records ({r.status.value if r.status else 'unjudged'}: "
            f"{r.reason or 'no reason'}); a lineage needs its count (and a holdout)"
        )
    return r


def judge_lineage(
    ev: Evaluation, *, lineage: str, ledger: Ledger, release_id: str, record: bool = False
) -> Evaluation:
    """``ev`` with its lineage decision (``ev.lineage``; a failing union fails the verdict), and with
    ``record``, the candidate appended to the ledger (reserved when its verdict lets it publish, else
    refused). Raises LineageError on a bad ledger, key or holdout (the CLI exits 2)."""
    from ..metrics.exposure import WEIGHTS

    valid_lineage(lineage)
    result = _records(ev)
    with ledger.locked():
        if _has_key(ledger, lineage):
            key = lineage_key(ledger.path, lineage, create=False)
        else:  # the first release: rows without a key are refused by entries(); a look alone keeps no key
            ledger.entries(lineage, None)
            key = lineage_key(ledger.path, lineage, create=True) if record else secrets.token_bytes(32)
        entries = ledger.entries(lineage, key)
        past = releases(entries)
        if any(r.release_id == release_id for r in past):
            raise LineageError(f"release {release_id} is already in lineage {lineage!r}: give another id")
        cand = named(result.records, key)
        if past and past[0].first.holdout != cand.holdout_fingerprint:
            raise LineageError(
                f"the holdout differs from lineage {lineage!r}'s (fingerprint "
                f"{cand.holdout_fingerprint[:12]} against {past[0].first.holdout[:12]}): a lineage keeps "
                "one holdout; start a new lineage"
            )
        # the i-th look at the count: only a look that passed spends its share (a release refused by the
        # lineage does not move the next look's level, so refusals cannot wear the level down)
        look = 1 + sum(1 for r in past if r.first.figures().get("status") == "pass")
        level = float(ev.levels.get("gate_levels", {}).get("exposed_records", 0.0))
        counted = [p for p in cand.rare if p != "nearer"]
        earlier = [r.first.parts() for r in past if r.counted]
        union = cu.union_parts(cand.exposed, earlier, cand.rare)
        out = cu.decide_union(
            union, cand.rare, WEIGHTS, level=cu.look_level(level, look),
            next_level=cu.look_level(level, look + 1), threshold=float(result.threshold or 0.0),
            counted=counted,
        )  # fmt: skip
        fails = out["status"] == "fail" or ev.verdict is Status.FAIL
        summary = _summary(ev, out, cand, past, counted, look, lineage, ledger, release_id)
        if record:
            entry = ledger.append(
                key, lineage=lineage, release_id=release_id, event="refused" if fails else "reserved",
                look=look, holdout=cand.holdout_fingerprint,
                exposed=json.dumps({p: [sorted(t), sorted(h)] for p, (t, h) in cand.exposed.items()}),
                summary=json.dumps(_stored(summary)),
            )  # fmt: skip
            summary["recorded"] = {"event": entry.event, "seq": entry.seq, "row_hash": entry.row_hash}
    verdict = Status.FAIL if out["status"] == "fail" else ev.verdict
    return ev.model_copy(update={"lineage": summary, "verdict": verdict})


def _has_key(ledger: Ledger, lineage: str) -> bool:
    from .names import key_path

    return key_path(ledger.path, lineage).exists()


def commit(ledger: Ledger, lineage: str, release_id: str, event: str) -> Entry:
    """Record what became of a reserved release: ``published``, ``refused`` (a later check blocked it:
    its exposure stops counting) or ``withdrawn`` (it still counts)."""
    valid_lineage(lineage)
    with ledger.locked():
        key = lineage_key(ledger.path, lineage, create=False)
        entries = ledger.entries(lineage, key)
        mine = [r for r in releases(entries) if r.release_id == release_id]
        if not mine:
            raise LineageError(f"release {release_id} is not in lineage {lineage!r}")
        if event == "refused" and mine[0].status != "reserved":
            raise LineageError(f"release {release_id} is {mine[0].status}: only a reservation is refused")
        return ledger.append(
            key, lineage=lineage, release_id=release_id, event=event, look=mine[0].first.look,
            holdout=mine[0].first.holdout, exposed="{}", summary="{}",
        )  # fmt: skip


def _summary(
    ev: Evaluation, out: dict[str, Any], cand: Named, past: list[Release], counted: list[str], look: int,
    lineage: str, ledger: Ledger, release_id: str,
) -> dict[str, Any]:  # fmt: skip
    """The lineage's figures for the JSON, the report and the terminal (counts, row numbers, never a
    value); the candidate's own people and what it adds to the union."""
    own = cu.people(cand.exposed, counted)
    before = cu.people(cu.union_parts({}, [r.first.parts() for r in past if r.counted], cand.rare), counted)
    union_t = cu.people(cu.union_parts(cand.exposed, [r.first.parts() for r in past if r.counted], cand.rare),
                        counted)[0]  # fmt: skip
    where = _holders(out, cand, past) if out["status"] == "fail" else []
    return {
        "name": lineage,
        "ledger": str(ledger.path),
        "release_id": release_id,
        "look": look,
        "level": cu.look_level(float(ev.levels.get("gate_levels", {}).get("exposed_records", 0.0)), look),
        "status": out["status"],
        "reason": _reason(out, where),
        "people": out["people"],
        "people_holdout": out["people_holdout"],
        "chance": out["chance"],
        "floor_people": out["floor_people"],
        "room_people": out["room_people"],
        "candidate_people": len(own[0]),
        "added_people": len(own[0] - before[0]),
        "releases": [_listed(r) for r in past],
        "held_by": where,
        "parts": out["decision"]["parts"],
        "records": _rows(union_t, cand),
    }


def _listed(r: Release) -> dict[str, Any]:
    f = r.first.figures()
    return {"release_id": r.release_id, "status": r.status, "recorded_at": r.first.recorded_at,
            "people": f.get("candidate_people"), "added_people": f.get("added_people")}  # fmt: skip


def _holders(out: dict[str, Any], cand: Named, past: list[Release]) -> list[dict[str, Any]]:
    """Which earlier counted releases hold the failing part's exposed training records (most first)."""
    beyond = [r for r in out["decision"]["parts"] if r["p_value"] is not None and r["p_value"] <= r["level"]]
    part = min(beyond, key=lambda r: r["p_value"])["part"]
    counted = [r for r in past if r.counted]
    union = cu.union_parts(cand.exposed, [r.first.parts() for r in counted], cand.rare)[part][0]
    out_rows = []
    for r in counted:
        n = len(r.first.parts().get(part, (set(), set()))[0] & union)
        if n:
            out_rows.append({"release_id": r.release_id, "status": r.status, "part": part, "people": n})
    return sorted(out_rows, key=lambda x: -x["people"])


def _reason(out: dict[str, Any], where: list[dict[str, Any]]) -> str | None:
    if out["status"] != "fail":
        return None
    held = ", ".join(f"{w['release_id']} {w['people']} ({w['status']})" for w in where[:5])
    part = where[0]["part"] if where else ""
    tail = f"; earlier releases holding its {part} records: {held}" if held else ""
    return f"the lineage's union fails: {out['reason']}{tail}"


def _rows(union_t: set[str], cand: Named) -> dict[str, Any]:
    """The union's exposed training records by row number of the current training table (JSON only)."""
    at = np.flatnonzero(np.isin(cand.train, list(union_t))) if union_t else np.array([], dtype=int)
    rows = sorted(int(cand.train_rows[i]) if cand.train_rows is not None else int(i) for i in at)
    return {"rows": rows[:LIST_CAP], "total": len(rows), "capped": len(rows) > LIST_CAP,
            "row_numbers": "0-based position in the real table as given (header not counted)"}  # fmt: skip


def _stored(summary: dict[str, Any]) -> dict[str, Any]:
    """What the ledger keeps of a decision: counts only (no row numbers: they change with the table)."""
    keep = ("look", "level", "status", "people", "people_holdout", "chance", "floor_people", "room_people",
            "candidate_people", "added_people")  # fmt: skip
    return {k: summary[k] for k in keep}


__all__ = ["commit", "judge_lineage", "named", "valid_lineage"]
