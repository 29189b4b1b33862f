"""A directory as a publication target: one ``file_name(release id).parquet`` per release, each carrying
its own log row in its metadata, and beside a file its earlier rows (``<file>.log.json``: publications it
replaced, withdrawals). All under the directory's lock; a withdrawal writes its row before it removes the
file, so a crash between the two leaves the withdrawal on record."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from ...data.atomic import replace_atomically
from ..resources import file_name
from .parquet_target import ParquetStore, file_row, refuse_foreign, write_marked
from .store import (
    LOG_COLUMNS,
    RECORD,
    Log,
    PublicationRefused,
    PublishCheck,
    WithdrawCheck,
    entry_row,
    locked,
    remove_stale,
)


def record_rows(path: Path) -> list[dict[str, Any]]:
    """The log rows of a directory target's record (none: no record). A record that is not a list of
    publication or withdrawal rows of its own file's release is refused — it was edited or moved —
    before anything is decided on it."""
    if not path.exists():
        return []
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        rows = None
    name = path.name[: -len(RECORD)]
    ok = isinstance(rows, list) and all(
        isinstance(r, dict)
        and r.get("action") in ("publish", "withdraw")
        and isinstance(r.get("release_id"), str)
        and file_name(r["release_id"]) == name
        for r in rows
    )
    if not ok:
        raise PublicationRefused(f"the publication record {path.name} is not one publication wrote (edited?)")
    return rows


def keep(path: Path, *rows: dict[str, Any]) -> None:
    """Append ``rows`` to the record beside the release file ``path`` (under the target's lock), before
    the file is replaced or removed: the log keeps every publication and withdrawal."""
    record = path.with_name(path.name[: -len(".parquet")] + RECORD)
    text = json.dumps([*record_rows(record), *rows]).encode()
    replace_atomically(record, lambda tmp: tmp.write_bytes(text), suffix=".directory.tmp")


class DirectoryStore(ParquetStore):
    """One Parquet file per release in a directory, each file its own log row (no table to re-judge:
    ``state`` as a Parquet file's)."""

    kind = "directory"

    def lock_folder(self) -> tuple[Path, str]:
        return self.real(), ".*.directory.tmp*"

    def publish(
        self, df: pl.DataFrame, release_id: str, check: PublishCheck, entry: Callable[[], dict[str, Any]]
    ) -> str:
        folder = self.real()
        with locked(folder):
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / f"{file_name(release_id)}.parquet"
            refuse_foreign(target)
            check(False, self.log())
            if (held := file_row(target)) is not None:
                keep(target, held)  # the release published again: its earlier row stays in the log
            self.replace(target, lambda tmp: write_marked(tmp, df, entry()))
        return str(target)

    def withdraw(
        self, release_id: str, check: WithdrawCheck, *, by: str, reason: str, record: Any
    ) -> dict[str, Any]:
        """Under the lock, the release's publication row and the withdrawal's are written atomically to
        ``<file>.log.json`` beside the release's file, then the file is removed."""
        folder = self.real()
        name = file_name(release_id)
        path = folder / f"{name}.parquet"
        with locked(folder):
            held = file_row(path)
            if held is None or held.get("release_id") != release_id:
                raise PublicationRefused(
                    f"the target holds no file of release {release_id}: nothing withdrawn"
                )
            record_rows(folder / f"{name}{RECORD}")  # an edited record is refused before any decision
            extra = record(held) if record else {}
            info = entry_row("withdraw", release_id, held["sha256"], 0, by=by, reason=reason, **extra)
            remove_stale(folder, ".*.directory.tmp*")
            keep(path, held, info)
            path.unlink()
        return info

    def log(self) -> Log:
        """The rows its files and withdrawal records carry, by time."""
        target = self.real()
        files = sorted(target.iterdir()) if target.is_dir() else []
        rows: list[dict[str, Any] | None] = []
        rows += [r for f in files if f.name.endswith(RECORD) for r in record_rows(f)]
        rows += [file_row(f) for f in files if f.suffix == ".parquet"]
        base = dict.fromkeys(c for c, _ in LOG_COLUMNS)
        unique = {json.dumps(r, sort_keys=True): r for r in rows if r}  # a crash may leave a row twice
        return sorted(({**base, **r} for r in unique.values()), key=lambda r: str(r["published_at"]))


__all__ = ["DirectoryStore", "keep", "record_rows"]
