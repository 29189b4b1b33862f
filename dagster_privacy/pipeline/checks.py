"""``build_privacy_checks``: one ``@multi_asset_check`` per release, one spec per policy metric.

One shared ``evaluate()`` computes every metric once; every spec gets its own ``AssetCheckResult`` with
typed metadata. Fail closed: whatever raises (a table that cannot be read, a bad policy, a report hook)
turns every spec into ``passed=False`` with the reason — never a missing evaluation (dagster-facts §2).
"""

import hashlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict

import dagster as dg

from ..decision import policy as pol
from ..decision.policy import PolicyLike
from ..metrics import registry
from ..results import VERDICT_RISKS
from . import lineage_check
from .assets import DUCKDB_KEY, RELEASE_KEY
from .check_body import (
    PARTITION,
    RISK_CHECK_PREFIX,
    CheckBody,
    evaluate_checks,
    required_risks,
    risk_check_name,
)
from .evidence import build_report_hook
from .hook import REPORT, EvaluationHook
from .resources import ReadOnlyDuckDB
from .translator import DEFAULT_TRANSLATOR, PrivacyCheckTranslator

if sys.version_info >= (3, 11):
    from typing import Unpack
else:  # pragma: no cover
    from typing_extensions import Unpack


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


@dataclass(frozen=True)
class CheckSettings:
    """How the privacy checks are defined, besides their tables and policy.

    Args:
        name_prefix: goes before every check name (two policies on one asset).
        name: the step's op name; default ``<asset>_<name_prefix>privacy_checks``, unique per asset and
            prefix, so several factories merge into one code location.
        resource_key: the table resource (``ReadOnlyDuckDB`` or ``PostgresTables``) for tables by name.
        release_resource_key: the ``PrivacyRelease`` resource; None: the release id comes from the run
            tag, the environment or the content (``sha256:<16 hex>``).
        additional_deps: more upstream assets of the checks.
        on_evaluation: called with the ``Evaluation``, may return extra metadata; default ``"report"``
            writes the evidence report (``build_report_hook``); None writes none.
        translator: how a result becomes a check (``PrivacyCheckTranslator``).
        ray_resource_key: a ``dagster_ray`` resource: the neighbour blocks run on that cluster.
        partitions_def: default the synthetic asset's (partitioned checks, one evaluation per partition).
        lineage: True (named by the real table) or a name: the blocking ``privacy_lineage`` check.
        ledger: the lineage's ledger, a DuckDB file or a ``postgresql://`` URI (lineage_check.py).

    Example:
        ``build_privacy_checks(asset=a, policy="standard", real="r", settings=CheckSettings(lineage=True))``
    """

    name_prefix: str = ""
    name: str | None = None
    resource_key: str = DUCKDB_KEY
    release_resource_key: str | None = RELEASE_KEY
    additional_deps: Sequence[AssetRef] = ()
    on_evaluation: EvaluationHook | str | None = REPORT
    translator: PrivacyCheckTranslator = DEFAULT_TRANSLATOR
    ray_resource_key: str | None = None
    partitions_def: dg.PartitionsDefinition | None = None
    lineage: bool | str = False
    ledger: str | None = None


class CheckOptions(TypedDict, total=False):
    """``CheckSettings``' fields as keywords of ``build_privacy_checks``."""

    name_prefix: str
    name: str | None
    resource_key: str
    release_resource_key: str | None
    additional_deps: Sequence[AssetRef]
    on_evaluation: EvaluationHook | str | None
    translator: PrivacyCheckTranslator
    ray_resource_key: str | None
    partitions_def: dg.PartitionsDefinition | None
    lineage: bool | str
    ledger: str | None


def build_privacy_checks(
    *,
    asset: AssetRef,
    policy: PolicyLike,
    real: str | None = None,
    synthetic: str | None = None,
    holdout: str | None = None,
    real_asset: AssetRef | None = None,
    holdout_asset: AssetRef | None = None,
    settings: CheckSettings | None = None,
    **options: Unpack[CheckOptions],
) -> Sequence[dg.AssetChecksDefinition]:
    """Privacy checks on a synthetic table asset: one spec per metric of ``policy`` and one blocking
    spec per required risk (``privacy_risk_<risk>``, the per-risk decision of the verdict).

    Args:
        asset: the synthetic table asset (a definition, spec, key or name).
        policy: a preset name, a policy file, a ``Policy`` or its mapping.
        real: the real table's name or query, read through the table resource (tables by name).
        synthetic: the synthetic table's name or query (default: the asset's name).
        holdout: the holdout table's name or query.
        real_asset: the real table as an asset: every side, the checked asset included, is then loaded
            as that asset's value by its own IO manager (pandas, polars, Arrow, a path, a DuckDB
            relation), so the checks judge exactly what the asset holds; no table resource is needed.
        holdout_asset: the holdout table as an asset.
        settings: ``CheckSettings``; its fields may also be given as keywords (``**options``).

    Returns:
        One ``@multi_asset_check``. Metric specs do not block (a gate's status and bounds are in its
        metadata; severity ERROR for gates, WARN for advisory metrics); the risk specs block, so a risk
        that fails or lacks evidence stops the run and holds up ``all_deps_blocking_checks_passed()``.
        Every result records the release id and the fingerprint of the content evaluated. A partitioned
        synthetic asset gets partitioned checks (a preview feature of Dagster 1.13): one evaluation per
        partition, so a leaky month blocks that month's downstream assets only. With ``lineage``, a
        blocking ``privacy_lineage`` check judges the release with every earlier release of its lineage.

    Example:
        ``build_privacy_checks(asset=synthetic_table, policy="standard", real_asset=real_table,
        holdout_asset=holdout_table)``
    """
    s = replace(settings or CheckSettings(), **options)
    plan, key = pol.resolve(policy), key_of(asset)
    if s.partitions_def is None and isinstance(asset, dg.AssetsDefinition | dg.AssetSpec):
        s = replace(s, partitions_def=asset.partitions_def)
    _check_tables(real, holdout, real_asset, s.partitions_def)
    real_key = key_of(real_asset) if real_asset is not None else None
    holdout_key = key_of(holdout_asset) if holdout_asset else None
    part = {"partitions_def": s.partitions_def} if s.partitions_def is not None else {}
    deps = list(s.additional_deps) + [k for k in (real_key, holdout_key) if k is not None]
    specs = _specs(plan, key, s.name_prefix, deps, part, s.translator)
    lineage_of = _lineage(s.lineage, plan, real_key, real, holdout or holdout_key)
    if lineage_of:
        specs.append(lineage_check.spec(key, s.name_prefix, deps, part))
    body = CheckBody(plan, key, _hook(s, key, policy), lineage_of, s.ledger, s.name_prefix, s.translator,
                     s.resource_key, s.release_resource_key, s.ray_resource_key)  # fmt: skip
    resources = {k for k in (s.release_resource_key, s.ray_resource_key) if k is not None}
    ins = None
    if real_key is not None:
        ins = {"synthetic_table": dg.AssetIn(key=key), "real_table": dg.AssetIn(key=real_key)}
        ins |= {"holdout_table": dg.AssetIn(key=holdout_key)} if holdout_key else {}
    decorate = dg.multi_asset_check(
        specs=specs,
        name=s.name or _op_name(key, s.name_prefix),
        required_resource_keys=resources | (set() if ins else {s.resource_key}),
        description=f"Privacy metrics of policy {plan.policy.name!r}, one shared evaluation.",
        ins=ins,
    )
    if ins is None:
        return [decorate(_by_name(body, str(real), synthetic or key.path[-1], holdout))]
    return [decorate(_from_values(body, with_holdout=holdout_key is not None))]


def _check_tables(
    real: str | None, holdout: str | None, real_asset: AssetRef | None, partitions: Any
) -> None:
    """Tables by name or as assets, not both; a partitioned asset through its IO manager."""
    if real_asset is not None and (real or holdout):
        raise dg.DagsterInvalidDefinitionError("give real/holdout as table names or as assets, not both")
    if real_asset is None and not real:
        raise dg.DagsterInvalidDefinitionError("give real= (a table name) or real_asset= (an asset)")
    if partitions is not None and real_asset is None:  # a table read by name is the whole table
        raise dg.DagsterInvalidDefinitionError(
            "a partitioned synthetic asset is checked through its IO manager: give real_asset= "
            "(and holdout_asset=), so that each partition's value is what is evaluated"
        )


def _hook(s: CheckSettings, key: dg.AssetKey, policy: PolicyLike) -> EvaluationHook | None:
    """The evaluation hook: the evidence report for this asset, policy and prefix by default."""
    if s.on_evaluation == REPORT:
        return build_report_hook(
            asset=key, policy=policy, release_resource_key=s.release_resource_key, name_prefix=s.name_prefix
        )
    if isinstance(s.on_evaluation, str):
        raise dg.DagsterInvalidDefinitionError(
            f"on_evaluation: a hook, {REPORT!r} or None, not {s.on_evaluation!r}"
        )
    return s.on_evaluation


def _by_name(body: CheckBody, real: str, synthetic: str, holdout: str | None) -> Callable[..., _Results]:
    """The check's body for tables read by name through the table resource."""

    def _by_name(context: dg.AssetCheckExecutionContext) -> _Results:
        def read() -> tuple[Any, Any, Any]:
            db: ReadOnlyDuckDB = getattr(context.resources, body.resource_key)
            return (
                db.read(real, role="real"),
                db.read(synthetic, role="synthetic"),
                db.read(holdout, role="holdout") if holdout else None,
            )

        yield from evaluate_checks(context, body, read)

    return _by_name


def _from_values(body: CheckBody, *, with_holdout: bool) -> Callable[..., _Results]:
    """The check's body for the assets' values (the signature names the inputs Dagster loads)."""
    if not with_holdout:

        def _values(
            context: dg.AssetCheckExecutionContext, synthetic_table: Any, real_table: Any
        ) -> _Results:
            def read() -> tuple[Any, Any, Any]:
                return asset_value(real_table, "real"), asset_value(synthetic_table, "synthetic"), None

            yield from evaluate_checks(context, body, read)

        return _values

    def _values_with_holdout(
        context: dg.AssetCheckExecutionContext, synthetic_table: Any, real_table: Any, holdout_table: Any
    ) -> _Results:
        def read() -> tuple[Any, Any, Any]:
            return (asset_value(real_table, "real"), asset_value(synthetic_table, "synthetic"),
                    asset_value(holdout_table, "holdout"))  # fmt: skip

        yield from evaluate_checks(context, body, read)

    return _values_with_holdout


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


__all__ = [
    "PARTITION",
    "RISK_CHECK_PREFIX",
    "AssetRef",
    "CheckOptions",
    "CheckSettings",
    "PolicyLike",
    "asset_value",
    "build_privacy_checks",
    "evaluate_checks",
    "failed_closed",
    "key_of",
    "required_check_names",
    "required_risks",
    "risk_check_name",
]
