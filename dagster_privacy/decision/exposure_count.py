"""The decision on exposed records (issue 45): an exact conditional binomial test of "no excess", and
the floor in people it implies.

Under no memorisation a rare training record and a rare holdout record are equally likely to be
reproduced (exposure.py keeps the two sides exchangeable), so given the m = k_t + k_c exposed records
of a part, the training count is Binomial(m, π) with π = n_t / (n_t + n_c), the rare records' share on
the training side. The p-value is P(X ≥ k_t): exact at any count, 0 to 50 included, where a normal
interval on two rates of a few per thousand is not. Each part (verbatim, near) is tested at its weight's
share of the gate's level (weighted Bonferroni), so the gate's false alarm stays within its level.

The **floor in people**: the smallest number K of rare training records copied into the release (each
copy counted by the part with probability ``registered``: 1 for verbatim copies, the measured share for
one-cell edits) for which the part fails with probability ≥ ``POWER``, with the chance counts drawn as
Poisson around what the holdout side shows (k_c, and k_c · n_t / n_c on the training side).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..engine.exposure import PARTS

#: the probability with which a leak at the floor fails the gate
POWER = 0.95
#: bands tested within their part, their records weighing more (issue 55): a part's p-value is then that
#: of X_band + w·X_far (each binomial given its exposed count), not of its count; the band has no level
#: of its own. Three: on Adult's split seeds the power at 100 one-cell edits peaks between 2 and 5
SUBSTRATA = {"cells_1_far": ("cells_1", 3)}
_TAIL = 1e-10


def pi(n_t: int, n_c: int) -> float:
    """The chance share of exposures on the training side."""
    return n_t / (n_t + n_c) if n_t + n_c else 1.0


def p_value(k_t: int, k_c: int, share: float) -> float:
    """P(X ≥ k_t), X ~ Binomial(k_t + k_c, share): how surprising k_t training exposures are by chance."""
    from scipy.stats import binom

    if k_t <= 0:
        return 1.0
    return float(binom.sf(k_t - 1, k_t + k_c, share))


def p_value_exact(k_t: int, n_t: int, k_c: int, n_c: int) -> float:
    """P(X ≥ k_t), X ~ Hypergeometric: of the n_t + n_c records, k_t + k_c exposed, n_t of them on the
    training side — Fisher's one-sided exact test, for a part whose chance rate is high (the nearer
    part: a quarter to a third of records), where the binomial above, exact for rare exposures, is
    conservative (it takes the exposed as drawn with replacement)."""
    from scipy.stats import hypergeom

    if k_t <= 0:
        return 1.0
    return float(hypergeom.sf(k_t - 1, n_t + n_c, n_t, k_t + k_c))


def p_value_banded(part: tuple[int, int, int, int], far: tuple[int, int, int, int], w: int) -> float:
    """P(X_band + w·X_far ≥ k_band + w·k_far): ``part`` and ``far`` are (k_t, n_t, k_c, n_c), the far
    band's records among the part's; each band's training count is Binomial(its exposed, its π), the
    two independent given their counts (the bands are disjoint)."""
    from scipy.stats import binom

    kb, nb, cb, hb = (a - b for a, b in zip(part, far, strict=True))
    kf, nf, cf, hf = far
    if min(kb, nb, cb, hb) < 0:  # not a band of the part (a hash collision): the merged test, never NaN
        return p_value(part[0], part[2], pi(part[1], part[3]))
    t = kb + w * kf
    if t <= 0:
        return 1.0
    xf = np.arange(kf + cf + 1)
    pf = binom.pmf(xf, kf + cf, pi(nf, hf))
    return float(np.clip(pf @ binom.sf(t - w * xf - 1, kb + cb, pi(nb, hb)), 0.0, 1.0))


def beyond_chance(k_t: int, k_c: int, ratio: float, confidence: float = 0.95) -> dict[str, float]:
    """The training records exposed beyond chance, in people, with one-sided exact bounds (issue 57).

    Given m = k_t + k_c exposed records, k_t ~ Binomial(m, p); chance alone gives p = π = r / (1 + r),
    r = n_t / n_c. The excess over chance is X(p) = m (p (1 + r) − r) = E[k_t] − r E[k_c], 0 at π; its
    bounds are X at the Clopper-Pearson bounds of p (each one-sided at ``confidence``), clipped to
    [0, k_t]: at least ``lower`` and at most ``upper`` people beyond chance."""
    from scipy.stats import beta

    m = k_t + k_c
    if m == 0:
        return {"estimate": 0.0, "lower": 0.0, "upper": 0.0}
    tail = 1.0 - confidence
    p_lo = float(beta.ppf(tail, k_t, m - k_t + 1)) if k_t > 0 else 0.0
    p_hi = float(beta.ppf(confidence, k_t + 1, m - k_t)) if k_t < m else 1.0

    def people(p: float) -> float:
        return min(float(k_t), max(0.0, m * (p * (1.0 + ratio) - ratio)))

    return {"estimate": people(k_t / m), "lower": people(p_lo), "upper": people(p_hi)}


def _poisson(lam: float) -> tuple[np.ndarray, np.ndarray]:
    """The support of Poisson(lam) but for 1e-10 on either side, and its probabilities (from the lower
    tail up, not 0: at a chance count of a thousand the grid is a few hundred wide, not thousands)."""
    from scipy.stats import poisson

    if lam <= 0:
        return np.array([0]), np.array([1.0])
    low, top = int(poisson.ppf(_TAIL, lam)), int(poisson.isf(_TAIL, lam)) + 1
    x = np.arange(max(0, low), top + 1)
    return x, poisson.pmf(x, lam)


def power(
    extra: int, lam_t: float, lam_c: float, share: float, level: float, registered: float = 1.0
) -> float:
    """P(the part fails at ``level``) when ``extra`` rare training records are copied, each counted
    with probability ``registered``, on top of Poisson(lam_t) and Poisson(lam_c) chance exposures."""
    from scipy.stats import binom

    a, pa = _poisson(lam_t)
    b, pb = _poisson(lam_c)
    if registered >= 1.0:
        js, pj = np.array([extra]), np.array([1.0])
    else:
        js = np.arange(extra + 1)
        pj = binom.pmf(js, extra, registered)
        keep = pj > _TAIL
        js, pj = js[keep], pj[keep]
    total = 0.0
    for j, wj in zip(js, pj, strict=True):
        k_t = a[:, None] + j
        m = k_t + b[None, :]
        rejects = (binom.sf(k_t - 1, m, share) <= level) & (k_t > 0)
        total += float(wj * (pa @ rejects.astype(np.float64) @ pb))
    return total


def floor(
    n_t: int, k_c: int, n_c: int, level: float, *, registered: float = 1.0, limit: int | None = None
) -> int | None:
    """The floor in people (module docstring); None when even ``limit`` copies (default: every rare
    training record) would not fail with probability POWER, or no rare holdout record measures chance."""
    if n_c == 0 or n_t == 0 or registered <= 0:
        return None
    share = pi(n_t, n_c)
    lam_c = float(k_c)
    lam_t = lam_c * n_t / n_c
    top = n_t if limit is None else min(limit, n_t)

    def caught(k: int) -> bool:
        return power(k, lam_t, lam_c, share, level, registered) >= POWER

    lo, hi = 0, 1  # upward by doubling from small K (power(n_t) with edits is slow), then bisect
    while not caught(hi):
        if hi >= top:
            return None
        lo, hi = hi, min(2 * hi, top)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if caught(mid):
            hi = mid
        else:
            lo = mid
    return hi


#: the parts beyond verbatim and one cell, in words: how near a synthetic row is to the records counted
STRATA = {
    "nearer": "nearer than their own nearest neighbour",
    **{f"cells_{k}": f"within {k} cell{'s' * (k > 1)} where no other real record is within {k + 1}"
       for k in (1, 2)},
    "cells_1_wide": "within 1 cell where no other real record is within 1",
    **{f"sole_{k}": f"{k} cell{'s' * (k > 1)} away where no other real record is within {k + 1} of that row"
       for k in (1, 2)},
    "tenth": "within a tenth of their distance to any other real record",
    "hundredth": "within a hundredth of their distance to any other real record",
    "keys": "equal on the key columns, a combination no other real record has",
}  # fmt: skip


#: a part's records in words, for the sentence of a failing part
PART_WORDS = {
    "verbatim": "copied verbatim",
    "verbatim_isolated": "isolated records copied verbatim",
    "near_isolated": "isolated records copied within one cell",
    "near": "records copied within one cell",
    **STRATA,
}


def failing_part(row: dict) -> dict[str, object]:
    """The failing part's training count, chance and people beyond chance with exact bounds."""
    ratio = row["rare"] / row["rare_holdout"]
    return {"part": row["part"], "exposed": row["exposed"], "chance": row["chance"],
            **beyond_chance(int(row["exposed"]), int(row["exposed_holdout"]), ratio)}  # fmt: skip


def failing_words(f: dict) -> str:
    """'copied verbatim: 15 training records against about 2 by chance, about 13 beyond it (at least
    8, 95 %)'."""
    low, n = math.floor(f["lower"]), f["exposed"]
    return (
        f"{PART_WORDS.get(f['part'], f['part'])}: {n} training record{'' if n == 1 else 's'} against about "
        f"{f['chance']:.0f} by chance, about {round(f['estimate'])} beyond it (at least {low}, 95 %)"
    )


def _row(p: dict[str, float], fail_level: float) -> dict[str, Any]:
    """One part's counts, chance, exact p-value at its level and floor in people (decide's rows)."""
    name = PARTS[int(p["part"])]
    k_t, n_t, k_c, n_c = (int(p[k]) for k in ("k_t", "n_t", "k_c", "n_c"))
    level = fail_level * float(p["weight"])
    share = pi(n_t, n_c)
    p_val = None
    if n_c and name not in SUBSTRATA:
        p_val = p_value_exact(k_t, n_t, k_c, n_c) if name == "nearer" else p_value(k_t, k_c, share)
    # the floors a reader is told (verbatim, isolated, one cell edited); the last parts' chance counts run
    # to thousands, where the power sum costs seconds and no sentence reads it; a band has no level
    skip = name in ("near", "nearer") or name in SUBSTRATA
    return {
        "part": name,
        "exposed": k_t,
        "rare": n_t,
        "exposed_holdout": k_c,
        "rare_holdout": n_c,
        "chance": k_c * n_t / n_c if n_c else None,
        "pi": share,
        "p_value": p_val,
        "level": level,
        "floor_people": None if skip else floor(n_t, k_c, n_c, level, registered=float(p["registered"])),
        "registered": float(p["registered"]),
    }


def _banded(rows: list[dict[str, Any]]) -> None:
    """A part with a far band present takes the banded p-value (SUBSTRATA); its floor stays the merged
    count's, which holds for copies spread over the bands as their records are (docs/metrics.md)."""
    named = {r["part"]: r for r in rows}
    for band, (parent, w) in SUBSTRATA.items():
        far, part = named.get(band), named.get(parent)
        if far is None or part is None or not part["rare_holdout"] or not far["rare_holdout"]:
            continue
        counts = [tuple(int(r[k]) for k in ("exposed", "rare", "exposed_holdout", "rare_holdout"))
                  for r in (part, far)]  # fmt: skip
        part["p_value"] = p_value_banded(counts[0], counts[1], w)  # type: ignore[arg-type]
        part["band"] = {"part": band, "weight": w}


def decide(
    parts: list[dict[str, float]],
    threshold: float,
    fail_level: float,
    pass_level: float,
    accepted_floor: int,
    people: tuple[float, float] | None = None,
) -> tuple[str, str | None, dict[str, Any]]:
    """The gate's decision on its parts: ``fail`` when a part's training count is beyond chance at its
    share of ``fail_level`` and that part's exposed share beyond chance exceeds ``threshold`` (0: any
    excess; evidence of risk; the parts are judged apart: one's chance noise never hides another's
    copies); ``pass`` when not and the verbatim floor in people is at or below ``accepted_floor`` (a
    release copying that many rare records would have failed with 95 % probability: evidence of safety
    at that size); else ``inconclusive``. Returns (status, reason,
    decision). Unlike judge's upper-bound pass on an excess share, the pass here is the test's power at
    this table's own chance counts: a floor in people, not an interval on a rate."""
    rows: list[dict[str, Any]] = [_row(p, fail_level) for p in parts]
    _banded(rows)
    decision, head = _union(rows, fail_level, pass_level, people)
    counted = head
    b = decision["beyond"]
    if isinstance(b, dict):  # the people beyond chance, bounded (issue 57)
        counted += f" (beyond it: {math.floor(b['lower'])} to {math.ceil(b['upper'])} people, 95 %)"
    failed = _failing(rows, head, threshold)
    if failed is not None:
        decision["failing"], reason = failed
        return "fail", reason, decision
    if all(r["rare"] == 0 for r in rows):
        return "pass", None, decision
    verbatim_floor = decision["floor_people"].get("verbatim")
    if verbatim_floor is not None and verbatim_floor <= accepted_floor:
        return "pass", None, decision
    return "inconclusive", _inconclusive(counted, verbatim_floor, accepted_floor), decision


def _union(
    rows: list[dict[str, Any]], fail_level: float, pass_level: float, people: tuple[float, float] | None
) -> tuple[dict[str, Any], str]:
    """The decision's figures over the counted parts (their union's people, chance, floors) and the
    sentence that counts them."""
    named = {r["part"]: r for r in rows}
    empty: dict[str, Any] = {"exposed": 0, "rare": 0, "chance": 0.0, "floor_people": None}
    v, iso, near, other = (
        named.get(p, empty) for p in ("verbatim", "verbatim_isolated", "near_isolated", "near")
    )
    exposed = v["exposed"] + near["exposed"] + other["exposed"]  # disjoint by definition
    chance = (v["chance"] or 0.0) + (near["chance"] or 0.0) + (other["chance"] or 0.0)
    by_part = f"verbatim {v['exposed']}, within one cell {near['exposed'] + other['exposed']}"
    if people is not None and people[0] > exposed:  # the margin strata's people too (the metric's union)
        by_part += f", nearer than anyone else by a margin {int(people[0]) - exposed}"
        exposed, chance = int(people[0]), float(people[1])
    floors: dict[str, Any] = {
        "verbatim": v["floor_people"],
        "isolated_verbatim": iso["floor_people"],
        "one_cell_edit": near["floor_people"],
        # issue 55: each margin stratum's floor, in records copied with that alteration and counted there
        **{r["part"]: r["floor_people"] for r in rows if r["part"] in STRATA and r["part"] != "nearer"},
    }
    ratio = v["rare"] / v["rare_holdout"] if v.get("rare_holdout") else None
    decision: dict[str, Any] = {
        "test": "exact conditional test per part (binomial; hypergeometric for nearer; cells_1 with its far "
        "band weighing 3), weighted Bonferroni",
        # the people beyond chance with 95 % one-sided bounds (the union of the counted parts)
        "beyond": None if not ratio else beyond_chance(int(exposed), round(chance / ratio), ratio),
        "excess": exposed - chance,
        "lower": None,
        "upper": None,
        "fail_level": fail_level,
        "pass_level": pass_level,
        "parts": rows,
        "trials": named.get("verbatim", {}).get("rare", 0),  # the rare training records counted
        "exposed": exposed,
        "chance": chance,
        "floor_people": floors,
    }
    return decision, f"{exposed} rare real records exposed ({by_part}); chance explains about {chance:.1f}"


def _failing(rows: list[dict[str, Any]], head: str, threshold: float) -> tuple[Any, str] | None:
    """(the failing part's figures, the reason) when a part is beyond chance at its level and its exposed
    share beyond chance exceeds ``threshold``; else None."""

    def over(r: dict[str, Any]) -> bool:  # the part's own exposed share beyond chance exceeds the threshold
        return r["rare"] > 0 and (r["exposed"] - (r["chance"] or 0.0)) / r["rare"] > threshold

    beyond = [r for r in rows if r["p_value"] is not None and r["p_value"] <= r["level"] and over(r)]
    if not beyond:
        return None
    worst = min(beyond, key=lambda r: r["p_value"])
    # the people beyond chance where the gate found them (the union's noisier parts dilute them:
    # "0 to 19 beyond it" beside a failing verbatim count read as a contradiction)
    failing = failing_part(worst)
    said = f"{head}; {failing_words(failing)}"
    if worst["part"] in STRATA:  # altered copies: the stratum's own counts, against the holdout's
        said = (
            f"{worst['exposed']:,} of {worst['rare']:,} training records have a synthetic row "
            f"{STRATA[worst['part']]}, against {worst['exposed_holdout']:,} of "
            f"{worst['rare_holdout']:,} holdout records (chance); {said}"
        )
    return (
        failing,
        f"evidence of risk: {said}; {worst['part']} p = {worst['p_value']:.2g} ≤ {worst['level']:.2g}",
    )


def _inconclusive(counted: str, verbatim_floor: int | None, accepted_floor: int) -> str:
    """Why neither evidence of risk nor of safety, and what would decide."""
    if verbatim_floor is None:
        why = "no rare holdout record measures chance"
        action = "give a holdout of records the generator never saw (it measures chance)"
    else:
        why = f"a release copying up to {verbatim_floor - 1} rare records verbatim could pass"
        action = (
            "give a larger holdout (it lowers the floor), or accept this table's floor with "
            f"accepted_floor_people: {verbatim_floor} in the policy — which accepts a release copying up to "
            f"{verbatim_floor - 1} rare records verbatim, and needs a waiver with a reason and a sign-off"
        )
    return (
        f"inconclusive: {counted}, none beyond chance, but {why} (the policy accepts a floor of "
        f"{accepted_floor} people: accepted_floor_people). To decide on this table: {action}"
    )


__all__ = [
    "POWER",
    "SUBSTRATA",
    "beyond_chance",
    "decide",
    "floor",
    "p_value",
    "p_value_banded",
    "p_value_exact",
    "pi",
    "power",
]
