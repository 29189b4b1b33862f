"""The cumulative gate (issue 56): the candidate judged on the union of its lineage's releases.

Per part of exposed_records, a training record is exposed by the lineage when any counted release (or
the candidate) exposed it, and is still rare on the current tables; the same on the holdout side is
chance. A record counts once however many releases expose it. Under no memorisation the two sides stay
exchangeable release by release (the holdout is the lineage's, fixed), so the union is exchangeable too,
and the exact conditional test of decision/exposure_test.py applies to the union's counts unchanged,
part by part at the part's weight.

Every publication is another look at the same growing count, so the i-th look is tested at
``level · 6 / (π² i²)``: the looks' levels sum to the gate's level (Σ 1/i² = π²/6), which bounds the
lineage's false-alarm rate over any number of releases (Bonferroni over looks; the looks are
positively dependent, so it is conservative). i counts the looks that passed, plus one: until its
first false alarm a lineage's looks all pass, so the first one happens at some i with probability at
most that i's share; a look that fails does not move i (refused candidates cannot wear the level
down, nor a retry buy a looser one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..decision.exposure_test import decide, floor

#: a part's records: (training names, holdout names)
Sides = tuple[set[str], set[str]]


def look_level(level: float, look: int) -> float:
    """The i-th look's share of the gate's level (the looks' shares sum to ``level``)."""
    return level * 6.0 / (math.pi**2 * look**2)


def union_parts(
    candidate: Mapping[str, Sides], earlier: Sequence[Mapping[str, Sides]], rare: Mapping[str, Sides]
) -> dict[str, Sides]:
    """Per part, the rare records exposed by the candidate or any earlier release, on both sides."""
    out = {}
    for part, (rare_t, rare_h) in rare.items():
        t, h = set(candidate.get(part, (set(), set()))[0]), set(candidate.get(part, (set(), set()))[1])
        for release in earlier:
            et, eh = release.get(part, (set(), set()))
            t |= et
            h |= eh
        out[part] = (t & rare_t, h & rare_h)
    return out


def people(parts: Mapping[str, Sides], counted: Sequence[str]) -> Sides:
    """The records any counted part exposes (nearer is a membership signal, not a count of people)."""
    t: set[str] = set()
    h: set[str] = set()
    for part in counted:
        if part in parts:
            t |= parts[part][0]
            h |= parts[part][1]
    return t, h


def copies_to_fail(k_t: int, k_c: int, share: float, level: float, limit: int = 100_000) -> int | None:
    """The fewest new training exposures that make the union's part fail at ``level`` with its chance
    count unchanged (None: beyond ``limit``)."""
    from ..decision.exposure_test import p_value

    if p_value(k_t, k_c, share) <= level:
        return 0
    lo, hi = 0, 1
    while p_value(k_t + hi, k_c, share) > level:
        if hi > limit:
            return None
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if p_value(k_t + mid, k_c, share) <= level else (mid, hi)
    return hi


def decide_union(
    union: Mapping[str, Sides],
    rare: Mapping[str, Sides],
    weights: Mapping[str, float],
    *,
    level: float,
    next_level: float,
    threshold: float,
    counted: Sequence[str],
) -> dict[str, Any]:
    """The union's decision: ``fail`` when a part's training count is beyond chance at its share of
    ``level`` (evidence of risk), else ``pass`` (each release's own gate already asks for evidence of
    safety at its size); with the people counted, the chance they imply, and the lineage's floor: how
    many verbatim copies beyond chance fail the next look with 95 % probability."""
    from ..engine.exposure import PARTS

    rows = []
    for part, (t, h) in union.items():
        n_t, n_c = len(rare[part][0]), len(rare[part][1])
        if n_t == 0 or part not in weights:
            continue
        rows.append({"part": PARTS.index(part), "k_t": len(t), "n_t": n_t, "k_c": len(h), "n_c": n_c,
                     "weight": weights[part], "registered": 1.0})  # fmt: skip
    who = people(union, counted)
    rare_t, rare_h = people(rare, counted)
    chance = len(who[1]) * len(rare_t) / len(rare_h) if rare_h else 0.0
    status, reason, decision = decide(rows, threshold, level, level, accepted_floor=10**9,
                                      people=(len(who[0]), chance))  # fmt: skip
    verbatim = next((r for r in decision["parts"] if r["part"] == "verbatim"), None)  # type: ignore[union-attr]
    lineage_floor = room = None
    if verbatim is not None:
        at = next_level * weights["verbatim"]
        lineage_floor = floor(verbatim["rare"], verbatim["exposed_holdout"], verbatim["rare_holdout"], at)
        room = copies_to_fail(verbatim["exposed"], verbatim["exposed_holdout"], verbatim["pi"], at)
    return {
        "status": "fail" if status == "fail" else "pass",
        "reason": reason if status == "fail" else None,
        "decision": decision,
        "people": len(who[0]),
        "people_holdout": len(who[1]),
        "chance": chance,
        "floor_people": lineage_floor,
        # how many rare records copied verbatim by the next release fail the lineage, chance unchanged
        "room_people": room,
    }


__all__ = ["Sides", "decide_union", "look_level", "people", "union_parts"]
