"""Where an asset's value lives, for the publication guard of a release whose tables are assets stored
by their IO managers (``build_published_release(real_asset=…)``).

A location is what the IO manager reported on the asset's latest materialization (of the partition,
for a partitioned asset): ``path`` — Dagster's filesystem and UPath IO managers record it — or a
``uri``; else what the user declared in ``input_locations``. An input whose location is neither
reported nor declared (a warehouse table, a source asset) is refused: the guard cannot tell whether the
target is it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import dagster as dg

from ...errors import OwnMessage
from .. import metadata as md
from ..instance_records import latest_materialization
from .input_guard import InputLocations, locate

#: metadata keys an IO manager reports an asset's location under (a free-text "location" is no path)
LOCATION_KEYS = ("path", "uri", "dagster/uri")
#: metadata keys of a table in a database (Dagster's database IO managers): its database is not said
TABLE_KEYS = ("dagster/table_name", "dagster/relation_identifier")
#: storage that is neither a local file nor a PostgreSQL database: a publication target here (a local
#: file or folder, or a PostgreSQL database) cannot be it
REMOTE = frozenset(
    [
        "s3",
        "s3a",
        "s3n",
        "gs",
        "gcs",
        "r2",
        "az",
        "azure",
        "abfs",
        "abfss",
        "adl",
        "wasb",
        "wasbs",
        "hdfs",
        "http",
        "https",
        "hf",
        "snowflake",
        "bigquery",
        "bq",
        "databricks",
        "redshift",
        "mysql",
        "mssql",
        "oracle",
        "trino",
        "clickhouse",
    ]
)
#: schemes whose location is a local path: file and fsspec's local (a URI path, percent-encoded);
#: SQLAlchemy's duckdb and sqlite (the text after ``:///``: relative for SQLAlchemy, absolute for some
#: other readers — both are guarded)
_FILE_URIS = ("file", "local")
_SQLALCHEMY_FILES = ("duckdb", "sqlite")

#: what a declared location may be: one path or URI, or several
Declared = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


class LocationUnknown(OwnMessage, ValueError):
    """An input asset whose location was neither reported by its IO manager nor declared, or is given
    in a form the guard cannot place."""


@dataclass(frozen=True)
class AssetInput:
    role: str  # real, holdout, synthetic
    key: dg.AssetKey
    #: the partitions of the asset that were loaded (None: the asset is not partitioned)
    partitions: tuple[str, ...] | None = None


def reported_location(instance: dg.DagsterInstance, key: dg.AssetKey, partition: str | None) -> list[str]:
    """Every path or URI the IO manager recorded on the latest materialization (of ``partition``); none
    when it recorded a table in a database (``dagster/table_name``), whose database it does not say."""
    latest = latest_materialization(instance, key, partition)
    meta = latest.asset_materialization.metadata if latest and latest.asset_materialization else {}
    if any(md.recorded(meta, k) for k in TABLE_KEYS):
        return []
    values = (md.recorded(meta, k) for k in LOCATION_KEYS)
    return [v.strip() for v in values if isinstance(v, str) and v.strip()]


def placed(text: str, what: str) -> list[str]:
    """A location as the guard compares it: local paths or a PostgreSQL URI (empty for remote storage,
    ``REMOTE``); :class:`LocationUnknown` for a scheme it cannot place, or a file of another host. Where a
    spelling has two readings, both are guarded: a file URI as written and percent-decoded (UPath
    records ``#`` and ``%`` unencoded), SQLAlchemy's ``duckdb:///x`` relative and absolute."""
    text = text.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if not scheme or "://" not in text and scheme not in _FILE_URIS:  # a path (even one holding a colon)
        return [text]
    base = scheme.split("+")[0]
    if base in ("postgresql", "postgres"):  # a driver suffix (postgresql+psycopg2) names the same database
        return ["postgresql" + text[len(scheme) :]]
    if base in REMOTE:
        return []
    if base in _FILE_URIS:
        if parts.netloc.lower() not in ("", "localhost"):
            raise LocationUnknown(
                f"the {what} is a file of another host ({parts.netloc}): declare where it is"
            )
        raw = text[len(scheme) + 1 :].removeprefix("//").removeprefix(parts.netloc)  # neither decoded nor cut
        return list(dict.fromkeys([unquote(parts.path), raw]))
    if base in _SQLALCHEMY_FILES:
        if ":///" not in text:  # duckdb://host/x, duckdb:/x: no reading names a local file for sure
            raise LocationUnknown(f"the {what} ({scheme}) names no local file: declare where it is")
        rest = text.split(":///", 1)[1].split("?", 1)[0]
        if rest in ("", ":memory:"):  # an in-memory database has no file
            return []
        return list(dict.fromkeys([rest, "/" + rest.lstrip("/"), unquote(rest)]))
    raise LocationUnknown(
        f"the {what} is a {scheme}:// location, which publication cannot tell from the target; declare "
        "a path or a PostgreSQL URI for it (input_locations=), or store it elsewhere"
    )


def _declared(declared: Mapping[str, Declared], inp: AssetInput) -> list[str]:
    out: list[str] = []
    for name in (inp.key.to_user_string(), inp.role):
        v = declared.get(name)
        if v is not None:
            out += [os.fspath(x) for x in ([v] if isinstance(v, str | os.PathLike) else v)]
    if any(not x.strip() for x in out):  # an empty declaration would declare nothing
        raise LocationUnknown(f"input_locations for {inp.key.to_user_string()} holds an empty location")
    return out


def input_locations(
    instance: dg.DagsterInstance,
    inputs: Sequence[AssetInput],
    declared: Mapping[str, Declared],
    read: Sequence[str] = (),
) -> InputLocations:
    """The locations of every input: what its IO manager reported (for each partition loaded) and what
    is declared for it (by asset key or role) — both are compared, the declaration never hides a
    report — and ``read``, paths the inputs' values name (the loader reads them). Raises
    :class:`LocationUnknown` (one line saying how to declare it) for an input with neither."""
    texts: list[str] = list(read)
    for inp in inputs:
        name = inp.key.to_user_string()
        found = [t for p in inp.partitions or (None,) for t in reported_location(instance, inp.key, p)]
        missing = [p for p in inp.partitions or () if not reported_location(instance, inp.key, p)]
        given = _declared(declared, inp)
        if (not found or missing) and not given:
            of = f" (partition {missing[0]})" if missing else ""
            raise LocationUnknown(
                f"the {inp.role} asset {name}'s location is unknown{of}: its IO manager recorded no "
                f"'path' or 'uri' metadata (or a table in a database); declare where it is stored, "
                f"input_locations={{{name!r}: '<path or URI>'}}, so publication can tell it from "
                "the target"
            )
        texts += [t for x in found + given for t in placed(x, f"location of {name}")]
    return locate(None, texts)


__all__ = [
    "AssetInput",
    "LOCATION_KEYS",
    "LocationUnknown",
    "REMOTE",
    "input_locations",
    "placed",
    "reported_location",
]
