"""Publication targets: where a release is written — atomically, one publisher at a time, every
publication in the target's log exactly once.

A target is a DuckDB file (table ``table`` plus a ``publications`` log), one Parquet file (the latest
release) or a directory (``<release id>.parquet`` per release). A publisher holds an exclusive
``flock`` on ``.<target>.lock`` (released by the kernel when the process dies, even by SIGKILL) while
it removes temporary files a killed publisher left, writes the new state to a temporary file next to
the target and ``os.replace``-s it over the target. So two publishers never interleave (no lost
update: the log gains one row per publication), and a crash at any step leaves the target readable,
holding either the previous state or the new one.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
from pydantic import Field

from ..errors import OwnMessage
from .resources import file_name, quote_ident

LOG = "publications"
#: the publication log: one row per publication or withdrawal, never updated
LOG_COLUMNS: tuple[tuple[str, str], ...] = (
    ("release_id", "varchar"), ("sha256", "varchar"), ("rows", "bigint"), ("published_at", "varchar"),
    ("action", "varchar"), ("by", "varchar"), ("reason", "varchar"), ("real_sha256", "varchar"),
    ("holdout_sha256", "varchar"), ("audit_seq", "bigint"), ("audit_head", "varchar"),
)


class PublicationRefused(OwnMessage):
    """Publication re-verification failed; the message says why (no record values)."""


@contextmanager
def locked(lock: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``lock`` for the block (blocking; released if the process dies)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def remove_stale(folder: Path, prefix: str) -> list[str]:
    """Delete temporary files a killed publisher left (``<prefix>*.tmp*``); call with the lock held."""
    gone = []
    for p in folder.glob(f"{prefix}*.tmp*") if folder.is_dir() else ():
        p.unlink(missing_ok=True)
        gone.append(p.name)
    return gone


class PublishTarget(dg.ConfigurableResource):
    """Where releases are published: ``*.duckdb`` (table ``table``, plus a ``publications`` log),
    ``*.parquet`` (one file, the latest release), or a directory (``<release id>.parquet`` per release)."""

    path: str = Field(description="publication target, separate from the real data")
    table: str = Field(default="release", description="table name in a DuckDB target")

    def kind(self) -> str:
        p = self.path.lower()
        return "duckdb" if p.endswith(".duckdb") else "parquet" if p.endswith((".parquet", ".pq")) else "directory"

    def guard(self, database: str | None) -> None:
        """Refuse a target that is the real data's database (or missing)."""
        if not self.path:
            raise PublicationRefused("no publication target configured (DAGSTER_PRIVACY_PUBLISH_TARGET)")
        if database and os.path.realpath(self.path) == os.path.realpath(database):
            raise PublicationRefused("the publication target is the database holding the real data; "
                                     "publish to a separate file or directory")

    def _lock(self) -> tuple[Path, Path]:
        """(the lock file, the folder its temporary files go to)."""
        p = Path(self.path)
        if self.kind() == "directory":
            return p / ".publish.lock", p
        return p.with_name(f".{p.name}.lock"), p.parent

    def publish(self, df: pl.DataFrame, *, release_id: str, sha256: str, **record: Any) -> str:
        """Write ``df`` atomically under the target's lock; returns the path written. ``record`` adds
        log fields (``real_sha256``, ``holdout_sha256``, ``audit_seq``, ``audit_head``, ``by``)."""
        kind = self.kind()
        target = Path(self.path)
        lock, folder = self._lock()
        with locked(lock):
            if kind == "directory":
                target.mkdir(parents=True, exist_ok=True)
                target = target / f"{file_name(release_id)}.parquet"
            remove_stale(folder, "." if kind == "directory" else f".{target.name}.")
            tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
            info = {**record, "release_id": release_id, "sha256": sha256, "rows": df.height, "action": "publish",
                    "published_at": datetime.now(UTC).isoformat(timespec="seconds")}
            try:
                if kind == "duckdb":
                    _write_duckdb(tmp, target, info, df=df, table=self.table)
                else:
                    import pyarrow.parquet as pq

                    table = df.to_arrow()
                    meta = {**(table.schema.metadata or {}), b"dagster_privacy": json.dumps(info).encode()}
                    pq.write_table(table.replace_schema_metadata(meta), tmp)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        return str(target)

    def held(self) -> tuple[pl.DataFrame, dict[str, Any]] | None:
        """The release a DuckDB target holds now and the log row that put it there (None: it holds none,
        or its last log row is a withdrawal)."""
        if self.kind() != "duckdb":
            raise PublicationRefused("re-judging reads a DuckDB publication target (with its log); "
                                     f"{self.kind()} targets keep no log")
        log = self.log()
        if not log or log[-1]["action"] == "withdraw":
            return None
        import duckdb

        con = duckdb.connect(self.path, read_only=True)
        try:
            df = con.sql(f"select * from {quote_ident(self.table)}").pl()
        finally:
            con.close()
        return df, log[-1]

    def withdraw(self, *, release_id: str, by: str, reason: str, **record: Any) -> dict[str, Any]:
        """Remove the release the DuckDB target holds, in one atomic replace under the lock, and append
        the withdrawal to its log; refused unless ``release_id`` is the release it holds."""
        target = Path(self.path)
        lock, folder = self._lock()
        with locked(lock):
            held = self.held()
            if held is None or held[1]["release_id"] != release_id:
                now = held[1]["release_id"] if held else "no release"
                raise PublicationRefused(f"the target holds {now}, not release {release_id}: nothing withdrawn")
            remove_stale(folder, f".{target.name}.")
            tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
            info = {**record, "release_id": release_id, "sha256": held[1]["sha256"], "rows": 0, "by": by,
                    "reason": reason, "action": "withdraw",
                    "published_at": datetime.now(UTC).isoformat(timespec="seconds")}
            try:
                _write_duckdb(tmp, target, info, df=None, table=self.table)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        return info

    def log(self) -> list[dict[str, Any]]:
        """The publication log of a DuckDB target, oldest first (empty: none yet)."""
        target = Path(self.path)
        if self.kind() != "duckdb" or not target.is_file():
            return []
        import duckdb

        con = duckdb.connect(str(target), read_only=True)
        try:
            have = {r[0] for r in con.execute("select column_name from information_schema.columns "
                                              "where table_name = ?", [LOG]).fetchall()}
            if not have:
                return []
            cols = [c for c, _ in LOG_COLUMNS if c in have]
            rows = con.execute(f"select {', '.join(quote_ident(c) for c in cols)} from {LOG} order by rowid").fetchall()
        finally:
            con.close()
        return [{**dict.fromkeys(c for c, _ in LOG_COLUMNS), **dict(zip(cols, r, strict=True))} for r in rows]


def _write_duckdb(tmp: Path, target: Path, info: dict[str, Any], *, df: pl.DataFrame | None, table: str) -> None:
    """The target's next state in ``tmp``: the release table replaced by ``df`` (dropped when None: a
    withdrawal) and one log row appended."""
    import duckdb

    if target.exists():
        shutil.copyfile(target, tmp)  # keep the publications log and other tables
    con = duckdb.connect(str(tmp))
    try:
        if df is not None:
            con.register("release_frame", df.to_arrow())
            con.execute(f"create or replace table {quote_ident(table)} as select * from release_frame")
            con.unregister("release_frame")
        else:
            con.execute(f"drop table if exists {quote_ident(table)}")
        con.execute(f"create table if not exists {LOG} (release_id varchar)")
        for name, typ in LOG_COLUMNS:  # older logs gain the newer columns
            con.execute(f"alter table {LOG} add column if not exists {quote_ident(name)} {typ}")
        names = [c for c, _ in LOG_COLUMNS]
        con.execute(f"insert into {LOG} ({', '.join(quote_ident(c) for c in names)}) values "
                    f"({', '.join('?' * len(names))})", [info.get(c) for c in names]).fetchall()
        con.execute("checkpoint").fetchall()
    finally:
        con.close()


__all__ = ["LOG", "LOG_COLUMNS", "PublicationRefused", "PublishTarget", "locked", "remove_stale"]
