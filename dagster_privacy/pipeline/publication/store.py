"""What every kind of publication target implements (``Store``) and what the file kinds share: the
publication log's shape, the folder lock, the removal of a killed publisher's temporary files and the
one atomic replace. A new kind of target is one module with one ``Store`` class (duckdb_target,
parquet_target, directory_target, pg_target); ``target.PublishTarget`` picks it by the target's path.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from ...data.atomic import replace_atomically
from ...errors import OwnMessage
from .input_guard import resolved

LOG = "publications"
#: a directory target's record of one release file's earlier log rows — publications it replaced, and
#: withdrawals — beside the file (``<file>.log.json``); the file itself carries its own row
RECORD = ".log.json"
#: the Parquet key-value metadata key of every published file (its log row): the mark of publication
MARKER = b"dagster_privacy"
#: the publication log: one row per publication or withdrawal, never updated
LOG_COLUMNS: tuple[tuple[str, str], ...] = (
    ("release_id", "varchar"),
    ("sha256", "varchar"),
    ("rows", "bigint"),
    ("published_at", "varchar"),
    ("action", "varchar"),
    ("by", "varchar"),
    ("reason", "varchar"),
    ("real_sha256", "varchar"),
    ("holdout_sha256", "varchar"),
    ("audit_seq", "bigint"),
    ("audit_head", "varchar"),
)

Log = list[dict[str, Any]]
#: under the lock, before anything is replaced: (does the release table exist, the log) → refuse or not
PublishCheck = Callable[[bool, Log], None]
#: under the lock: (the release table held or None, the log) → the withdrawal's log row, or refuse
WithdrawCheck = Callable[[pl.DataFrame | None, Log], dict[str, Any]]


class PublicationRefused(OwnMessage):
    """Publication re-verification failed; the message says why (no record values)."""


class Store(Protocol):
    """One kind of publication target: where a release and its log are kept."""

    def publish(
        self, df: pl.DataFrame, release_id: str, check: PublishCheck, entry: Callable[[], dict[str, Any]]
    ) -> str:
        """Under the target's lock: ``check``, then write ``df`` and the log row ``entry()`` (timed under
        the lock, after every decision) atomically; the path or name written."""
        ...

    def state(self) -> tuple[pl.DataFrame | None, Log]:
        """(the release table held or None, the log), as one reading."""
        ...

    def withdraw(
        self, release_id: str, check: WithdrawCheck, *, by: str, reason: str, record: Any
    ) -> dict[str, Any]:
        """Under the lock: ``check`` gives the withdrawal's log row; the release is removed and the row
        appended atomically. A directory target checks its own files (``by``, ``reason``, ``record``)."""
        ...

    def log(self) -> Log:
        """The publication log, oldest first (empty: none yet)."""
        ...


def entry_row(action: str, release_id: str, sha256: str, rows: int, **fields: Any) -> dict[str, Any]:
    """One publication-log row (the parquet kinds keep it in the file's metadata)."""
    return {
        **fields,
        "release_id": release_id,
        "sha256": sha256,
        "rows": rows,
        "action": action,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


@contextmanager
def locked(folder: Path) -> Iterator[None]:
    """An exclusive advisory lock on the target's folder for the block (blocking; released if the
    process dies). The folder, not a lock file: a lock file can be deleted while held, and the next
    publisher would lock a new one (seen: 12 of 40 publications lost); a folder holding the target
    cannot be. Targets sharing a folder publish one after the other."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def remove_stale(folder: Path, pattern: str) -> list[str]:
    """Delete temporary files a killed publisher of this target left; call with the lock held."""
    gone = []
    for p in folder.glob(pattern) if folder.is_dir() else ():
        p.unlink(missing_ok=True)
        gone.append(p.name)
    return gone


class FileStore:
    """What the file kinds share: the real path (a symlink or a relative path must not lock or replace
    another file), the folder locked and the temporaries' pattern, and the atomic replace."""

    kind = "file"

    def __init__(self, path: str, table: str) -> None:
        self.path, self.table = path, table

    def real(self) -> Path:
        return resolved(self.path)

    def lock_folder(self) -> tuple[Path, str]:
        """(the folder that is locked and holds the temporary files, the glob of this target's
        temporaries)."""
        p = self.real()
        return p.parent, f".{p.name}.*.{self.kind}.tmp*"

    def replace(self, target: Path, write: Callable[[Path], None]) -> None:
        """With the lock held: remove what a killed publisher of this target left, write the next state
        to a temporary file beside ``target`` and put it in place with one ``os.replace``."""
        folder, stale = self.lock_folder()
        remove_stale(folder, stale)
        replace_atomically(target, write, suffix=f".{self.kind}.tmp")  # the pattern remove_stale knows

    def no_log(self, what: str) -> PublicationRefused:
        return PublicationRefused(
            f"{what} reads a DuckDB or PostgreSQL publication target (with its log); {self.kind} targets "
            "keep no log"
        )


__all__ = [
    "LOG",
    "LOG_COLUMNS",
    "MARKER",
    "RECORD",
    "FileStore",
    "PublicationRefused",
    "Store",
    "entry_row",
    "locked",
    "remove_stale",
]
