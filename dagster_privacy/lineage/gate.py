"""A candidate judged with its lineage, and recorded (issue 56): the one entry point the CLI and the
Dagster check share.

Under the ledger's lock: read the lineage's releases (chain checked), name the candidate's exposed
records with the lineage's key, refuse a holdout other than the lineage's, judge the union
(cumulative.py) at this look's level, and — when asked to record — append the candidate as ``reserved``
(its verdict lets it publish: it counts from now on) or ``refused`` (a look, no exposure counted).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..evaluation import Evaluation
from ..results import Status
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
    refused). A release id already recorded with the same records is judged as it was, not recorded
    again (a retried check; a refused one stays refused). Raises LineageError on a bad ledger, key,
    training table or holdout (the CLI exits 2)."""
    valid_lineage(lineage)
    result, level = _records(ev), _gate_level(ev)
    with ledger.locked() if record else contextlib.nullcontext():  # a look alone takes no lock
        key = _key(ledger, lineage, record)
        past = releases(ledger.entries(lineage, key))
        cand = named(result.records, key)
        again = _already(past, release_id, cand, lineage)
        if again is not None:
            past, record = [r for r in past if r.first.seq < again.first.seq], False
        _same_holdout(past, cand, lineage)
        _same_people(past, cand, lineage)
        look = again.first.look if again else 1 + sum(_advanced(r) for r in past)
        out = _decide(result, cand, past, look, level, int(ev.levels.get("lineage_budget") or 0))
        if again is not None and again.status == "refused":
            out = {**out, "status": "fail", "reason": f"release {release_id} was refused at look {look} "
                   "(recorded): it is not counted; judging it again needs a new release id"}  # fmt: skip
        summary = _summary(level, out, cand, past, look, lineage, ledger, release_id)
        if record:
            fails = out["status"] == "fail" or ev.verdict is Status.FAIL
            entry = ledger.append(
                key, lineage=lineage, release_id=release_id, event="refused" if fails else "reserved",
                look=look, holdout=cand.holdout_fingerprint, summary=json.dumps(_stored(summary)),
                exposed=json.dumps({p: [sorted(t), sorted(h)] for p, (t, h) in cand.exposed.items()}),
            )  # fmt: skip
            summary["recorded"] = {"event": entry.event, "seq": entry.seq, "row_hash": entry.row_hash}
        elif again is not None:
            summary["recorded"] = {"event": again.status, "seq": again.first.seq, "again": True}
    verdict = Status.FAIL if out["status"] == "fail" else ev.verdict
    return ev.model_copy(update={"lineage": summary, "verdict": verdict})


def _advanced(r: Release) -> bool:
    """Whether the release's look moved the look index (a row without the field: when it passed)."""
    f = r.first.figures()
    return bool(f.get("advances", f.get("status") == "pass"))


def _gate_level(ev: Evaluation) -> float:
    """exposed_records' level under the policy; a lineage needs it to gate (WARN tests at level 0)."""
    level = float(ev.levels.get("gate_levels", {}).get("exposed_records", 0.0) or 0.0)
    if level <= 0:
        raise LineageError("a lineage is judged by exposed_records: the policy must make it a gate (ERROR)")
    return level


def _same_people(past: list[Release], cand: Named, lineage: str) -> None:
    """Every training record an earlier counted release exposed is still in the training table: people
    cannot leave a lineage (a record dropped from the table would drop out of its count)."""
    exposed: set[str] = set()
    for r in past:
        if r.counted:
            for t, _ in r.first.parts().values():
                exposed |= t
    missing = len(exposed - set(cand.train.tolist()))
    if missing:
        raise LineageError(
            f"the training table lacks {missing} record(s) earlier releases of lineage {lineage!r} exposed: "
            "people cannot leave a lineage; start a new lineage (the ledger keeps this one)"
        )


def _counted(cand: Named) -> list[str]:
    """The parts that count people (nearer is a membership signal: tested, not counted)."""
    return [p for p in cand.rare if p != "nearer"]


def _key(ledger: Ledger, lineage: str, record: bool) -> bytes:
    """The lineage's key; at its first release created when recording (a look alone keeps none: a
    random key names the records of this look only). Rows without a key are refused by entries()."""
    key = ledger.key(lineage)
    if key is not None:
        if not ledger.entries(lineage, key):  # a key is made with a lineage's first recorded release
            raise LineageError(
                f"lineage {lineage!r} has a key but no rows in {ledger.where}: its rows were deleted (or a "
                "first recording crashed: then remove its key file from the keys folder)"
            )
        return key
    ledger.entries(lineage, None)
    return lineage_key(ledger.keys, lineage, create=True) if record else secrets.token_bytes(32)


def _same_holdout(past: list[Release], cand: Named, lineage: str) -> None:
    if past and past[0].first.holdout != cand.holdout_fingerprint:
        raise LineageError(
            f"the holdout differs from lineage {lineage!r}'s (fingerprint {cand.holdout_fingerprint[:12]} "
            f"against {past[0].first.holdout[:12]}): a lineage keeps one holdout; start a new lineage"
        )


def _decide(
    result: Any, cand: Named, past: list[Release], look: int, level: float, budget: int = 0
) -> dict[str, Any]:
    """The union of the counted earlier releases and the candidate, judged at this look's level (but
    HOLDOUT_SHARE, which the reverse test on the candidate's own holdout exposures takes)."""
    from ..metrics.exposure import WEIGHTS

    earlier = [r.first.parts() for r in past if r.counted]
    union = cu.union_parts(cand.exposed, earlier, cand.rare)
    rare = cu.ever_rare(cand.rare, earlier)
    at = cu.look_level(level, look)
    levels = {
        "level": at * (1 - cu.HOLDOUT_SHARE),
        "next_level": cu.look_level(level, look + 1) * (1 - cu.HOLDOUT_SHARE),
    }
    threshold = float(result.threshold or 0.0)
    out = cu.decide_union(
        union, rare, WEIGHTS, **levels, threshold=threshold, counted=_counted(cand), budget=budget
    )
    before = cu.union_parts({}, earlier, cand.rare)
    out["union"], out["before"] = union, before  # the summary reads them (people, added, row numbers)
    # the look moves when a training side grows: holdout records alone only raise the p-values
    out["adds"] = any(union[p][0] - before[p][0] for p in union)
    # the union's holdout side (copies of holdout records spread over releases add up too)
    spent = cu.holdout_beyond_chance(union, rare, WEIGHTS, at * cu.HOLDOUT_SHARE)
    if spent is not None and out["status"] != "fail":
        out["status"] = "fail"
        out["reason"] = (
            f"the lineage's releases reproduce holdout records beyond chance ({spent['part']}: "
            f"{spent['exposed_holdout']} of {spent['rare_holdout']} holdout records against "
            f"{spent['exposed']} of {spent['rare']} training records; p = {spent['p_value']:.2g} ≤ "
            f"{spent['level']:.2g}): its generator saw the holdout, or it copies real records from "
            "elsewhere; the holdout would no longer measure chance for this lineage"
        )
    return out


def _already(past: list[Release], release_id: str, cand: Named, lineage: str) -> Release | None:
    """The release recorded under ``release_id`` when it is this candidate again (the same records
    exposed); another content under a recorded id is refused (it would escape the count)."""
    mine = next((r for r in past if r.release_id == release_id), None)
    if mine is None:
        return None
    # the parts both hold: a release recorded before a part existed (cells_1_far) is the same release
    was, now = mine.first.parts(), cand.exposed
    if {p: was[p] for p in was.keys() & now.keys()} != {p: now[p] for p in was.keys() & now.keys()}:
        raise LineageError(
            f"release {release_id} is already in lineage {lineage!r} with other content: give it a new id"
        )
    return mine


def commit(ledger: Ledger, lineage: str, release_id: str, event: str) -> Entry:
    """Record what became of a reserved release: ``published``, ``refused`` (a later check blocked it:
    its exposure stops counting) or ``withdrawn`` (it still counts)."""
    valid_lineage(lineage)
    with ledger.locked():
        key = ledger.key(lineage)
        if key is None:
            ledger.entries(lineage, None)  # rows without their key are refused here
            raise LineageError(f"lineage {lineage!r} has no release in {ledger.where}")
        entries = ledger.entries(lineage, key)
        mine = [r for r in releases(entries) if r.release_id == release_id]
        if not mine:
            raise LineageError(f"release {release_id} is not in lineage {lineage!r}")
        if event == "published" and mine[0].status == "published":  # a re-run published it again
            return mine[0].first
        if event == "refused" and mine[0].status != "reserved":
            raise LineageError(f"release {release_id} is {mine[0].status}: only a reservation is refused")
        return ledger.append(
            key, lineage=lineage, release_id=release_id, event=event, look=mine[0].first.look,
            holdout=mine[0].first.holdout, exposed="{}", summary="{}",
        )  # fmt: skip


def _summary(
    level: float, out: dict[str, Any], cand: Named, past: list[Release], look: int, lineage: str,
    ledger: Ledger, release_id: str,
) -> dict[str, Any]:  # fmt: skip
    """The lineage's figures for the JSON, the report and the terminal (counts, row numbers, never a
    value); the candidate's own people and what it adds to the union."""
    counted = _counted(cand)
    own = cu.people(cand.exposed, counted)
    before = cu.people(out["before"], counted)
    union_t = cu.people(out["union"], counted)[0]
    where = _holders(out, past) if out["status"] == "fail" else []
    return {
        "name": lineage,
        "ledger": ledger.where,
        "release_id": release_id,
        "look": look,
        "level": cu.look_level(level, look),
        # a look that passed and brought a record the union did not hold: the next look's index moves
        "advances": out["status"] == "pass" and bool(out.get("adds")),
        "status": out["status"],
        "reason": _reason(out, where),
        "people": out["people"],
        "people_holdout": out["people_holdout"],
        "chance": out["chance"],
        "floor_people": out["floor_people"],
        "room_people": out["room_people"],
        "budget": out["budget"],
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
            "people": f.get("candidate_people"), "added_people": f.get("added_people"),
            "beyond_chance": f.get("beyond_chance")}  # fmt: skip


def _holders(out: dict[str, Any], past: list[Release]) -> list[dict[str, Any]]:
    """Which earlier counted releases hold the failing part's exposed training records (most first)."""
    beyond = [r for r in out["decision"]["parts"] if r["p_value"] is not None and r["p_value"] <= r["level"]]
    if not beyond:  # failed for another reason (a recorded refusal, holdout records beyond chance)
        return []
    part = min(beyond, key=lambda r: r["p_value"])["part"]
    counted = [r for r in past if r.counted]
    union = out["union"][part][0]
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
    keep = ("look", "level", "status", "advances", "people", "people_holdout", "chance", "floor_people",
            "room_people", "candidate_people", "added_people")  # fmt: skip
    # the people beyond chance after this look (the budget's reading): what each release used of it
    return {**{k: summary[k] for k in keep}, "beyond_chance": summary["budget"]["estimate"]}


def sentence(lineage: dict[str, Any]) -> str:
    """The lineage's decision in one line for the terminal."""
    head = (
        f"lineage {lineage['name']}: {lineage['status']} at look {lineage['look']} (level "
        f"{lineage['level']:.2g}); {lineage['people']} rare real records exposed across its releases, "
        f"chance about {lineage['chance']:.1f}; this release {lineage['candidate_people']}, "
        f"{lineage['added_people']} not exposed before"
    )
    head += _budget_words(lineage)
    room = lineage.get("room_people")
    if room is not None and lineage["status"] != "fail" and not (lineage.get("budget") or {}).get("people"):
        head += f"; {room} more rare records copied verbatim would fail the next look (chance as it stands)"
    recorded = lineage.get("recorded")
    if recorded:
        head += f"; recorded as {recorded['event']} (ledger row {recorded['seq']})"
    return head


def _budget_words(lineage: dict[str, Any]) -> str:
    """The budget's line: the people beyond chance the counted releases used of it together, and what
    each counted release used (its look's reading less the one before it; a refused release is not
    counted)."""
    b = lineage.get("budget") or {}
    if not b.get("people"):
        return ""
    counted = [r for r in lineage.get("releases", []) if r.get("status") != "refused"]
    readings = [(r["release_id"], r["beyond_chance"]) for r in counted if r.get("beyond_chance") is not None]
    readings.append(("this release", b["estimate"]))
    before = [0.0] + [x for _, x in readings[:-1]]
    used = [f"{rid} {x - prev:+.0f}" for (rid, x), prev in zip(readings, before, strict=True)]
    return (
        f"; budget {b['people']} people beyond chance: about {round(b['estimate'])} used together (at least "
        f"{math.floor(b['lower'])}); used per release: {', '.join(used[-6:])}"
    )


__all__ = ["commit", "judge_lineage", "named", "sentence", "valid_lineage"]
