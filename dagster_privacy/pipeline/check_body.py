"""The body of the privacy checks (checks.py builds them): one evaluation, then one result per metric, one
blocking result per required risk and the lineage's; whatever raises fails every spec closed, with the
reason (dagster-facts §2)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import dagster as dg

from ..decision import policy as pol
from ..decision.verdict import RiskDecision
from ..engine.executors import RayExecutor
from ..errors import safe_reason
from . import lineage_check
from .assets import DUCKDB_KEY, RELEASE_KEY
from .hook import EvaluationHook
from .translator import DEFAULT_TRANSLATOR, PrivacyCheckTranslator

_Results = Iterator[dg.AssetObservation | dg.AssetCheckResult]

RISK_CHECK_PREFIX = "privacy_risk_"


def risk_check_name(risk: str) -> str:
    """The blocking check of one verdict risk: ``privacy_risk_singling_out`` …"""
    return RISK_CHECK_PREFIX + risk.replace(" ", "_")


def required_risks(plan: pol.EvaluationPlan) -> list[str]:
    """The verdict risks the policy requires (all four but the waived ones), whether or not a gate of
    the plan covers them: a risk no gate assesses fails its check ("not assessed")."""
    return plan.policy.required


#: the partition a check evaluation judged (a partitioned synthetic asset: one evaluation per partition)
PARTITION = "dagster_privacy/partition"


@dataclass(frozen=True)
class CheckBody:
    """What the check's body needs, resolved at definition: the plan, the asset, the hook, the lineage."""

    plan: pol.EvaluationPlan
    key: dg.AssetKey
    on_evaluation: EvaluationHook | None
    lineage: str | None  # the lineage the release is recorded in (None: no lineage check)
    ledger: str | None = None
    name_prefix: str = ""
    translator: PrivacyCheckTranslator = DEFAULT_TRANSLATOR
    resource_key: str = DUCKDB_KEY
    release_resource_key: str | None = RELEASE_KEY
    ray_resource_key: str | None = None


def evaluate_checks(
    context: dg.AssetCheckExecutionContext, body: CheckBody, read: Callable[[], tuple[Any, Any, Any]]
) -> _Results:
    """The body of the check: ``read()`` gives (real, synthetic, holdout or None) — frames read by
    name, or the assets' values — then one evaluation, an observation of the synthetic asset with every
    metric's value (translator.observation), one result per metric; any exception fails every spec."""
    said: dict[str, str | None] = {"release": None, "fingerprint": None}
    try:
        ev, extra, release, fp = _evaluated(context, body, read, said)
        out = _metric_results(body, ev, release, fp, extra) + _risk_results(body, ev, release, fp, extra)
        if body.lineage:
            out.append(lineage_check.result(context, ev, key=body.key, name_prefix=body.name_prefix,
                                            lineage=body.lineage, ledger=body.ledger,
                                            release=str(release), extra=extra))  # fmt: skip
        observation = body.translator.observation(ev, body.key, release=release)
        context.log.info(
            f"release {release}: verdict {ev.verdict.value} "
            f"({sum(r.passed for r in out)}/{len(out)} checks passed)"
        )
    except Exception as exc:  # fail closed: every spec fails with the reason
        reason = safe_reason(exc)
    else:
        yield observation
        yield from out
        return
    context.log.error(f"privacy evaluation failed, every check fails closed: {reason}")
    yield from _failed(body, reason, said)


def _evaluated(
    context: dg.AssetCheckExecutionContext, body: CheckBody, read: Callable[[], tuple[Any, Any, Any]],
    said: dict[str, str | None],
) -> tuple[Any, dict[str, Any], str, str]:  # fmt: skip
    """The evaluation and the hook's extra metadata; ``said`` learns the release id and the content's
    fingerprint as soon as they are known (a failure after names them)."""
    from ..data.loading import load
    from ..data.tables import fingerprint as content_fingerprint
    from ..evaluate import evaluate_plan
    from .resources import run_release_id

    real_v, syn_v, hold_v = read()
    real_df, syn_df = load(real_v, role="real"), load(syn_v, role="synthetic")
    hold_df = load(hold_v, role="holdout") if hold_v is not None else None
    said["fingerprint"] = fp = content_fingerprint(syn_df)
    said["release"] = release = run_release_id(context, body.release_resource_key, fp)
    executor = None
    if body.ray_resource_key:  # the resource has initialised Ray for this step
        getattr(context.resources, body.ray_resource_key)
        executor = RayExecutor(address=None)
    ev = evaluate_plan(body.plan, real_df, syn_df, hold_df, executor=executor)  # resolved at definition
    del real_df, syn_df, hold_df
    extra = dict(body.on_evaluation(ev, context) or {}) if body.on_evaluation else {}
    if context.has_partition_key:  # a partitioned release: this evaluation is of one partition
        extra[PARTITION] = dg.MetadataValue.text(context.partition_key)
    return ev, extra, release, fp


def _metric_results(
    body: CheckBody, ev: Any, release: str, fp: str, extra: dict[str, Any]
) -> list[dg.AssetCheckResult]:
    """One result per metric of the plan (a metric without a result fails them all)."""
    t, prefix = body.translator, body.name_prefix
    out = [
        dg.AssetCheckResult(
            asset_key=body.key,
            check_name=prefix + r.id,
            passed=r.passed,
            severity=t.severity(body.plan.entry(r.id)),
            metadata={**t.metadata(r, ev, release=release, fingerprint=fp), **extra},
            description=t.result_description(r),
        )
        for r in ev.results
    ]
    missing = set(body.plan.ids) - {r.id for r in ev.results}
    if missing:
        raise RuntimeError(f"the evaluation returned no result for {', '.join(sorted(missing))}")
    return out


def _risk_results(
    body: CheckBody, ev: Any, release: str, fp: str, extra: dict[str, Any]
) -> list[dg.AssetCheckResult]:
    """One blocking result per required risk (a finding fails every risk)."""
    t, decisions = body.translator, ev.risks
    out = []
    for risk in required_risks(body.plan):
        d = decisions.get(risk, RiskDecision((), (), (), "not assessed", True))
        out.append(
            dg.AssetCheckResult(
                asset_key=body.key,
                check_name=body.name_prefix + risk_check_name(risk),
                passed=d.status == "pass" and not ev.findings,
                severity=dg.AssetCheckSeverity.ERROR,
                metadata={**t.risk_metadata(risk, d, ev, release=release, fingerprint=fp), **extra},
                description=t.risk_result_description(risk, d),
            )
        )
    return out


def _failed(body: CheckBody, reason: str, said: dict[str, str | None]) -> list[dg.AssetCheckResult]:
    """Every spec failed closed with ``reason``."""
    t, plan = body.translator, body.plan
    names = [
        *plan.ids,
        *(risk_check_name(r) for r in required_risks(plan)),
        *([lineage_check.CHECK] if body.lineage else []),
    ]
    return [
        dg.AssetCheckResult(
            asset_key=body.key,
            check_name=body.name_prefix + m,
            passed=False,
            severity=t.severity(plan.entry(m)) if m in plan.entries else dg.AssetCheckSeverity.ERROR,
            metadata=t.failure_metadata(reason, release=said["release"], fingerprint=said["fingerprint"]),
            description=f"evaluation failed: {reason}",
        )
        for m in names
    ]


__all__ = [
    "PARTITION",
    "RISK_CHECK_PREFIX",
    "CheckBody",
    "evaluate_checks",
    "required_risks",
    "risk_check_name",
]
