"""One Parquet file as a publication target: the latest release, its log row in the file's own metadata
(``MARKER``), replaced at once under the folder's lock; a file without that metadata is never replaced."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from .store import MARKER, FileStore, Log, PublicationRefused, PublishCheck, WithdrawCheck, locked


def write_marked(tmp: Path, df: pl.DataFrame, info: dict[str, Any]) -> None:
    """``df`` as Parquet in ``tmp``, its log row in the file's metadata: the mark of publication."""
    import pyarrow.parquet as pq

    table = df.to_arrow()
    meta = {**(table.schema.metadata or {}), MARKER: json.dumps(info).encode()}
    pq.write_table(table.replace_schema_metadata(meta), tmp)


def file_row(path: Path) -> dict[str, Any] | None:
    """The log row a published Parquet file carries (None: no such file, or not one publication wrote)."""
    import pyarrow.parquet as pq

    try:
        return json.loads((pq.read_schema(path).metadata or {})[MARKER])
    except Exception:  # absent, not Parquet, not ours
        return None


def published_parquet(path: Path) -> bool:
    """Whether a Parquet file carries the metadata publication writes into every file it publishes."""
    import pyarrow.parquet as pq

    try:
        return MARKER in (pq.read_schema(path).metadata or {})
    except Exception:  # not Parquet, unreadable: not ours
        return False


def refuse_foreign(target: Path) -> None:
    """A file at the target's name that publication did not write is never replaced."""
    if target.exists() and not published_parquet(target):
        raise PublicationRefused(
            f"{target} exists and was not written by publication (no dagster_privacy metadata): "
            "refusing to replace it"
        )


class ParquetStore(FileStore):
    """One Parquet file: the latest release; it keeps no log beyond the row in its metadata."""

    kind = "parquet"

    def publish(
        self, df: pl.DataFrame, release_id: str, check: PublishCheck, entry: Callable[[], dict[str, Any]]
    ) -> str:
        target = self.real()
        with locked(self.lock_folder()[0]):
            refuse_foreign(target)
            check(False, self.log())
            self.replace(target, lambda tmp: write_marked(tmp, df, entry()))
        return str(target)

    def state(self) -> tuple[pl.DataFrame | None, Log]:
        raise self.no_log("re-judging")

    def withdraw(
        self, release_id: str, check: WithdrawCheck, *, by: str, reason: str, record: Any
    ) -> dict[str, Any]:
        raise self.no_log("a withdrawal")

    def log(self) -> Log:
        return []


__all__ = ["ParquetStore", "file_row", "published_parquet", "refuse_foreign", "write_marked"]
