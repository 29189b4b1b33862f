"""The standard preset's gates, for fast test policies (issue 54: a policy without a preset that leaves
out a gate of standard loosens it, and needs a waiver with a sign-off): every test policy holds the
seven, at standard's entries, beside the metrics it tests (about 0.7 s together on the 1,200-row demo
split). Their checks, for the tests that list them."""

from __future__ import annotations

#: standard's gates (decision: every one at its threshold and weight), copied from presets/standard.yaml
#: and the metrics' defaults; tests/decision/test_loosening.py checks they are standard's
STANDARD_GATES = {
    "dcr_percentile": {"threshold": 0.02, "severity": "ERROR"},
    "exposed_records": {"threshold": 0.0, "severity": "ERROR", "weight": 2.0},
    "inference_distance": {"threshold": 0.15, "severity": "ERROR"},
    "linkability": {"threshold": 0.1, "severity": "ERROR"},
    "membership_inference": {"threshold": 0.05, "severity": "ERROR"},
    "singling_out_univariate": {"threshold": 0.1, "severity": "ERROR"},
    "singling_out_multivariate": {"threshold": 0.15, "severity": "ERROR"},
}
#: the gates of the risks other than membership (the tests that change one risk's gates keep these)
OTHER_RISKS = {m: STANDARD_GATES[m] for m in ("singling_out_univariate", "linkability", "inference_distance")}
STANDARD_GATES_YAML = "".join(
    f"  {m}: {{{', '.join(f'{k}: {v}' for k, v in e.items())}}}\n" for m, e in STANDARD_GATES.items()
)
RISK_CHECKS = {f"privacy_risk_{r}" for r in ("singling_out", "linkability", "inference", "membership")}
#: the checks of the standard gates and of the four risks
STANDARD_CHECKS = {*STANDARD_GATES, *RISK_CHECKS}


def covering(policy: dict, threshold: float | None = None) -> dict:
    """The policy with standard's gates it lacks added to its metrics (at ``threshold``: a loose policy,
    for the tests that sign it)."""
    gates = {
        m: {**e, "threshold": e["threshold"] if threshold is None else threshold}
        for m, e in STANDARD_GATES.items()
        if m not in policy.get("metrics", {})
    }
    return {**policy, "metrics": {**policy.get("metrics", {}), **gates}}


#: the reason a test gives for a policy narrower or looser than standard (issue 54: each loosening needs
#: a waiver, which forces a sign-off)
TEST_WHY = "a test of these metrics alone, on seeded data"


def signed(policy: dict) -> dict:
    """The policy with a waiver for each field it loosens against its preset (or standard)."""
    from dagster_privacy.decision import policy as pol

    data = dict(policy)
    probe = pol.Policy.model_validate(_expanded(data), context={"preset": True})
    waivers = {**data.get("waivers", {}), **{x.path: TEST_WHY for x in probe.loosenings()}}
    return {**data, "waivers": waivers} if waivers else data


def _expanded(data: dict) -> dict:
    """The mapping as from_mapping builds it (preset and `every` merged), without validating it."""
    from dagster_privacy.decision import policy as pol

    base = pol._preset_data(data["preset"]) if data.get("preset") else {}
    every = data.get("every") or {}
    merged = pol._merge(base, {k: v for k, v in data.items() if k not in ("preset", "every")})
    if every:
        merged["metrics"] = {m: pol._merge(e, every) for m, e in merged.get("metrics", {}).items()}
    if data.get("preset"):
        merged["preset"] = data["preset"]
    return merged


def signed_yaml(text: str) -> str:
    """A policy YAML with a waiver for each field it loosens (``signed``)."""
    from dagster_privacy.decision.policy_yaml import read_yaml

    data = read_yaml(text) or {}
    extra = {k: v for k, v in signed(data).get("waivers", {}).items() if k not in data.get("waivers", {})}
    if not extra:
        return text
    return text.rstrip("\n") + "\nwaivers:\n" + "".join(f"  {k}: {v}\n" for k, v in extra.items())
