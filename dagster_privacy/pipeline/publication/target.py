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

import fcntl
import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
from pydantic import Field

from ...data import postgres
from ...data.atomic import replace_atomically
from ...data.sql import quote_ident
from ...errors import OwnMessage, safe_reason
from ..resources import file_name
from . import duckdb_target, pg_target
from .input_guard import InputLocations, locate, refuse_inputs, resolved

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


class PublicationRefused(OwnMessage):
    """Publication re-verification failed; the message says why (no record values)."""


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

    def _real(self) -> Path:
        """The target's real path: a symlink (or a relative path) must not lock or replace another file."""
        return resolved(self.path)

    def _lock(self) -> tuple[Path, str]:
        """(the folder that is locked and holds the temporary files, the glob of this target's
        temporaries)."""
        p = self._real()
        if self.kind() == "directory":
            return p, ".*.directory.tmp*"
        return p.parent, f".{p.name}.*.{self.kind()}.tmp*"

    def _replace(self, target: Path, write: Callable[[Path], None]) -> None:
        """With the lock held: remove what a killed publisher of this target left, write the next state
        to a temporary file beside ``target`` and put it in place with one ``os.replace``."""
        folder, stale = self._lock()
        remove_stale(folder, stale)
        replace_atomically(target, write, suffix=f".{self.kind()}.tmp")  # the pattern remove_stale knows

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
        kind = self.kind()
        late: dict[str, Any] = {}

        def decide() -> None:
            if under_lock is not None:
                late.update(under_lock())

        def check(exists: bool, log: list[dict[str, Any]]) -> None:
            _owned(exists, log, self.table)
            gone = None if withdrawn_ok else _withdrawn(log, sha256)
            if gone:
                raise PublicationRefused(
                    f"this content was withdrawn as release {gone['release_id']} ({gone['published_at']}): "
                    "publish it again only under a policy with a sign-off"
                )
            decide()

        def entry() -> dict[str, Any]:  # timed under the lock, after every decision
            return _entry("publish", release_id, sha256, df.height, **{**record, **late})

        if kind == "postgresql":
            return pg_target.publish(self.path, self.table, df, entry, LOG_COLUMNS, check)
        target = self._real()

        def write(tmp: Path) -> None:
            info = entry()
            if kind == "duckdb":
                duckdb_target.write(tmp, target, info, df=df, table=self.table, log=LOG, columns=LOG_COLUMNS)
            else:
                import pyarrow.parquet as pq

                table = df.to_arrow()
                meta = {**(table.schema.metadata or {}), MARKER: json.dumps(info).encode()}
                pq.write_table(table.replace_schema_metadata(meta), tmp)

        with locked(self._lock()[0]):
            if kind == "directory":
                target.mkdir(parents=True, exist_ok=True)
                target = target / f"{file_name(release_id)}.parquet"
            if kind == "duckdb":
                why = duckdb_target.unmarked(target, self.table, LOG)  # a warehouse file is not a target
                if why:
                    raise PublicationRefused(why)
                exists, log = self._has_table(), self.log()
                check(exists, log)
            elif target.exists() and not _published_parquet(target):
                raise PublicationRefused(
                    f"{target} exists and was not written by publication (no dagster_privacy metadata): "
                    "refusing to replace it"
                )
            else:
                check(False, self.log())
                if kind == "directory" and (held := _file_row(target)) is not None:
                    _keep(target, held)  # the release published again: its earlier row stays in the log
            self._replace(target, write)
        return str(target)

    def _has_table(self) -> bool:
        """Whether the DuckDB target file holds the release table now."""
        if not self._real().is_file():
            return False
        from ...data.sql import locked_connection

        con = locked_connection(str(self._real()))  # read-only, no extension loads (a non-DuckDB file)
        try:
            return bool(  # case-insensitive, any schema: as ``create or replace`` resolves the name
                con.execute(
                    "select count(*) from information_schema.tables where lower(table_name) = lower(?) "
                    "or lower(table_schema || '.' || table_name) = lower(?)",
                    [self.table, self.table],
                ).fetchall()[0][0]
            )
        finally:
            con.close()

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
        return _agree(*self._state())

    def _state(self) -> tuple[pl.DataFrame | None, list[dict[str, Any]]]:
        """(the release table or None, the log) as the target holds them."""
        if self.kind() == "postgresql":
            return pg_target.read_state(self.path, self.table, LOG_COLUMNS)
        if not self._real().is_file():
            return None, []
        import duckdb

        log = self.log()
        con = duckdb.connect(str(self._real()), read_only=True)
        try:
            have = con.execute(
                "select count(*) from information_schema.tables where table_name = ?", [self.table]
            ).fetchall()[0][0]
            df = con.sql(f"select * from {quote_ident(self.table)}").pl() if have else None
        finally:
            con.close()
        return df, log

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
        """Remove the release the DuckDB or PostgreSQL target holds and append the withdrawal to its log,
        in one atomic replace (one transaction), all under the lock; refused unless ``release_id`` is the
        release it holds. ``record`` is called under the lock, after the check and before the replace,
        with the held log row; what it returns joins the log row (the audit anchor)."""

        def check(df: pl.DataFrame | None, log: list[dict[str, Any]]) -> dict[str, Any]:
            held = _agree(df, log)
            if held is None or held[1]["release_id"] != release_id:
                now = held[1]["release_id"] if held else "no release"
                raise PublicationRefused(
                    f"the target holds {now}, not release {release_id}: nothing withdrawn"
                )
            extra = record(held[1]) if record else {}
            return _entry("withdraw", release_id, held[1]["sha256"], 0, by=by, reason=reason, **extra)

        if self.kind() == "postgresql":
            return pg_target.withdraw(self.path, self.table, check, LOG_COLUMNS)
        if self.kind() == "directory":
            return self._withdraw_file(release_id, by=by, reason=reason, record=record)
        target = self._real()
        with locked(self._lock()[0]):
            info = check(*self._state())
            self._replace(
                target,
                lambda tmp: duckdb_target.write(
                    tmp, target, info, df=None, table=self.table, log=LOG, columns=LOG_COLUMNS
                ),
            )
        return info

    def _withdraw_file(
        self,
        release_id: str,
        *,
        by: str,
        reason: str,
        record: Callable[[dict[str, Any]], dict[str, Any]] | None,
    ) -> dict[str, Any]:
        """A directory target (one file per release, each carrying its log row): under the lock, the
        release's publication row and the withdrawal's are written atomically to ``<file>.log.json``
        beside the release's file, then the file is removed — a crash between the two leaves a
        withdrawal on record, which the next publication of that content still finds."""
        folder = self._real()
        name = file_name(release_id)
        path = folder / f"{name}.parquet"
        with locked(folder):
            held = _file_row(path)
            if held is None or held.get("release_id") != release_id:
                raise PublicationRefused(
                    f"the target holds no file of release {release_id}: nothing withdrawn"
                )
            _record_rows(folder / f"{name}{RECORD}")  # an edited record is refused before any decision
            extra = record(held) if record else {}
            info = _entry("withdraw", release_id, held["sha256"], 0, by=by, reason=reason, **extra)
            remove_stale(folder, ".*.directory.tmp*")
            _keep(path, held, info)
            path.unlink()
        return info

    def log(self) -> list[dict[str, Any]]:
        """The publication log of a DuckDB or PostgreSQL target, oldest first (empty: none yet); of a
        directory target, the rows its files and withdrawal records carry, by time."""
        if self.kind() == "postgresql":
            return pg_target.read_state(self.path, self.table, LOG_COLUMNS, table_too=False)[1]
        target = self._real()
        if self.kind() == "directory":
            files = sorted(target.iterdir()) if target.is_dir() else []
            rows = [r for f in files if f.name.endswith(RECORD) for r in _record_rows(f)]
            rows += [_file_row(f) for f in files if f.suffix == ".parquet"]
            base = dict.fromkeys(c for c, _ in LOG_COLUMNS)
            unique = {json.dumps(r, sort_keys=True): r for r in rows if r}  # a crash may leave a row twice
            return sorted(({**base, **r} for r in unique.values()), key=lambda r: str(r["published_at"]))
        if self.kind() != "duckdb" or not target.is_file():
            return []
        import duckdb

        con = duckdb.connect(str(target), read_only=True)
        try:
            have = {
                r[0]
                for r in con.execute(
                    "select column_name from information_schema.columns where table_name = ?", [LOG]
                ).fetchall()
            }
            if not have:
                return []
            cols = [c for c, _ in LOG_COLUMNS if c in have]
            rows = con.execute(
                f"select {', '.join(quote_ident(c) for c in cols)} from {LOG} order by rowid"
            ).fetchall()
        finally:
            con.close()
        return [{**dict.fromkeys(c for c, _ in LOG_COLUMNS), **dict(zip(cols, r, strict=True))} for r in rows]


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


def _record_rows(path: Path) -> list[dict[str, Any]]:
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


def _keep(path: Path, *rows: dict[str, Any]) -> None:
    """Append ``rows`` to the record beside the release file ``path`` (under the target's lock), before
    the file is replaced or removed: the log keeps every publication and withdrawal."""
    record = path.with_name(path.name[: -len(".parquet")] + RECORD)
    text = json.dumps([*_record_rows(record), *rows]).encode()
    replace_atomically(record, lambda tmp: tmp.write_bytes(text), suffix=".directory.tmp")


def _file_row(path: Path) -> dict[str, Any] | None:
    """The log row a published Parquet file carries (None: no such file, or not one publication wrote)."""
    import pyarrow.parquet as pq

    try:
        return json.loads((pq.read_schema(path).metadata or {})[MARKER])
    except Exception:  # absent, not Parquet, not ours
        return None


def _published_parquet(path: Path) -> bool:
    """Whether a Parquet file carries the metadata publication writes into every file it publishes."""
    import pyarrow.parquet as pq

    try:
        return MARKER in (pq.read_schema(path).metadata or {})
    except Exception:  # not Parquet, unreadable: not ours
        return False


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


def _entry(action: str, release_id: str, sha256: str, rows: int, **fields: Any) -> dict[str, Any]:
    """One publication-log row (the parquet kinds keep it in the file's metadata)."""
    return {
        **fields,
        "release_id": release_id,
        "sha256": sha256,
        "rows": rows,
        "action": action,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


__all__ = ["LOG", "LOG_COLUMNS", "PublicationRefused", "PublishTarget", "locked", "remove_stale"]
