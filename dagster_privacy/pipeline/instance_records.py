"""The instance's latest records of an asset and of its checks — of one partition on a partitioned
release — read the same way by publication, the sign-off and the location guard."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
from dagster._core.event_api import PartitionKeyFilter  # no public name in 1.13


def latest_materialization(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None) -> Any:
    """The latest materialization record of the asset (of ``partition``: a partitioned asset), or None."""
    where = key if partition is None else dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition])
    latest = instance.fetch_materializations(where, limit=1).records
    return latest[0] if latest else None


def latest_check_records(
    instance: dg.DagsterInstance, keys: Sequence[dg.AssetCheckKey], partition: str | None
) -> Mapping[dg.AssetCheckKey, Any]:
    """The latest execution record of each check that has one (of ``partition``, else of any)."""
    where = PartitionKeyFilter(key=partition) if partition is not None else None
    return instance.event_log_storage.get_latest_asset_check_execution_by_key(
        list(keys), partition_filter=where
    )


__all__ = ["latest_check_records", "latest_materialization"]
