"""Shared pieces of the attack family: target sampling, rates with intervals, the control-baseline risk.

Every attack of seed 004 §4.3 is scored twice, against training records (e_train) and against control
(holdout) records the generator never saw (e_control), and reported as E of eq. 8 (§5.3.2). The helpers
here keep the two sides on equal footing (the same number of target records per side) and make every
random choice depend on the seed and on record content only, never on row or column order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data import tables as tb
from ...engine.context import EvaluationContext
from ...errors import NotApplicable
from ...results import Measurement, RateDetails
from ..stats import Rate, bonferroni, control_risk, wilson

CONFIDENCE = 0.95


def salt(ctx: EvaluationContext, name: str) -> np.uint64:
    """A 64-bit salt drawn from the metric's own seeded generator."""
    return np.uint64(ctx.rng(name).integers(0, 2**63 - 1, dtype=np.int64))


def content_key(ctx: EvaluationContext, role: str) -> np.ndarray:
    """A 64-bit key per row from its integer codes taken in column-name order: equal records, equal
    keys, whatever the input's row or column order (row hashes depend on the column order)."""
    names = ctx.schema.names
    codes = ctx.codes(role)
    h = np.zeros(codes.shape[0], dtype=np.uint64)
    for c in sorted(names):
        h = tb.mix64(h ^ (codes[:, names.index(c)].astype(np.uint64) + tb.GOLDEN))
    return h


def content_order(ctx: EvaluationContext, role: str, name: str) -> np.ndarray:
    """All rows of a table in a seeded order that depends on their content only.

    Rows are ranked by a salted hash of their content key and of their occurrence among identical rows
    (the first copy by position, the second, ...), so the same records are chosen whatever the row or
    column order of the input (identical rows are interchangeable), and the first n rows are a simple
    random sample of rows: hashing the content alone put every copy of a record side by side, and on a
    table of twins n targets were a few dozen records (cluster sampling) under intervals binomial in n.
    """
    key = tb.salted_keys(content_key(ctx, role), salt(ctx, f"{name}:{role}"))
    return np.lexsort((np.arange(key.size), key))


def sample_targets(ctx: EvaluationContext, role: str, n: int, name: str) -> np.ndarray:
    """n target rows of one side, chosen by content_order (a seeded sample without replacement)."""
    return content_order(ctx, role, name)[:n]


def hash_order(ctx: EvaluationContext, role: str) -> np.ndarray:
    """Rows sorted by content key: the reference order that makes 'lowest index' ties order-free."""
    return np.argsort(content_key(ctx, role), kind="stable")


def canonical_columns(ctx: EvaluationContext, columns: Sequence[str] | None = None) -> list[str]:
    """Columns in name order: random column choices must not depend on the input's column order."""
    return sorted(ctx.schema.names if columns is None else columns)


def n_targets(ctx: EvaluationContext, n_attacks: int, *, control_rows: int | None = None) -> int:
    """Targets per side: n_attacks, fewer only when a side has fewer rows (both sides the same)."""
    ctl = ctx.n("holdout") if control_rows is None else control_rows
    return int(max(0, min(int(n_attacks), ctx.n("real"), ctl)))


def rate(successes: float, n: int, confidence: float = CONFIDENCE) -> Rate:
    """Wilson rate; successes may be fractional (an average of probabilities, which is conservative)."""
    return wilson(successes, n, confidence)  # type: ignore[arg-type]


def rate_dict(r: Rate, successes: float | None = None) -> RateDetails:
    s = r.value * r.n if successes is None else successes
    return RateDetails(
        rate=r.value,
        center=r.center,
        ci=[r.low, r.high],
        successes=float(s) if not float(s).is_integer() else int(s),
        n=r.n,
    )


def measured(value: float, error: float, n: int) -> Rate:
    """A figure that is not a binomial rate (NRMSE, an average TCAP) with a symmetric error."""
    return Rate(0, n, value, value, value - error, value + error)


@dataclass
class Side:
    """One attack scored on training and control targets (and the naive guess, where defined)."""

    train: Rate
    control: Rate
    naive: Rate | None = None
    e_star: float = 1.0
    train_successes: float | None = None
    control_successes: float | None = None
    binomial: bool = True  # False: the rates are measured figures (NRMSE), not counts: no evidence

    def evidence(self) -> dict[str, float] | None:
        """The counts the gate decides on (policy.judge): successes and trials per side, and e*."""
        if not self.binomial:
            return None
        k_t = self.train.value * self.train.n if self.train_successes is None else self.train_successes
        k_c = (
            self.control.value * self.control.n if self.control_successes is None else self.control_successes
        )
        return {
            "k_t": float(k_t),
            "n_t": self.train.n,
            "k_c": float(k_c),
            "n_c": self.control.n,
            "e_star": float(self.e_star),
        }

    def risk(self) -> tuple[float, tuple[float, float]]:
        return control_risk(self.train, self.control, self.e_star)

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "e_train": rate_dict(self.train, self.train_successes),
            "e_control": rate_dict(self.control, self.control_successes),
        }
        if self.naive is not None:
            out["e_naive"] = rate_dict(self.naive)
        if self.e_star != 1.0:
            out["e_star"] = self.e_star
        E, ci = self.risk()
        out["risk"] = E
        out["risk_ci"] = list(ci)
        ev = self.evidence()
        if ev is not None:
            out["evidence"] = ev
        return out


def family_confidence(m: int) -> float:
    """Per-interval confidence so that m intervals hold simultaneously at 95 % (Bonferroni)."""
    return bonferroni(CONFIDENCE, m)


def worst_of(
    parts: dict[str, dict[str, Any]],
    *,
    label: str,
    sizes: dict[str, int],
    extra: dict[str, Any] | None = None,
    flagged: np.ndarray | None = None,
    empty_status: str = "not_applicable",
) -> Measurement:
    """value = the largest E over the parts (columns, predicate sizes), with its simultaneous interval.
    No part with a figure: ``empty_status`` (a singling-out attack with no predicate has nothing to
    attack)."""
    ok = {k: v for k, v in parts.items() if v.get("risk") is not None}
    if not ok:
        reasons = sorted({str(v.get("reason")) for v in parts.values() if v.get("reason")})
        raise NotApplicable(
            ("nothing to attack: " if empty_status == "nothing_to_attack" else "")
            + ("; ".join(reasons) or "no part to attack"),
            sizes=sizes,
            details={"per_" + label: parts, **(extra or {})},
            status=empty_status,
        )
    worst = max(ok, key=lambda k: (ok[k]["risk"], ok[k]["risk_ci"][1], str(k)))
    w = ok[worst]
    details: dict[str, Any] = {
        label: worst,
        "n_" + label + "s": len(ok),
        "confidence_per_" + label: family_confidence(len(ok)),
        "e_train": w["e_train"],
        "e_control": w["e_control"],
        **({"e_naive": w["e_naive"]} if "e_naive" in w else {}),
        "n_attacks": w.get("n_attacks"),
        **(extra or {}),
        "per_" + label: parts,
    }
    evidence = [v.get("evidence") for v in ok.values()]
    return Measurement(
        value=w["risk"],
        ci=(w["risk_ci"][0], w["risk_ci"][1]),
        raw=w["e_train"]["rate"],
        baseline=w["e_control"]["rate"],
        sizes=sizes,
        details=details,
        flagged=flagged,
        # every part's counts: the gate's maximum is corrected for the selection over the parts
        evidence=tuple(evidence) if all(e is not None for e in evidence) else None,  # type: ignore[arg-type]
    )


def finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0
