"""Which fields of a policy make a release pass more easily than its preset (issue 54): loosenings.

A policy is compared with its preset (``standard`` when it names none: each of standard's gates it
leaves out loosens too) on what each gate is judged with — the figures ``judge`` receives (threshold,
gated figure, severity, its fail level after the weighted Bonferroni split, the pass level, the
accepted floor and excess, accept_unrun) — and on what decides the verdict and publication (optional,
a gate left out, parameters, sign-off). A field is a loosening when it moves one of these in the
direction that passes a release the preset fails. Each loosening needs a waiver keyed by its field
path (``waivers: {false_alarm: <why>}``), which forces a sign-off and shows in the report, the check
metadata and the audit with the risk waivers.

Every field of :class:`Policy` and :class:`MetricPolicy` is classified in ``POLICY_FIELDS`` or
``ENTRY_FIELDS`` (a test walks the models and fails on a field that is not).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: how a policy-level field can loosen: "lower" / "higher" (that direction passes more easily), "on"
#: (True passes more easily), "off" (False), "signed" (waived risks: a sign-off already), "neutral" (it
#: describes the data or names the policy; the reason is in docs/metrics.md, "Loosenings")
POLICY_FIELDS: dict[str, str] = {
    "name": "neutral",
    "preset": "neutral",  # the base every other field is compared with
    "seed": "neutral",  # every level holds for any seed fixed before the data are seen
    "threat_model": "neutral",  # describes the data: shown in the report's threat model
    "metrics": "entries",  # per entry: ENTRY_FIELDS, and an entry left out
    "require_signoff": "off",
    # lower: each gate fails less; higher: exposed_records passes on a smaller floor (its power is taken at
    # the fail level): either way something passes that the preset fails (review)
    "false_alarm": "any",
    "assurance": "lower",  # a narrower upper bound passes sooner
    "required_risks": "signed",  # a risk left out needs its waiver (Policy._protection)
    "accepted_floor_people": "higher",
    "accepted_floor_share": "higher",
    "accepted_excess": "higher",
    "accept_unrun": "on",
    "lineage_budget": "higher",  # more people beyond chance before a lineage's union fails
    "waivers": "signed",
}

#: how a metric entry's field can loosen ("any": every change needs a reason, its direction is the
#: metric's own: a parameter)
ENTRY_FIELDS: dict[str, str] = {
    "threshold": "higher",  # None (inform) is the highest
    "on": "value",  # the point figure is never above the CI upper bound
    "severity": "WARN",  # ERROR → WARN: no longer gates
    "optional": "on",  # not applicable no longer blocks
    "params": "any",
    "weight": "level",  # judged by the gates' fail levels it gives (weighted Bonferroni)
}


#: gates that pass on their power at the fail level (a floor in people: exposure_count.decide), so a
#: higher level passes them sooner; every other gate passes on an upper bound at the pass level
FLOOR_GATES = ("exposed_records",)


@dataclass(frozen=True)
class Loosening:
    """One field that passes more easily than the preset: its path (the waiver's key), before, after."""

    path: str
    was: Any
    now: Any

    def line(self) -> str:
        return f"{self.path}: {_show(self.was)} → {_show(self.now)} (looser than the preset)"


def _show(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:g}"
    if hasattr(x, "value"):
        return str(x.value)
    return "none" if x is None else str(x)


def _looser(how: str, was: Any, now: Any) -> bool:
    """Whether ``now`` passes more easily than ``was`` for a field classified ``how``."""
    if was == now:
        return False
    rules: dict[str, Callable[[], bool]] = {
        "lower": lambda: now < was,
        "higher": lambda: now is None or (was is not None and now > was),
        "on": lambda: bool(now) and not was,
        "off": lambda: not now and bool(was),
        "value": lambda: now == "value",
        "WARN": lambda: getattr(now, "value", now) != "ERROR",
        "any": lambda: True,
    }
    rule = rules.get(how)
    return bool(rule()) if rule is not None else False


def _levels(policy: Any) -> dict[str, float]:
    """Each gate's fail level as the evaluation gives it (EvaluationPlan.fail_level_of)."""
    gating = {m: e.weight for m, e in policy.metrics.items() if e.blocks_on_failure}
    total = max(1.0, sum(gating.values()))
    return {m: policy.false_alarm * w / total for m, w in gating.items()}


def loosenings(policy: Any, base: Any) -> list[Loosening]:
    """Every field of ``policy`` that passes a release more easily than ``base`` does."""
    out = [
        Loosening(name, getattr(base, name), getattr(policy, name))
        for name, how in POLICY_FIELDS.items()
        if how not in ("neutral", "signed", "entries")
        and _looser(how, getattr(base, name), getattr(policy, name))
    ]
    for mid, was in base.metrics.items():
        now = policy.metrics.get(mid)
        if now is None:
            # a gate of the preset (of standard, for a policy without one) left out blocks nothing
            if was.blocks_on_failure:
                out.append(Loosening(f"metrics.{mid}", "a gate", "left out"))
            continue
        if not was.blocks_on_failure:  # an entry that informs in the preset blocks nothing to loosen
            continue
        for name, how in ENTRY_FIELDS.items():
            if how != "level" and _looser(how, getattr(was, name), getattr(now, name)):
                out.append(Loosening(f"metrics.{mid}.{name}", getattr(was, name), getattr(now, name)))
    out += _weight_loosenings(policy, base, explained=bool(out))
    return out


def _weight_loosenings(policy: Any, base: Any, *, explained: bool = False) -> list[Loosening]:
    """When some gate of both policies gets another fail level than under the preset at the preset's
    false_alarm (a changed false_alarm is its own loosening), every changed weight and every gate the
    preset lacks loosens: a lower level fails less, a higher one passes exposed_records on a smaller
    floor in people."""
    same_alarm = policy.model_copy(update={"false_alarm": base.false_alarm})
    now, was = _levels(same_alarm), _levels(base)
    both = now.keys() & was.keys()
    lower = any(now[m] < was[m] * (1 - 1e-12) for m in both)  # fails less
    higher = any(now[m] > was[m] * (1 + 1e-12) for m in both & set(FLOOR_GATES))  # a smaller floor
    if not (lower or higher):
        return []
    out = [
        Loosening(f"metrics.{m}.weight", base.metrics[m].weight, e.weight)
        for m, e in policy.metrics.items()
        if m in base.metrics and not math.isclose(e.weight, base.metrics[m].weight)
    ]
    # a gate the preset does not have takes its share of the false alarm from the preset's gates (a
    # reviewer promoted 24 informing metrics to ERROR at threshold 1.0: exposed_records' level fell 4×)
    out += [
        Loosening(f"metrics.{m}.severity", "not a gate", "a gate taking level from the preset's gates")
        for m in now.keys() - was.keys()
    ]
    # no field explains it: the count's own level
    if out or explained:
        return out
    return [
        Loosening(f"metrics.{m}.weight", f"level {was[m]:.3g}", f"level {now[m]:.3g}")
        for m in both & set(FLOOR_GATES)
        if not math.isclose(now[m], was[m], rel_tol=1e-12)
    ]


def check_signed(policy: Any) -> None:
    """Refuse (ValueError) a loosening without its waiver, and a field waiver that waives nothing."""
    base_name_ = policy.base_name()
    if policy.preset and policy.preset != base_name_:  # say why it is not compared with its own preset
        base_name_ += f" (preset {policy.preset} is a base only with its waivers, and this policy drops some)"
    found = {x.path: x for x in policy.loosenings()}
    if "require_signoff" in found:  # a waiver would force the very sign-off it waives
        raise ValueError(
            f"require_signoff: {base_name_} requires a privacy officer's sign-off; a policy based on it "
            "cannot drop it (start from preset standard instead)"
        )
    unsigned = [x for path, x in found.items() if not covered(path, policy.waivers)]
    if unsigned:
        x = unsigned[0]
        more = f" (and {len(unsigned) - 1} more: {', '.join(u.path for u in unsigned[1:4])})" * (
            len(unsigned) > 1
        )
        raise ValueError(
            f"{x.path} {_show(x.was)} → {_show(x.now)} passes releases more easily than preset "
            f"{base_name_}{more}: add `waivers: {{{x.path}: <why>}}` for each loosening (or metrics.*.FIELD "
            "for one field of every entry; a waiver forces a privacy officer's sign-off), or keep the "
            "preset's value"
        )
    idle = [k for k in policy.waivers if is_field_path(k) and not any(covered(f, {k: 1}) for f in found)]
    if idle:
        raise ValueError(
            f"waiver of {', '.join(idle)}: the policy does not loosen it against preset {base_name_} "
            "(nothing to waive)"
        )


def declared_column(key: str) -> bool:
    """A waiver ``new_values.COLUMN``: the column's values the real table never holds are legitimate
    (data/new_values.py)."""
    return key.startswith("new_values.") and len(key) > len("new_values.")


def is_field_path(key: str) -> bool:
    """A waiver key that names a policy field (``false_alarm``, ``metrics.crp.threshold``,
    ``metrics.crp``) rather than a risk."""
    parts = key.split(".")
    if parts[1:2] == ["*"]:  # metrics.* (every entry left out), metrics.*.FIELD
        return parts[0] == "metrics" and (len(parts) == 2 or (len(parts) == 3 and parts[2] in ENTRY_FIELDS))
    if len(parts) == 1:
        return parts[0] in POLICY_FIELDS
    return parts[0] == "metrics" and len(parts) in (2, 3) and (len(parts) == 2 or parts[2] in ENTRY_FIELDS)


def covered(path: str, waivers: Any) -> bool:
    """Whether a waiver names this loosening: its path, ``metrics.*.FIELD`` for that field of every entry
    (one reason for a calibrated policy's thresholds, say) or ``metrics.*`` for every gate left out."""
    parts = path.split(".")
    wild = "metrics.*" if len(parts) == 2 else f"metrics.*.{parts[-1]}"
    return path in waivers or (parts[0] == "metrics" and wild in waivers)


__all__ = [
    "ENTRY_FIELDS",
    "POLICY_FIELDS",
    "Loosening",
    "check_signed",
    "covered",
    "declared_column",
    "is_field_path",
    "loosenings",
]
