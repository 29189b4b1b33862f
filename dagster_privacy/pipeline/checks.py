"""``build_privacy_checks``: one ``@multi_asset_check`` per release, one spec per policy metric.

One shared ``evaluate()`` computes every metric once; every spec gets its own ``AssetCheckResult`` with
typed metadata. Fail closed: whatever raises (a table that cannot be read, a bad policy, a report hook)
turns every spec into ``passed=False`` with the reason — never a missing evaluation (dagster-facts §2).
"""

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from ..decision import policy as pol
from ..decision.verdict import RiskDecision
from ..engine.executors import RayExecutor
from ..errors import safe_reason
from ..metrics import registry
from ..results import VERDICT_RISKS
from . import lineage_check
from .assets import DUCKDB_KEY, RELEASE_KEY
from .evidence import build_report_hook
from .hook import REPORT, EvaluationHook
from .resources import ReadOnlyDuckDB
from .translator import DEFAULT_TRANSLATOR, PrivacyCheckTranslator

PolicyLike = str | Path | pol.Policy | Mapping[str, Any]


RISK_CHECK_PREFIX = "privacy_risk_"


def risk_check_name(risk: str) -> str:
    """The blocking check of one verdict risk: ``privacy_risk_singling_out`` …"""
    return RISK_CHECK_PREFIX + risk.replace(" ", "_")


def required_risks(plan: pol.EvaluationPlan) -> list[str]:
    """The verdict risks the policy requires (all four but the waived ones), whether or not a gate of
    the plan covers them: a risk no gate assesses fails its check ("not assessed")."""
    return plan.policy.required


def required_check_names(
    policy: PolicyLike,
    *,
    schema_gate: bool = True,
    extra: Sequence[str] = (),
    name_prefix: str = "",
    lineage: bool = False,
) -> list[str]:
    """The checks publication requires to have passed: one per required risk (``privacy_risk_<risk>``,
    which passes only when every gate of that risk passed), gating metrics of no verdict risk (a
    distinguishability proxy a policy made a gate), the schema gate, the human sign-off when the policy
    requires one (``privacy_signoff``), and ``extra``. ``name_prefix``: the privacy checks' own, as
    given to ``build_privacy_checks``."""
    plan = pol.resolve(policy)
    specs = registry()
    names = [name_prefix + risk_check_name(r) for r in required_risks(plan)]
    names += [name_prefix + m for m in plan.gating if VERDICT_RISKS.get(specs[m].risk.value) is None]
    if lineage:
        names.append(name_prefix + lineage_check.CHECK)
    if schema_gate:
        names.append("schema_gate")
    if plan.policy.require_signoff:
        names.append("privacy_signoff")
    names += [n for n in extra if n not in names]
    return names


def failed_closed(
    context: Any, what: str, reason: str, *, release: str | None = None, fingerprint: str | None = None
) -> dg.AssetCheckResult:
    """The result of a single check whose body raised: failed, ERROR, the reason logged and recorded."""
    context.log.error(f"{what} failed closed: {reason}")
    return dg.AssetCheckResult(
        passed=False,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=DEFAULT_TRANSLATOR.failure_metadata(reason, release=release, fingerprint=fingerprint),
        description=f"{what} failed: {reason}",
    )


AssetRef = dg.AssetsDefinition | dg.AssetSpec | dg.AssetKey | str
_Results = Iterator[dg.AssetObservation | dg.AssetCheckResult]


def key_of(ref: AssetRef) -> dg.AssetKey:
    return ref.key if isinstance(ref, dg.AssetSpec) else dg.AssetKey.from_coercible_or_definition(ref)


def _op_name(key: dg.AssetKey, prefix: str) -> str:
    """The check step's op name: readable, and unique per asset key and prefix (a short hash of both:
    'a__b', ['a', 'b'] and 'a-b' would share an identifier)."""
    digest = hashlib.sha256(repr((key.path, prefix)).encode()).hexdigest()[:8]
    return f"privacy_checks__{key.to_python_identifier()}_{digest}"


def asset_value(value: Any, role: str) -> Any:
    """An asset's value as the checks take it: a frame, Arrow table, DuckDB relation or a Path. Text is
    refused — it would be read as a path, a query or a URI — and never echoed; None is no table."""
    from ..errors import TableError

    if value is None:
        raise TableError(f"the {role} asset's value is None: its IO manager returned no table")
    if isinstance(value, str | bytes):
        raise TableError(
            f"the {role} asset's value is text ({len(value):,} characters): give a frame, an Arrow "
            "table, a DuckDB relation or a pathlib.Path"
        )
    if isinstance(value, dict):
        raise TableError(
            f"the {role} asset's value is a mapping ({len(value)} entries): a partitioned asset is "
            "checked partition by partition (partitions_def=)"
        )
    return value


#: the partition a check evaluation judged (a partitioned synthetic asset: one evaluation per partition)
PARTITION = "dagster_privacy/partition"


def build_privacy_checks(  # noqa: C901, PLR0913
    *,
    asset: AssetRef,
    policy: PolicyLike,
    real: str | None = None,
    synthetic: str | None = None,
    holdout: str | None = None,
    real_asset: AssetRef | None = None,
    holdout_asset: AssetRef | None = None,
    name_prefix: str = "",
    name: str | None = None,
    resource_key: str = DUCKDB_KEY,
    release_resource_key: str | None = RELEASE_KEY,
    additional_deps: Sequence[AssetRef] = (),
    on_evaluation: EvaluationHook | str | None = REPORT,
    translator: PrivacyCheckTranslator = DEFAULT_TRANSLATOR,
    ray_resource_key: str | None = None,
    partitions_def: dg.PartitionsDefinition | None = None,
    lineage: bool | str = False,
    ledger: str | None = None,
) -> Sequence[dg.AssetChecksDefinition]:
    """Privacy checks on a synthetic table asset: one spec per metric of ``policy`` and one blocking
    spec per required risk (``privacy_risk_<risk>``, the per-risk decision of the verdict).

    Two ways to give the tables. By name: ``real``, ``synthetic`` (default: the asset's name) and
    ``holdout`` are table names or queries read through the ``ReadOnlyDuckDB`` (or ``PostgresTables``)
    resource under ``resource_key``. As assets: with ``real_asset`` (and ``holdout_asset``), every side —
    the checked asset included — is loaded as that asset's value by its own IO manager (pandas, polars,
    Arrow, a path, a DuckDB relation), so the checks judge exactly what the asset holds, wherever it is
    stored; no table resource is needed. ``name_prefix`` goes before every check name (two policies on
    one asset). ``release_resource_key`` None: the release id comes from the run tag, the environment
    or the content (``sha256:<16 hex>``), without a ``PrivacyRelease`` resource.

    Metric specs do not block (a gate's status and bounds are in its metadata; severity ERROR for gates,
    WARN for advisory metrics); the risk specs block, so a risk that fails or lacks evidence stops the
    run and holds up ``all_deps_blocking_checks_passed()``. Every result records the release id and the
    fingerprint of the content evaluated; ``on_evaluation`` is called with the ``Evaluation`` and may
    return extra metadata — by default it writes the evidence report (``build_report_hook`` for this
    asset, policy and prefix, under ``DAGSTER_PRIVACY_REPORTS`` or the instance's directory), which the
    officer console lists; None writes none. ``translator`` decides how a result becomes a check.
    ``name`` (the step's op name) defaults to ``<asset>_<name_prefix>privacy_checks``: unique per asset
    and prefix, so several factories merge into one code location. With
    ``ray_resource_key``, the check requires that resource (a ``dagster_ray`` resource such as
    ``LocalRay`` or ``KubeRayCluster``, which initialises Ray when the step starts) and runs the
    evaluation's neighbour blocks on that cluster: the check stays one step, and its results are the
    same as in-process.

    A partitioned synthetic asset (its ``partitions_def``, or ``partitions_def=``) gets partitioned
    checks (``AssetCheckSpec.partitions_def``, a preview feature of Dagster 1.13): one evaluation per
    partition, of that partition's value, with the partition in every result's metadata — so a leaky
    month blocks that month's downstream assets only.

    With ``lineage`` (True: named by the real table; or a name), a blocking ``privacy_lineage`` check
    judges the release with every earlier release of its lineage, recorded in ``ledger`` (default:
    beside the Dagster instance; lineage_check.py).
    """
    plan = pol.resolve(policy)
    key = key_of(asset)
    if on_evaluation == REPORT:
        on_evaluation = build_report_hook(
            asset=key, policy=policy, release_resource_key=release_resource_key, name_prefix=name_prefix
        )
    elif isinstance(on_evaluation, str):
        raise dg.DagsterInvalidDefinitionError(
            f"on_evaluation: a hook, {REPORT!r} or None, not {on_evaluation!r}"
        )
    if partitions_def is None and isinstance(asset, dg.AssetsDefinition | dg.AssetSpec):
        partitions_def = asset.partitions_def
    part = {"partitions_def": partitions_def} if partitions_def is not None else {}
    from_assets = real_asset is not None
    if from_assets and (real or holdout):
        raise dg.DagsterInvalidDefinitionError("give real/holdout as table names or as assets, not both")
    if not from_assets and not real:
        raise dg.DagsterInvalidDefinitionError("give real= (a table name) or real_asset= (an asset)")
    if part and not from_assets:  # a table read by name is the whole table, whatever the partition
        raise dg.DagsterInvalidDefinitionError(
            "a partitioned synthetic asset is checked through its IO manager: give real_asset= "
            "(and holdout_asset=), so that each partition's value is what is evaluated"
        )
    real_key = key_of(real_asset) if from_assets else None
    holdout_key = key_of(holdout_asset) if holdout_asset else None
    deps = list(additional_deps) + [k for k in (real_key, holdout_key) if k is not None]
    synthetic_source = synthetic or key.path[-1]
    specs = _specs(plan, key, name_prefix, deps, part, translator)
    lineage_of = _lineage(lineage, plan, real_key, real, holdout or holdout_key)
    if lineage_of:
        specs.append(lineage_check.spec(key, name_prefix, deps, part))
    resources = {release_resource_key, ray_resource_key} - {None}
    common: dict[str, Any] = {
        "plan": plan,
        "key": key,
        "release_resource_key": release_resource_key,
        "on_evaluation": on_evaluation,
        "translator": translator,
        "ray_resource_key": ray_resource_key,
        "name_prefix": name_prefix,
        "lineage": lineage_of,
        "ledger": ledger,
    }
    decorate = dg.multi_asset_check(
        specs=specs,
        name=name or _op_name(key, name_prefix),
        required_resource_keys=resources | (set() if from_assets else {resource_key}),
        description=f"Privacy metrics of policy {plan.policy.name!r}, one shared evaluation.",
        ins=(
            {"synthetic_table": dg.AssetIn(key=key), "real_table": dg.AssetIn(key=real_key)}
            | ({"holdout_table": dg.AssetIn(key=holdout_key)} if holdout_key else {})
            if from_assets
            else None
        ),
    )
    if not from_assets:

        def _by_name(
            context: dg.AssetCheckExecutionContext,
        ) -> Iterator[dg.AssetObservation | dg.AssetCheckResult]:
            def read() -> tuple[Any, Any, Any]:
                db: ReadOnlyDuckDB = getattr(context.resources, resource_key)
                return (
                    db.read(real, role="real"),
                    db.read(synthetic_source, role="synthetic"),
                    db.read(holdout, role="holdout") if holdout else None,
                )

            yield from evaluate_checks(context, read=read, **common)

        return [decorate(_by_name)]
    if holdout_key is None:

        def _values(
            context: dg.AssetCheckExecutionContext, synthetic_table: Any, real_table: Any
        ) -> Iterator[dg.AssetObservation | dg.AssetCheckResult]:
            def read() -> tuple[Any, Any, Any]:
                return asset_value(real_table, "real"), asset_value(synthetic_table, "synthetic"), None

            yield from evaluate_checks(context, read=read, **common)

        return [decorate(_values)]

    def _values_with_holdout(
        context: dg.AssetCheckExecutionContext, synthetic_table: Any, real_table: Any, holdout_table: Any
    ) -> _Results:
        def read() -> tuple[Any, Any, Any]:
            return (asset_value(real_table, "real"), asset_value(synthetic_table, "synthetic"),
                    asset_value(holdout_table, "holdout"))  # fmt: skip

        yield from evaluate_checks(context, read=read, **common)

    return [decorate(_values_with_holdout)]


def _specs(
    plan: pol.EvaluationPlan, key: dg.AssetKey, name_prefix: str, deps: list[Any], part: dict[str, Any],
    translator: PrivacyCheckTranslator,
) -> list[dg.AssetCheckSpec]:  # fmt: skip
    """One spec per metric of the plan and one blocking spec per required risk."""
    specs = []
    specs_of = registry()
    for m in plan.ids:
        e = plan.entry(m)
        specs.append(
            dg.AssetCheckSpec(
                name_prefix + m,
                asset=key,
                # a gate of a verdict risk informs; its risk's check blocks. A gate of no verdict risk
                # (a proxy a policy made ERROR) blocks itself
                blocking=e.blocks_on_failure and VERDICT_RISKS.get(specs_of[m].risk.value) is None,
                additional_deps=deps or None,
                description=translator.spec_description(m, specs_of[m].summary, e),
                metadata={"severity": e.severity.value, "threshold": e.threshold, "on": e.on},
                **part,
            )
        )
    for risk in required_risks(plan):
        specs.append(
            dg.AssetCheckSpec(
                name_prefix + risk_check_name(risk),
                asset=key,
                blocking=True,
                additional_deps=deps or None,
                description=translator.risk_description(risk),
                metadata={"risk": risk},
                **part,
            )
        )
    return specs


def _lineage(
    lineage: bool | str,
    plan: pol.EvaluationPlan,
    real_key: dg.AssetKey | None,
    real: str | None,
    holdout: Any,
) -> str | None:
    """The lineage the checks record into (None: no lineage check); refused at definition when the
    policy does not count people or there is no holdout (the union test needs both)."""
    if not lineage:
        return None
    from ..lineage import LineageError, valid_lineage

    if "exposed_records" not in plan.ids or not holdout:
        raise dg.DagsterInvalidDefinitionError(
            "lineage= needs a policy that runs exposed_records and a holdout (the union's chance side)"
        )
    name = lineage if isinstance(lineage, str) else lineage_check.lineage_name(real_key, real)
    try:
        return valid_lineage(name)
    except LineageError as exc:
        raise dg.DagsterInvalidDefinitionError(f"lineage=: {exc}") from None


def evaluate_checks(  # noqa: PLR0913
    context: dg.AssetCheckExecutionContext,
    *,
    plan: pol.EvaluationPlan,
    key: dg.AssetKey,
    read: Callable[[], tuple[Any, Any, Any]],
    release_resource_key: str | None,
    on_evaluation: EvaluationHook | None,
    translator: PrivacyCheckTranslator = DEFAULT_TRANSLATOR,
    ray_resource_key: str | None = None,
    name_prefix: str = "",
    lineage: str | None = None,
    ledger: str | None = None,
) -> Iterator[dg.AssetObservation | dg.AssetCheckResult]:
    """The body of the check: ``read()`` gives (real, synthetic, holdout or None) — frames read by
    name, or the assets' values — then one evaluation, an observation of the synthetic asset with every
    metric's value (translator.observation), one result per metric; any exception fails every spec."""
    from ..data.loading import load
    from ..data.tables import fingerprint as content_fingerprint
    from ..evaluate import evaluate_plan
    from .resources import run_release_id

    release: str | None = None
    fp: str | None = None
    try:
        real_v, syn_v, hold_v = read()
        real_df, syn_df = load(real_v, role="real"), load(syn_v, role="synthetic")
        hold_df = load(hold_v, role="holdout") if hold_v is not None else None
        fp = content_fingerprint(syn_df)
        release = run_release_id(context, release_resource_key, fp)
        executor = None
        if ray_resource_key:  # the resource has initialised Ray for this step
            getattr(context.resources, ray_resource_key)
            executor = RayExecutor(address=None)
        ev = evaluate_plan(plan, real_df, syn_df, hold_df, executor=executor)  # resolved at definition
        del real_df, syn_df, hold_df
        extra = dict(on_evaluation(ev, context) or {}) if on_evaluation else {}
        if context.has_partition_key:  # a partitioned release: this evaluation is of one partition
            extra[PARTITION] = dg.MetadataValue.text(context.partition_key)
        out = []
        for r in ev.results:
            meta = {**translator.metadata(r, ev, release=release, fingerprint=fp), **extra}
            out.append(
                dg.AssetCheckResult(
                    asset_key=key,
                    check_name=name_prefix + r.id,
                    passed=r.passed,
                    severity=translator.severity(plan.entry(r.id)),
                    metadata=meta,
                    description=translator.result_description(r),
                )
            )
        missing = set(plan.ids) - {r.id for r in ev.results}
        if missing:
            raise RuntimeError(f"the evaluation returned no result for {', '.join(sorted(missing))}")
        decisions = ev.risks
        for risk in required_risks(plan):
            d = decisions.get(risk, RiskDecision((), (), (), "not assessed", True))
            out.append(
                dg.AssetCheckResult(
                    asset_key=key,
                    check_name=name_prefix + risk_check_name(risk),
                    passed=d.status == "pass" and not ev.findings,
                    severity=dg.AssetCheckSeverity.ERROR,
                    metadata={
                        **translator.risk_metadata(risk, d, ev, release=release, fingerprint=fp),
                        **extra,
                    },
                    description=translator.risk_result_description(risk, d),
                )
            )
        if lineage:
            where = {"lineage": lineage, "ledger": ledger, "release": str(release), "extra": extra}
            out.append(lineage_check.result(context, ev, key=key, name_prefix=name_prefix, **where))
        observation = translator.observation(ev, key, release=release)
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
    yield from [
        dg.AssetCheckResult(
            asset_key=key,
            check_name=name_prefix + m,
            passed=False,
            severity=translator.severity(plan.entry(m)) if m in plan.entries else dg.AssetCheckSeverity.ERROR,
            metadata=translator.failure_metadata(reason, release=release, fingerprint=fp),
            description=f"evaluation failed: {reason}",
        )
        for m in [
            *plan.ids,
            *(risk_check_name(r) for r in required_risks(plan)),
            *([lineage_check.CHECK] if lineage else []),
        ]
    ]
