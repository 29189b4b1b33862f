"""Metadata keys and typed metadata helpers shared by the pipeline's assets and checks."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import dagster as dg
import polars as pl

#: content fingerprint (``tables.fingerprint``) of the table a materialization or evaluation saw
FINGERPRINT = "dagster_privacy/sha256"
#: release id a materialization or evaluation belongs to
RELEASE_ID = "dagster_privacy/release_id"


def number(x: float | int | None) -> dg.MetadataValue:
    """A float metadata value, or null for None / NaN / inf (never a fake 0.0)."""
    if x is None:
        return dg.MetadataValue.null()
    f = float(x)
    return dg.MetadataValue.float(f) if math.isfinite(f) else dg.MetadataValue.null()


def text(x: str | None) -> dg.MetadataValue:
    return dg.MetadataValue.null() if x is None else dg.MetadataValue.text(str(x))


def json(x: Mapping[str, Any] | list[Any] | None) -> dg.MetadataValue:
    from ..results import to_jsonable

    return dg.MetadataValue.null() if x is None else dg.MetadataValue.json(to_jsonable(x))


def table(rows: Iterable[Mapping[str, Any]], columns: Mapping[str, str]) -> dg.MetadataValue:
    """A table in the Dagster UI: ``columns`` (name → Dagster column type, in order) of each row."""
    schema = dg.TableSchema(columns=[dg.TableColumn(c, t) for c, t in columns.items()])
    return dg.MetadataValue.table([dg.TableRecord({c: r[c] for c in columns}) for r in rows], schema=schema)


def column_schema(df: pl.DataFrame) -> dg.TableSchema:
    """Column names and dtypes only."""
    return dg.TableSchema(columns=[dg.TableColumn(name=c, type=str(t)) for c, t in df.schema.items()])


def table_metadata(df: pl.DataFrame, fingerprint: str) -> dict[str, dg.MetadataValue | dg.TableSchema]:
    """What a table asset records: row count, schema, content fingerprint — figures and names, no values."""
    return {
        "dagster/row_count": dg.MetadataValue.int(df.height),
        "dagster/column_schema": column_schema(df),
        FINGERPRINT: dg.MetadataValue.text(fingerprint),
        "columns": dg.MetadataValue.int(df.width),
    }


def recorded(metadata: Mapping[str, Any] | None, key: str) -> Any:
    """The plain value of a metadata entry (None when absent)."""
    if not metadata or key not in metadata:
        return None
    v = metadata[key]
    return getattr(v, "value", v)


def fmt(x: float | None) -> str:
    """A figure for a Markdown summary: 4 significant digits, '—' when missing."""
    return "—" if x is None or not math.isfinite(float(x)) else f"{float(x):.4g}"
