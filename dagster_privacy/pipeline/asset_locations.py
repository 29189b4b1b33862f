"""Where an asset's value lives, for the publication guard of a release whose tables are assets stored
by their IO managers (``build_published_release(real_asset=…)``).

A location is what the IO manager reported on the asset's latest materialization (of the partition,
for a partitioned asset): ``path`` — Dagster's filesystem and UPath IO managers record it — or a
``uri``; else what the user declared in ``input_locations``. An input whose location is neither
reported nor declared (a warehouse table, a source asset) is refused: the guard cannot tell whether the
target is it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from .. import postgres
from ..errors import OwnMessage
from . import metadata as md
from .input_guard import InputLocations, locate

#: metadata keys an IO manager reports an asset's location under, in the order they are trusted
LOCATION_KEYS = ("path", "uri", "dagster/uri", "location")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

#: what a declared location may be: one path or URI, or several
Declared = str | Sequence[str]


class LocationUnknown(OwnMessage, ValueError):
    """An input asset whose location was neither reported by its IO manager nor declared."""


@dataclass(frozen=True)
class AssetInput:
    role: str  # real, holdout, synthetic
    key: dg.AssetKey
    partition: str | None = None


def latest_materialization(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None) -> Any:
    """The latest materialization record of the asset (of ``partition``: a partitioned asset), or None."""
    where = key if partition is None else dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition])
    latest = instance.fetch_materializations(where, limit=1).records
    return latest[0] if latest else None


def reported_location(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None) -> str | None:
    """The path or URI the IO manager recorded on the latest materialization (of ``partition``)."""
    latest = latest_materialization(instance, key, partition)
    meta = latest.asset_materialization.metadata if latest and latest.asset_materialization else {}
    for k in LOCATION_KEYS:
        value = md.recorded(meta, k)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _local_or_database(texts: Sequence[str]) -> list[str]:
    """The locations the guard compares: local paths, ``file://`` URIs and PostgreSQL URIs. Any other
    scheme (``s3://``, ``snowflake://``, ``bigquery://``) is storage no publication target here writes
    to: a target is a local file or folder, or a PostgreSQL database."""
    out = []
    for t in texts:
        m = _SCHEME.match(t)
        if m is None or m.group(1).lower() == "file" or postgres.is_postgres(t):
            out.append(t)
    return out


def _declared(declared: Mapping[str, Declared], inp: AssetInput) -> list[str] | None:
    for name in (inp.key.to_user_string(), inp.role):
        if name in declared:
            v = declared[name]
            return [v] if isinstance(v, str) else [str(x) for x in v]
    return None


def input_locations(
    instance: dg.DagsterInstance, inputs: Sequence[AssetInput], declared: Mapping[str, Declared]
) -> InputLocations:
    """The locations of every input: declared (by asset key or role) first, else reported; raises
    :class:`LocationUnknown` (one line saying how to declare it) for an input with neither."""
    files, searched, databases = [], [], []
    for inp in inputs:
        texts = _declared(declared, inp)
        if texts is None:
            found = reported_location(instance, inp.key, inp.partition)
            if found is None:
                name = inp.key.to_user_string()
                raise LocationUnknown(
                    f"the {inp.role} asset {name}'s location is unknown: its IO manager recorded no "
                    f"'path' or 'uri' metadata; declare where it is stored, "
                    f"input_locations={{{name!r}: '<path or URI>'}}, so publication can tell it from "
                    "the target"
                )
            texts = [found]
        located = locate(None, _local_or_database(texts))
        files += located.files
        searched += located.searched
        databases += located.databases
    return InputLocations(tuple(files), tuple(searched), tuple(databases))


__all__ = ["AssetInput", "LOCATION_KEYS", "LocationUnknown", "input_locations", "reported_location"]
