"""What a fast test policy adds so that it requires all four risks (issue 44: a required risk that no
gate assesses blocks the release): the standard preset's cheapest gate of singling out, linkability and
inference, about 0.1 s each on the 1,200-row demo split. Their checks, for the tests that list them."""

from __future__ import annotations

OTHER_RISKS = {
    "singling_out_univariate": {"threshold": 0.1, "severity": "ERROR"},
    "linkability": {"threshold": 0.1, "severity": "ERROR"},
    "inference_distance": {"threshold": 0.15, "severity": "ERROR"},
}
OTHER_RISKS_YAML = "".join(
    f"  {m}: {{threshold: {e['threshold']}, severity: ERROR}}\n" for m, e in OTHER_RISKS.items()
)
OTHER_RISK_CHECKS = {
    *OTHER_RISKS,
    "privacy_risk_singling_out",
    "privacy_risk_linkability",
    "privacy_risk_inference",
}


def covering(policy: dict, threshold: float | None = None) -> dict:
    """The policy with the other risks' gates added to its metrics (at ``threshold``: a loose policy)."""
    gates = {m: {**e, "threshold": threshold or e["threshold"]} for m, e in OTHER_RISKS.items()}
    return {**policy, "metrics": {**policy.get("metrics", {}), **gates}}
