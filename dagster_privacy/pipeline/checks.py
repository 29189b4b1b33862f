"""``build_privacy_checks``: one ``@multi_asset_check`` per release, one spec per policy metric.

One shared ``evaluate()`` computes every metric once; every spec gets its own ``AssetCheckResult`` with
typed metadata. Fail closed: whatever raises (a table that cannot be read, a bad policy, a report hook)
turns every spec into ``passed=False`` with the reason — never a missing evaluation (dagster-facts §2).
"""


from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from .. import policy as pol
from ..errors import safe_reason
from ..metrics import registry
from ..results import Evaluation, MetricResult, Severity
from . import metadata as md
from .assets import DUCKDB_KEY, RELEASE_KEY
from .resources import PrivacyRelease, ReadOnlyDuckDB

#: called inside the check with the Evaluation (e.g. the HTML report); may return extra metadata that is
#: attached to every check result. Raising fails the checks closed.
EvaluationHook = Callable[[Evaluation, dg.AssetCheckExecutionContext], Mapping[str, Any] | None]

PolicyLike = str | Path | pol.Policy | Mapping[str, Any]


def metric_ids(policy: pol.Policy) -> list[str]:
    """The policy's metrics in registry order (policy.select: a policy must configure each one)."""
    return policy.select()


def gates(policy: pol.Policy, metric_id: str) -> bool:
    """ERROR metrics gate (blocking specs); WARN metrics inform."""
    return policy.entry(metric_id).severity is Severity.ERROR


def required_check_names(policy: PolicyLike, *, schema_gate: bool = True,
                         extra: Sequence[str] = ()) -> list[str]:
    """The checks publication requires to have passed: every gating metric, the schema gate, the
    human sign-off when the policy requires one (``privacy_signoff``), and ``extra``."""
    p = pol.load_policy(policy)
    names = [m for m in metric_ids(p) if gates(p, m)]
    if schema_gate:
        names.append("schema_gate")
    if p.require_signoff:
        names.append("privacy_signoff")
    names += [n for n in extra if n not in names]
    return names


def _severity(policy: pol.Policy, metric_id: str) -> dg.AssetCheckSeverity:
    return dg.AssetCheckSeverity.ERROR if gates(policy, metric_id) else dg.AssetCheckSeverity.WARN


def _markdown(r: MetricResult, passed: bool, release: str) -> str:
    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.4g}"

    ci = "—" if r.ci is None else f"[{r.ci[0]:.4g}, {r.ci[1]:.4g}]"
    gate = "threshold —" if r.threshold is None else f"{r.on} ≤ {r.threshold:g}"
    lines = [
        f"**{r.id}** ({r.family}, {r.source}; risk: {r.risk}) on release `{release}`: "
        f"**{'passed' if passed else r.status.value}** ({r.severity.value})",
        "",
        "| value | 95 % CI | baseline | raw | gate |",
        "|---|---|---|---|---|",
        f"| {f(r.value)} | {ci} | {f(r.baseline)} | {f(r.raw)} | {gate} |",
    ]
    if r.reason:
        lines += ["", f"Reason: {r.reason}"]
    lines += ["", "value ∈ [0, 1]: 0 = private, 1 = no privacy. Figures only — no record values."]
    return "\n".join(lines)


def result_metadata(r: MetricResult, ev: Evaluation, *, passed: bool, release: str,
                    fingerprint: str) -> dict[str, Any]:
    """Typed metadata of one check result: figures, hashes and names — never a record's value."""
    return {
        "value": md.number(r.value),
        "raw": md.number(r.raw),
        "baseline": md.number(r.baseline),
        "ci_low": md.number(r.ci[0] if r.ci else None),
        "ci_high": md.number(r.ci[1] if r.ci else None),
        "threshold": md.number(r.threshold),
        "threshold_on": md.text(r.on),
        "status": md.text(r.status.value),
        "severity": md.text(r.severity.value),
        "reason": md.text(r.reason),
        "sizes": md.json(r.sizes),
        "seconds": md.number(r.seconds),
        "details": md.json(r.details),
        "seed": dg.MetadataValue.int(ev.seed),
        "verdict": md.text(ev.verdict.value),
        "policy": md.json(ev.policy),
        "versions": md.json(ev.versions),
        "tables": md.json(ev.tables),
        md.FINGERPRINT: dg.MetadataValue.text(fingerprint),
        md.RELEASE_ID: dg.MetadataValue.text(release),
        "summary": dg.MetadataValue.md(_markdown(r, passed, release)),
    }


def failure_metadata(reason: str, *, release: str | None, fingerprint: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "status": md.text("error"),
        "reason": md.text(reason),
        "summary": dg.MetadataValue.md(f"**The privacy evaluation failed**, so this check has not passed "
                                       f"(fail closed).\n\nReason: {reason}"),
    }
    if release:
        meta[md.RELEASE_ID] = dg.MetadataValue.text(release)
    if fingerprint:
        meta[md.FINGERPRINT] = dg.MetadataValue.text(fingerprint)
    return meta


def failed_closed(context: Any, what: str, reason: str, *, release: str | None = None,
                  fingerprint: str | None = None) -> dg.AssetCheckResult:
    """The result of a single check whose body raised: failed, ERROR, the reason logged and recorded."""
    context.log.error(f"{what} failed closed: {reason}")
    return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR,
                               metadata=failure_metadata(reason, release=release, fingerprint=fingerprint),
                               description=f"{what} failed: {reason}")


def build_privacy_checks(
    *,
    asset: dg.AssetsDefinition | dg.AssetKey | str,
    policy: PolicyLike,
    real: str,
    synthetic: str | None = None,
    holdout: str | None = None,
    name: str = "privacy_checks",
    resource_key: str = DUCKDB_KEY,
    release_resource_key: str = RELEASE_KEY,
    additional_deps: Sequence[dg.AssetsDefinition | dg.AssetKey | str] = (),
    on_evaluation: EvaluationHook | None = None,
) -> Sequence[dg.AssetChecksDefinition]:
    """Privacy checks on a synthetic table asset: one spec per metric of ``policy``.

    ``real``, ``synthetic`` (default: the asset's name) and ``holdout`` are table names or queries read
    through the ``ReadOnlyDuckDB`` resource under ``resource_key``. Gating (ERROR) metrics are blocking
    specs with severity ERROR; advisory (WARN) metrics are non-blocking specs with severity WARN, so a
    warning neither blocks a run nor holds up ``all_deps_blocking_checks_passed()``. Every result
    records the release id and the fingerprint of the content evaluated; ``on_evaluation`` is called
    with the ``Evaluation`` (hook for reports) and may return extra metadata.
    """
    p = pol.load_policy(policy)
    key = dg.AssetKey.from_coercible_or_definition(asset)
    synthetic_source = synthetic or key.path[-1]
    ids = metric_ids(p)
    summaries = {m: registry()[m].summary for m in ids}
    specs = []
    for m in ids:
        e = p.entry(m)
        gate = "no threshold" if e.threshold is None else f"{e.on} ≤ {e.threshold:g}"
        specs.append(dg.AssetCheckSpec(
            m, asset=key, blocking=gates(p, m), additional_deps=list(additional_deps) or None,
            description=f"{summaries[m] or m} — {e.severity.value}, {gate}",
            metadata={"severity": e.severity.value, "threshold": e.threshold, "on": e.on},
        ))

    @dg.multi_asset_check(specs=specs, name=name, required_resource_keys={resource_key, release_resource_key},
                          description=f"Privacy metrics of policy {p.name!r}, one shared evaluation.")
    def _privacy_checks(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        yield from evaluate_checks(context, policy=p, ids=ids, key=key, real=real, synthetic=synthetic_source,
                                   holdout=holdout, resource_key=resource_key,
                                   release_resource_key=release_resource_key, on_evaluation=on_evaluation)

    return [_privacy_checks]


def evaluate_checks(context: dg.AssetCheckExecutionContext, *, policy: pol.Policy, ids: Sequence[str],
                    key: dg.AssetKey, real: str, synthetic: str, holdout: str | None, resource_key: str,
                    release_resource_key: str, on_evaluation: EvaluationHook | None,
                    ) -> list[dg.AssetCheckResult]:
    """The body of the check: one evaluation, one result per metric; any exception fails every spec."""
    from ..evaluate import evaluate
    from ..tables import fingerprint as content_fingerprint

    release: str | None = None
    fp: str | None = None
    try:
        db: ReadOnlyDuckDB = getattr(context.resources, resource_key)
        rel: PrivacyRelease = getattr(context.resources, release_resource_key)
        real_df = db.read(real, role="real")
        syn_df = db.read(synthetic, role="synthetic")
        hold_df = db.read(holdout, role="holdout") if holdout else None
        fp = content_fingerprint(syn_df)
        release = rel.resolve(fp, dict(context.run.tags))
        ev = evaluate(real_df, syn_df, hold_df, metrics=list(ids), policy=policy, progress=False)
        del real_df, syn_df, hold_df
        extra = dict(on_evaluation(ev, context) or {}) if on_evaluation else {}
        out = []
        for r in ev.results:
            ok = pol.passed(r)
            meta = {**result_metadata(r, ev, passed=ok, release=release, fingerprint=fp), **extra}
            out.append(dg.AssetCheckResult(
                asset_key=key, check_name=r.id, passed=ok, severity=_severity(policy, r.id), metadata=meta,
                description=f"{r.id} {'passed' if ok else r.status.value}" + (f": {r.reason}" if r.reason and not ok else "")))
        missing = set(ids) - {r.id for r in ev.results}
        if missing:
            raise RuntimeError(f"the evaluation returned no result for {', '.join(sorted(missing))}")
        context.log.info(f"release {release}: verdict {ev.verdict.value} "
                         f"({sum(r.passed for r in out)}/{len(out)} checks passed)")
        return out
    except Exception as exc:  # fail closed: every spec fails with the reason
        reason = safe_reason(exc)
    context.log.error(f"privacy evaluation failed, every check fails closed: {reason}")
    return [dg.AssetCheckResult(asset_key=key, check_name=m, passed=False, severity=_severity(policy, m),
                                metadata=failure_metadata(reason, release=release, fingerprint=fp),
                                description=f"evaluation failed: {reason}")
            for m in ids]
