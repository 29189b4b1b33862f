"""How a policy differs from its preset (issue 46, item 9: a calibrated policy raised a gate's threshold
and the report did not say so). A policy with no preset — a calibrated one is self-contained — is
compared with ``standard``, the preset calibration starts from by default."""

from __future__ import annotations

from typing import Any


def differences(policy: Any) -> tuple[str, list[str]]:
    """(the preset compared with, one line per difference: a gate loosened or tightened, an entry added
    or left out); empty when the policy is its preset's, or cannot be compared."""
    from ..decision import policy as pol

    base_name = getattr(policy, "preset", None) or "standard"
    try:
        base = pol.load_policy(base_name)
    except Exception:  # a preset that no longer exists: nothing to compare with
        return base_name, []
    out = []
    for mid, entry in policy.metrics.items():
        was = base.metrics.get(mid)
        if was is None:
            out.append(f"{mid}: added ({entry.severity.value}, threshold {_t(entry.threshold)})")
            continue
        if entry.severity != was.severity:
            out.append(f"{mid}: {was.severity.value} → {entry.severity.value}")
        if entry.threshold != was.threshold:
            looser = entry.threshold is None or (
                was.threshold is not None and entry.threshold > was.threshold
            )
            out.append(
                f"{mid}: threshold {_t(was.threshold)} → {_t(entry.threshold)} "
                f"({'looser' if looser else 'stricter'})"
            )
    out += [
        f"{mid}: left out (was {e.severity.value})"
        for mid, e in base.metrics.items()
        if mid not in policy.metrics
    ]
    return base_name, out + _other_loosenings(policy)


def _other_loosenings(policy: Any) -> list[str]:
    """Every loosening the lines above do not show (levels, floors, weights, parameters, …; issue 54:
    the report read "none" for a policy that published 60 copied records), with its waiver's reason."""
    from ..decision.loosening import covered

    try:
        found = policy.loosenings()
    except Exception:  # a policy object without a preset to compare with: nothing more to say
        return []
    shown = (".threshold", ".severity")
    out = []
    for x in found:
        if x.path.endswith(shown) or (x.path.count(".") == 1 and x.path.startswith("metrics.")):
            continue
        why = next((w for k, w in policy.waivers.items() if covered(x.path, {k: w})), None)
        out.append(x.line() + (f"; waived: {why}" if why else ""))
    return out


def differences_html(policy: Any) -> str:
    """The differences as the report's definition-list entry (escaped)."""
    from html import escape

    base, diff = differences(policy)
    lines = "".join(f"<li>{escape(d)}</li>" for d in diff) or "<li>none</li>"
    head = f"<dt>differences from the preset <code>{escape(base)}</code></dt>"
    return f'{head}<dd><ul id="policy-diff">{lines}</ul></dd>'


def _t(x: float | None) -> str:
    return "none" if x is None else f"{x:g}"


__all__ = ["differences", "differences_html"]
