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
    import yaml

    data = yaml.safe_load(text) or {}
    extra = {k: v for k, v in signed(data).get("waivers", {}).items() if k not in data.get("waivers", {})}
    if not extra:
        return text
    return text.rstrip("\n") + "\nwaivers:\n" + "".join(f"  {k}: {v}\n" for k, v in extra.items())
