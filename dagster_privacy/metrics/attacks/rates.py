"""The attack family's figures: rates with intervals on each side, and the control-baseline risk E of
eq. 8 (seed 004 §5.3.2) of the strongest attack.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import NotApplicable
from ...results import Measurement, RateDetails
from ..stats import Rate, bonferroni, control_risk, wilson

CONFIDENCE = 0.95


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
