"""The cumulative gate (issue 56): the candidate judged on the union of its lineage's releases.

Per part of exposed_records, a training record is exposed by the lineage when any counted release (or
the candidate) exposed it — once rare and exposed, it stays counted, among the rare too, whatever twins
the training table gains later; the same on the holdout side is chance. A record counts once however
many releases expose it. Under no memorisation the two sides stay exchangeable release by release (the
holdout is the lineage's, fixed), so the union is exchangeable too, and the exact conditional test of
decision/exposure_count.py applies to the union's counts unchanged, part by part at the part's weight.

Every look that changes the union is another look at the same growing count, so the i-th such look is
tested at ``level · 6 / (π² i²)``: the looks' levels sum to the gate's level (Σ 1/i² = π²/6), which
bounds the lineage's false-alarm rate over any number of releases (Bonferroni over looks; the looks are
positively dependent, so it is conservative). i counts the earlier looks that passed **and** brought a
training record the union did not hold, plus one: until its first false alarm a lineage's looks all
pass, and a look at an unchanged training side repeats a decision already taken or passes more easily,
so the first false alarm happens at some i with probability at most that i's share. A look that fails
does not move i, nor does a release that adds nothing (the same content under another id cannot wear
the level down).

Of each look's share, HOLDOUT_SHARE goes to the reverse test on the union's holdout side: releases
that reproduce holdout records beyond chance (their generator saw them), one at a time or spread over
several, would raise the union's chance side for good, so the release that tips it is refused and not
counted. A look that adds holdout records only does not move i: they can only raise the p-values.

A policy's ``lineage_budget`` B (people beyond chance the lineage may expose together; 0 by default)
turns the test into one of "more than B beyond chance": when a part is beyond chance at its level, the
lineage fails only when the exact lower bound of people beyond chance over every counted part together
(at one minus half the look's level), or that failing part's own (at one minus half its level), is above
B. At B = 0 that is the exact test itself. A budget above 0 passes more and is a loosening (a waiver, a
sign-off).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..decision.exposure_count import beyond_chance, decide, floor

#: the share of each look's level the reverse test (holdout records beyond chance) takes
HOLDOUT_SHARE = 0.1
#: a part's records: (training names, holdout names)
Sides = tuple[set[str], set[str]]


def look_level(level: float, look: int) -> float:
    """The i-th look's share of the gate's level (the looks' shares sum to ``level``)."""
    return level * 6.0 / (math.pi**2 * look**2)


def _with_earlier(base: Mapping[str, Sides], earlier: Sequence[Mapping[str, Sides]]) -> dict[str, Sides]:
    """Per part, ``base``'s records with every earlier release's exposures added, on both sides."""
    out = {}
    for part, (t0, h0) in base.items():
        t, h = set(t0), set(h0)
        for release in earlier:
            et, eh = release.get(part, (set(), set()))
            t |= et
            h |= eh
        out[part] = (t, h)
    return out


def union_parts(
    candidate: Mapping[str, Sides], earlier: Sequence[Mapping[str, Sides]], rare: Mapping[str, Sides]
) -> dict[str, Sides]:
    """Per part, the records the candidate (among its rare ones) or any earlier release exposed, on both
    sides. An earlier exposure stays counted when its record is no longer rare (a twin added to the
    training table does not unexpose a person): ``ever_rare`` counts it among the rare too."""
    none: Sides = (set(), set())
    own = {
        p: (set(candidate.get(p, none)[0]) & t, set(candidate.get(p, none)[1]) & h)
        for p, (t, h) in rare.items()
    }
    return _with_earlier(own, earlier)


def ever_rare(rare: Mapping[str, Sides], earlier: Sequence[Mapping[str, Sides]]) -> dict[str, Sides]:
    """Per part, the records rare now or exposed by an earlier release (the union's denominators)."""
    return _with_earlier(rare, earlier)


def holdout_beyond_chance(
    candidate: Mapping[str, Sides], rare: Mapping[str, Sides], weights: Mapping[str, float], level: float
) -> dict[str, Any] | None:
    """The worst part whose **holdout** count is beyond chance at its share of ``level`` (the reverse of
    the test: releases reproduce records their generator never saw), or None; given the union with
    ``ever_rare`` denominators. Such a release would raise the lineage's chance side for good: the one
    that tips it is refused, and its records are not counted."""
    from ..decision.exposure_count import p_value, pi

    worst: dict[str, Any] | None = None
    for part, (t, h) in candidate.items():
        n_t, n_c = len(rare[part][0]), len(rare[part][1])
        if part == "nearer" or not weights.get(part) or not n_t or not n_c:  # a band has no level
            continue
        p = p_value(len(h), len(t), 1.0 - pi(n_t, n_c))
        if p <= level * weights[part] and (worst is None or p < worst["p_value"]):
            worst = {"part": part, "exposed": len(t), "exposed_holdout": len(h), "rare": n_t,
                     "rare_holdout": n_c, "p_value": p, "level": level * weights[part]}  # fmt: skip
    return worst


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
    from ..decision.exposure_count import p_value

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
    budget: int = 0,
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
    together = (len(who[0]), len(who[1]), len(rare_t) / len(rare_h) if rare_h else 0.0)
    parts: list[dict[str, Any]] = decision["parts"]
    used = spent_budget(parts, budget, together, level)
    if status == "fail" and budget > 0 and used["over"] is False:
        status, reason = "pass", None
    verbatim = next((r for r in parts if r["part"] == "verbatim"), None)
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
        "budget": used,
    }


def spent_budget(
    parts: Sequence[Mapping[str, Any]], budget: int, together: tuple[int, int, float], level: float
) -> dict[str, Any]:
    """The budget's reading: the people beyond chance over every counted part together (``together``:
    the union's training and holdout people and the rare records' ratio), estimate and exact lower bound
    at one minus half the look's level; ``over`` when that bound, or a part's own bound at one minus half
    its level (copies in one part, whose bound the noisier parts would dilute), exceeds the budget (None:
    no part beyond chance at its level). Halves: the two bounds together keep the look's level."""
    k_t, k_c, ratio = together
    union = beyond_chance(k_t, k_c, ratio, 1.0 - level / 2) if ratio else {"estimate": 0.0, "lower": 0.0}
    reads = [union]
    for r in parts:
        if not r.get("rare_holdout") or not r["level"] > 0:  # a band has no level of its own
            continue
        if r["p_value"] is not None and r["p_value"] <= r["level"]:
            ratio_r = r["rare"] / r["rare_holdout"]
            reads.append(beyond_chance(int(r["exposed"]), int(r["exposed_holdout"]), ratio_r,
                                       1.0 - r["level"] / 2))  # fmt: skip
    low = max(x["lower"] for x in reads)
    # the union over noisy parts can hide copies of records already counted there by chance: the most
    # any reading shows is what the releases used
    return {"people": budget, "estimate": max(x["estimate"] for x in reads), "lower": low,
            "over": low > budget if len(reads) > 1 else None}  # fmt: skip


__all__ = [
    "Sides",
    "decide_union",
    "spent_budget",
    "ever_rare",
    "holdout_beyond_chance",
    "look_level",
    "people",
    "union_parts",
]
