"""Publication: ``build_published_release``, the gated asset that publishes a synthetic release to its own
target once its required checks passed on this very content (publish_step.py re-verifies and writes).

The factory takes the tables (by name or as assets), the checks a publication requires and its
``PublicationSettings`` — the asset's name, group, resources, automation, declared input locations,
partitions and the privacy checks' prefix — as one object or as keywords.
"""

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict, cast

import dagster as dg
import polars as pl

from ..data.tables import fingerprint
from .assets import DUCKDB_KEY, PUBLISH_KEY
from .checks import AssetRef, asset_value, key_of
from .publication.asset_locations import Declared
from .publication.target import PublicationRefused, PublishTarget
from .publish_step import Verified, publish_verified, verify_release
from .resources import PostgresTables, ReadOnlyDuckDB

if sys.version_info >= (3, 11):
    from typing import Unpack
else:  # pragma: no cover
    from typing_extensions import Unpack


@dataclass(frozen=True)
class PublicationSettings:
    """How ``published_release`` is defined, besides its tables and required checks.

    Args:
        key: the asset's name.
        group_name: its asset group.
        resource_key: the table resource that reads tables given by name.
        publish_resource_key: the ``PublishTarget`` resource.
        automation_condition: default ``eager() & all_deps_blocking_checks_passed()`` (it schedules, it
            does not enforce: the body re-verifies).
        input_locations: asset key or role → path or URI of an input, compared with the target.
        partitions_def: default the synthetic asset's.
        name_prefix: the privacy checks' prefix (several policies on one asset), whose report a required
            sign-off must approve.

    Example:
        ``build_published_release(required_checks=[...], settings=PublicationSettings(key="published"))``
    """

    key: str = "published_release"
    group_name: str = "privacy_release"
    resource_key: str = DUCKDB_KEY
    publish_resource_key: str = PUBLISH_KEY
    automation_condition: dg.AutomationCondition | None = None
    input_locations: Mapping[str, Declared] | None = None
    partitions_def: dg.PartitionsDefinition | None = None
    name_prefix: str = ""


class PublicationOptions(TypedDict, total=False):
    """``PublicationSettings``' fields as keywords of ``build_published_release``."""

    key: str
    group_name: str
    resource_key: str
    publish_resource_key: str
    automation_condition: dg.AutomationCondition | None
    input_locations: Mapping[str, Declared] | None
    partitions_def: dg.PartitionsDefinition | None
    name_prefix: str


@dataclass(frozen=True)
class _Tables:
    """How the publication reads its tables: by name (``synthetic``, ``real``, ``holdout``) or as the
    values of the assets ``keys`` (role → key)."""

    synthetic: str
    real: str | None
    holdout: str | None
    keys: dict[str, dg.AssetKey]


def build_published_release(
    *,
    synthetic_asset: AssetRef = "synthetic_table",
    synthetic: str = "synthetic",
    required_checks: Sequence[str | dg.AssetCheckKey],
    real: str | None = None,
    holdout: str | None = None,
    real_asset: AssetRef | None = None,
    holdout_asset: AssetRef | None = None,
    settings: PublicationSettings | None = None,
    **options: Unpack[PublicationOptions],
) -> dg.AssetsDefinition:
    """The gated publication asset downstream of the synthetic table.

    Args:
        synthetic_asset: the synthetic table asset (a definition, spec, key or name).
        synthetic: its table name, when the tables are read by name.
        required_checks: check names on the synthetic asset (or full keys) whose latest evaluation must
            have passed on this very content; add ``privacy_signoff`` to require a human sign-off.
        real: the real table's name or query (tables by name, through ``resource_key``).
        holdout: the holdout table's name or query.
        real_asset: the real table as an asset (the tables as assets: each loaded by its IO manager).
        holdout_asset: the holdout table as an asset.
        settings: ``PublicationSettings``; its fields may also be given as keywords (``**options``).

    Returns:
        The ``published_release`` asset. Each input's fingerprint is compared with the one the checks
        judged; the target with each input's location as its IO manager reported it (``path`` / ``uri``
        metadata) and as declared in ``input_locations``, and with any path a loaded value names; an
        input whose location is neither reported nor declared is refused (asset_locations.py). A
        partitioned synthetic asset publishes partition by partition into a directory target.

    Example:
        ``build_published_release(required_checks=["privacy_risk_membership"], real="real")``
    """
    s = replace(settings or PublicationSettings(), **options)
    syn_key = key_of(synthetic_asset)
    if s.partitions_def is None and isinstance(synthetic_asset, dg.AssetsDefinition | dg.AssetSpec):
        s = replace(s, partitions_def=synthetic_asset.partitions_def)
    if real_asset is not None and (real or holdout):
        raise dg.DagsterInvalidDefinitionError("give real/holdout as table names or as assets, not both")
    if s.partitions_def is not None and real_asset is None:
        raise dg.DagsterInvalidDefinitionError(
            "a partitioned release is published through its IO manager: give real_asset= (and holdout_asset=)"
        )
    required = [
        k if isinstance(k, dg.AssetCheckKey) else dg.AssetCheckKey(syn_key, k) for k in required_checks
    ]
    if not required:
        raise dg.DagsterInvalidDefinitionError("published_release needs at least one required check")
    keys = {"synthetic": syn_key}
    if real_asset is not None:
        keys |= {"real": key_of(real_asset)} | ({"holdout": key_of(holdout_asset)} if holdout_asset else {})
    tables = _Tables(synthetic, real, holdout, keys)
    if real_asset is None:
        return _by_name(s, tables, required)
    return _from_assets(s, tables, required)


def _spec(s: PublicationSettings, required: list[dg.AssetCheckKey]) -> dict[str, Any]:
    condition = s.automation_condition or (
        dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()
    )
    names = ", ".join(k.name for k in required)
    return {
        "name": s.key,
        "group_name": s.group_name,
        "automation_condition": condition,
        "description": "The synthetic release, published only after re-verifying that every required "
        "privacy check passed on the latest materialization and on this very content. Required: " + names,
        "metadata": {"required_checks": names},
        # awaiting a sign-off, the step succeeds without publishing (issue 46: waiting is no failure)
        "output_required": False,
    }


def _by_name(s: PublicationSettings, t: _Tables, required: list[dg.AssetCheckKey]) -> dg.AssetsDefinition:
    """The tables read by name through the table resource."""
    syn_key, resources = t.keys["synthetic"], {s.resource_key, s.publish_resource_key}

    @dg.asset(deps=[syn_key], kinds={"duckdb"}, required_resource_keys=resources, **_spec(s, required))
    def _published(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
        db: ReadOnlyDuckDB | PostgresTables = getattr(context.resources, s.resource_key)
        target: PublishTarget = getattr(context.resources, s.publish_resource_key)

        def read() -> tuple[pl.DataFrame, dict[str, str]]:
            target.guard(db.database, (t.real, t.holdout, t.synthetic))
            sources = (("real", t.real), ("holdout", t.holdout))
            inputs = {role: fingerprint(db.read(src, role=role)) for role, src in sources if src}
            return db.read(t.synthetic, role="synthetic"), inputs

        yield from _published_if(
            publish_verified(
                context,
                target=target,
                read=read,
                syn_key=syn_key,
                required=required,
                name_prefix=s.name_prefix,
            )  # fmt: skip
        )

    return cast(dg.AssetsDefinition, _published)  # the decorator's type says Any


def _from_assets(s: PublicationSettings, t: _Tables, required: list[dg.AssetCheckKey]) -> dg.AssetsDefinition:
    """Every table as the value its IO manager loads."""
    declared = dict(s.input_locations or {})

    def from_values(
        context: dg.AssetExecutionContext, values: Mapping[str, Any]
    ) -> Iterator[dg.MaterializeResult]:
        from ..data.loading import load
        from .publication.asset_locations import AssetInput
        from .publication.asset_locations import input_locations as located

        target: PublishTarget = getattr(context.resources, s.publish_resource_key)

        def read() -> tuple[pl.DataFrame, dict[str, str]]:
            inputs = [
                AssetInput(role, k, _loaded_partitions(context, f"{role}_table"))
                for role, k in t.keys.items()
            ]
            # a value that is a path is read by the loader: that file is an input too
            paths = [str(v) for v in values.values() if isinstance(v, os.PathLike)]
            target.guard(inputs=lambda: located(context.instance, inputs, declared, paths))
            frames = {role: load(asset_value(v, role), role=role) for role, v in values.items()}
            return frames.pop("synthetic"), {role: fingerprint(df) for role, df in frames.items()}

        partition = context.partition_key if context.has_partition_key else None
        yield from _published_if(
            publish_verified(
                context,
                target=target,
                read=read,
                syn_key=t.keys["synthetic"],
                required=required,
                partition=partition,
                name_prefix=s.name_prefix,
            )  # fmt: skip
        )

    ins = {f"{role}_table": dg.AssetIn(key=k) for role, k in t.keys.items()}
    spec = {**_spec(s, required), "ins": ins, "required_resource_keys": {s.publish_resource_key}}
    spec |= {"kinds": {"parquet"}} | ({"partitions_def": s.partitions_def} if s.partitions_def else {})
    if "holdout" not in t.keys:

        @dg.asset(**spec)
        def _published_values(
            context: dg.AssetExecutionContext, synthetic_table: Any, real_table: Any
        ) -> Iterator[dg.MaterializeResult]:
            yield from from_values(context, {"synthetic": synthetic_table, "real": real_table})

        return cast(dg.AssetsDefinition, _published_values)  # the decorator's type says Any

    @dg.asset(**spec)
    def _published_with_holdout(
        context: dg.AssetExecutionContext, synthetic_table: Any, real_table: Any, holdout_table: Any
    ) -> Iterator[dg.MaterializeResult]:
        values = {"synthetic": synthetic_table, "real": real_table, "holdout": holdout_table}
        yield from from_values(context, values)

    return cast(dg.AssetsDefinition, _published_with_holdout)  # the decorator's type says Any


def _published_if(result: dg.MaterializeResult | None) -> Iterator[dg.MaterializeResult]:
    """The materialization of a publication, none while it awaits a sign-off."""
    if result is not None:
        yield result


def _loaded_partitions(context: dg.AssetExecutionContext, input_name: str) -> tuple[str, ...] | None:
    """The partitions of an input asset this run loaded (None: the input is not partitioned)."""
    try:
        return tuple(context.asset_partition_keys_for_input(input_name))
    except Exception as exc:  # Dagster 1.13 says so by a failed check; anything else fails the publication
        if "no asset partitions" in str(exc):
            return None
        raise


__all__ = [
    "PublicationOptions",
    "PublicationRefused",
    "PublicationSettings",
    "PublishTarget",
    "Verified",
    "build_published_release",
    "verify_release",
]
