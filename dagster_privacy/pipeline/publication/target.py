"""Publication targets: where a release is written — atomically, one publisher at a time, every
publication in the target's log exactly once.

A target is a DuckDB file (table ``table`` plus a ``publications`` log), one Parquet file (the latest
release), a directory (one ``file_name(release id).parquet`` per release) or a PostgreSQL database
(``postgresql://…``: table and log written in one transaction, serialised by the database; pg_target.py).
A file publisher holds an exclusive ``flock`` on the target's folder (released by the kernel when the
process dies, even by SIGKILL) while it removes temporary files a killed publisher left, writes the new
state to a temporary file next to the target and ``os.replace``-s it over the target. So two publishers
never interleave (no lost update: the log gains one row per publication), and a crash at any step
leaves the target readable, holding either the previous state or the new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import dagster as dg
import polars as pl
from pydantic import Field

from ...data import postgres
from ...errors import OwnMessage, safe_reason
from .directory_target import DirectoryStore
from .duckdb_target import DuckDBStore
from .input_guard import InputLocations, locate, refuse_inputs
from .parquet_target import ParquetStore
from .pg_target import PostgresStore
from .store import (
    LOG,
    LOG_COLUMNS,
    MARKER,
    RECORD,
    PublicationRefused,
    Store,
    entry_row,
    locked,
    remove_stale,
)

#: each kind of target and the class that keeps it (store.py's ``Store``)
STORES: dict[str, Callable[[str, str], Store]] = {
    "postgresql": PostgresStore,
    "duckdb": DuckDBStore,
    "parquet": ParquetStore,
    "directory": DirectoryStore,
}


class PublishTarget(dg.ConfigurableResource):
    """Where releases are published: ``*.duckdb`` (table ``table``, plus a ``publications`` log),
    ``*.parquet`` (one file, the latest release), or a directory (``file_name(release id).parquet`` each)."""

    path: str = Field(description="publication target, separate from the real data")
    table: str = Field(default="release", description="table name in a DuckDB target")

    def kind(self) -> str:
        p = self.path.lower()
        return (
            "postgresql"
            if postgres.is_postgres(self.path)
            else "duckdb"
            if p.endswith(".duckdb")
            else "parquet"
            if p.endswith((".parquet", ".pq"))
            else "directory"
        )

    def store(self) -> Store:
        """The class that keeps this kind of target."""
        return STORES[self.kind()](self.path, self.table)

    def guard(
        self,
        database: str | None = None,
        sources: Iterable[str | None] = (),
        *,
        inputs: Callable[[], InputLocations] | None = None,
    ) -> None:
        """Refuse a target that is (or holds, or lies in a folder searched by) an input: the database
        the tables are read from, and every file or database ``sources`` read (input_guard.py); or, for
        assets stored by IO managers, the locations ``inputs()`` gives (asset_locations.py)."""
        if not self.path:
            raise PublicationRefused("no publication target configured (DAGSTER_PRIVACY_PUBLISH_TARGET)")
        refusal = None
        try:
            refuse_inputs(self.path, inputs() if inputs is not None else locate(database, sources))
        except OwnMessage as exc:  # InputOverwrite, FilesUnknown, a TableError: our words
            refusal = str(exc)
        except Exception as exc:  # fail closed: a target we cannot place is not published to
            refusal = f"cannot tell whether the publication target is an input: {safe_reason(exc)}"
        if refusal is not None:
            raise PublicationRefused(refusal)

    def publish(
        self,
        df: pl.DataFrame,
        *,
        release_id: str,
        sha256: str,
        withdrawn_ok: bool = False,
        under_lock: Callable[[], dict[str, Any]] | None = None,
        **record: Any,
    ) -> str:
        """Write ``df`` atomically under the target's lock; returns the path written. ``record`` adds
        log fields (``real_sha256``, ``holdout_sha256``, ``audit_seq``, ``audit_head``, ``by``).
        Under the lock, before anything is replaced: the table or file replaced must be one publication
        wrote (its log row, its Parquet metadata), and content the log says was withdrawn is refused
        unless ``withdrawn_ok`` (a sign-off approved it) — checked where a withdrawal cannot slip in.
        ``under_lock`` (the caller's own decisions, such as the sign-off) runs last under the lock: it
        raises to refuse, or returns log fields read at that moment (the audit head). A withdrawal takes
        the same lock, so none slips in; a sign-off decision does not, so one recorded while the release
        is being written (seconds) lands after the publication — the log's audit head shows the order,
        and the re-judging check and ``withdraw`` act on it."""
        late: dict[str, Any] = {}

        def check(exists: bool, log: list[dict[str, Any]]) -> None:
            _owned(exists, log, self.table)
            gone = None if withdrawn_ok else _withdrawn(log, sha256)
            if gone:
                raise PublicationRefused(
                    f"this content was withdrawn as release {gone['release_id']} ({gone['published_at']}): "
                    "publish it again only under a policy with a sign-off"
                )
            if under_lock is not None:
                late.update(under_lock())

        def entry() -> dict[str, Any]:  # timed under the lock, after every decision
            return entry_row("publish", release_id, sha256, df.height, **{**record, **late})

        return self.store().publish(df, release_id, check, entry)

    def held(self) -> tuple[pl.DataFrame, dict[str, Any]] | None:
        """The release a DuckDB or PostgreSQL target holds now and the log row that put it there (None:
        it holds none).
        The release table and the log must agree — a table the log does not account for (log edited or
        dropped), or a log naming a table that is gone, is refused, never read as "nothing held"."""
        if self.kind() not in ("duckdb", "postgresql"):
            raise PublicationRefused(
                "re-judging reads a DuckDB or PostgreSQL publication target (with its log); "
                f"{self.kind()} targets keep no log"
            )
        return _agree(*self.store().state())

    def withdrawn(self, sha256: str) -> dict[str, Any] | None:
        """The latest withdrawal of this content in the log (None: never withdrawn)."""
        return _withdrawn(self.log(), sha256)

    def withdraw(
        self,
        *,
        release_id: str,
        by: str,
        reason: str,
        record: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Remove the release the target holds and append the withdrawal to its log, in one atomic
        replace (one transaction; a directory: the file's record first), all under the lock; refused
        unless ``release_id`` is the release it holds. ``record`` is called under the lock, after the
        check and before the replace, with the held log row; what it returns joins the log row (the
        audit anchor)."""

        def check(df: pl.DataFrame | None, log: list[dict[str, Any]]) -> dict[str, Any]:
            held = _agree(df, log)
            if held is None or held[1]["release_id"] != release_id:
                now = held[1]["release_id"] if held else "no release"
                raise PublicationRefused(
                    f"the target holds {now}, not release {release_id}: nothing withdrawn"
                )
            extra = record(held[1]) if record else {}
            return entry_row("withdraw", release_id, held[1]["sha256"], 0, by=by, reason=reason, **extra)

        return self.store().withdraw(release_id, check, by=by, reason=reason, record=record)

    def log(self) -> list[dict[str, Any]]:
        """The publication log of a DuckDB or PostgreSQL target, oldest first (empty: none yet); of a
        directory target, the rows its files and withdrawal records carry, by time."""
        return self.store().log()


def _withdrawn(log: list[dict[str, Any]], sha256: str) -> dict[str, Any] | None:
    return next((r for r in reversed(log) if r["action"] == "withdraw" and r["sha256"] == sha256), None)


def _owned(exists: bool, log: list[dict[str, Any]], table: str) -> None:
    """Refuse to replace a release table that no publication-log row accounts for (it was there before,
    or written outside publication: a real table named like the release, say)."""
    if exists and (not log or log[-1]["action"] == "withdraw"):
        raise PublicationRefused(
            f"the target's table {table} was not written by publication (no publication-log row accounts "
            "for it): refusing to replace it"
        )


def _agree(df: pl.DataFrame | None, log: list[dict[str, Any]]) -> tuple[pl.DataFrame, dict[str, Any]] | None:
    """(the release held, the log row that put it there), None when none is held — refused when the
    release table and the log disagree (one was changed outside publication)."""
    last = log[-1] if log else None
    holds = last is not None and last["action"] != "withdraw"
    if (df is not None) != holds:
        raise PublicationRefused(
            "the target's release table and its publication log disagree (one was "
            "changed outside publication)"
        )
    return (df, last) if df is not None and last is not None else None


__all__ = [
    "LOG",
    "LOG_COLUMNS",
    "MARKER",
    "RECORD",
    "STORES",
    "PublicationRefused",
    "PublishTarget",
    "locked",
    "remove_stale",
]
