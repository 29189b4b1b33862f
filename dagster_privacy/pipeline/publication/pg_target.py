"""A PostgreSQL publication target: the release table and its ``publications`` log in one database.

Every publication or withdrawal is one transaction that first takes a transaction-scoped advisory
lock (``pg_advisory_xact_lock``, one per database): publishers are serialised by the database, so the
log gains exactly one row per publication (no lost update). The log names the release table of each
row, so one database may hold several release tables. Inside it the new release is loaded
into a fresh table (ADBC bulk ingest, Arrow in), the old table dropped, the new one renamed into place
and the log row inserted; the commit makes all of it visible at once, and a publisher killed at any
step leaves the previous release and log untouched (PostgreSQL rolls the transaction back). Readers
(``held``, ``log``) read both in one REPEATABLE READ snapshot.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import polars as pl

from ...data import postgres
from ...data.sql import quote_ident
from ...errors import OwnMessage
from .store import LOG_COLUMNS, Log, PublishCheck, WithdrawCheck

LOG = "publications"
#: the log's columns (PostgreSQL types); ``seq`` orders it, ``target_table`` says which release table a
#: row is about (one database may hold several release tables, all logged in one table)
LOG_TYPES = {"bigint": "bigint", "varchar": "text"}
#: a release table name: plain (the rename into place takes no schema), short enough for the temporary
#: "<name>__incoming_<12 hex>" to stay within PostgreSQL's 63 characters, and not the log's
TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


class TableNameRefused(OwnMessage, ValueError):
    """A release table name PostgreSQL publication cannot use (one line, shown as it is)."""


def check_table(table: str) -> str:
    if not TABLE_NAME.fullmatch(table) or table.lower() == LOG:
        raise TableNameRefused(
            "a PostgreSQL release table is a plain name of letters, digits and underscores (at most 40, "
            f"not {LOG!r}); its schema is the connection's search_path"
        )
    return table


def _lock(cur: Any) -> None:
    """One transaction-scoped lock per database: publishers of every release table share the log."""
    key = int.from_bytes(hashlib.sha256(b"dagster_privacy:publications").digest()[:8], "big", signed=True)
    cur.execute(f"select pg_advisory_xact_lock({key})")  # an int we computed: no text from outside
    cur.fetchall()


def _ensure_log(cur: Any, columns: tuple[tuple[str, str], ...]) -> None:
    cols = ", ".join(f"{quote_ident(c)} {LOG_TYPES[t]}" for c, t in columns)
    seq = "seq bigint generated always as identity primary key, target_table text not null"
    cur.execute(f"create table if not exists {LOG} ({seq}, {cols})")
    for name, typ in columns:  # older logs gain the newer columns
        cur.execute(f"alter table {LOG} add column if not exists {quote_ident(name)} {LOG_TYPES[typ]}")


def _exists(cur: Any, name: str) -> bool:
    cur.execute("select to_regclass($1) is not null", (quote_ident(name),))
    return bool(cur.fetchall()[0][0])


def _log(cur: Any, columns: tuple[tuple[str, str], ...], table: str) -> list[dict[str, Any]]:
    """The log rows of one release table, oldest first."""
    if not _exists(cur, LOG):
        return []
    cur.execute(
        "select column_name from information_schema.columns where table_name = $1 and "
        "table_schema = current_schema()",
        (LOG,),
    )
    have = {r[0] for r in cur.fetchall()}
    cols = [c for c, _ in columns if c in have]
    cur.execute(
        f"select {', '.join(quote_ident(c) for c in cols)} from {LOG} where target_table = $1 order by seq",
        (table,),
    )
    rows = cur.fetchall()
    return [{**dict.fromkeys(c for c, _ in columns), **dict(zip(cols, r, strict=True))} for r in rows]


def _insert(cur: Any, info: dict[str, Any], columns: tuple[tuple[str, str], ...], table: str) -> None:
    names = [c for c, _ in columns]
    marks = ", ".join(f"${i + 2}" for i in range(len(names)))
    cur.execute(
        f"insert into {LOG} (target_table, {', '.join(quote_ident(c) for c in names)}) values ($1, {marks})",
        (table, *(info.get(c) for c in names)),
    )


def _held(
    cur: Any, table: str, columns: tuple[tuple[str, str], ...], *, table_too: bool = True
) -> tuple[pl.DataFrame | None, list[dict[str, Any]]]:
    log = _log(cur, columns, table)
    if not table_too or not _exists(cur, table):
        return None, log
    cur.execute(f"select * from {quote_ident(table)}")
    return pl.from_arrow(cur.fetch_arrow_table()), log  # type: ignore[return-value]


@contextmanager
def _locked(uri: str, table: str, columns: tuple[tuple[str, str], ...]) -> Iterator[Any]:
    """One transaction holding the database's publication lock, with the log in place; committed when
    the body returns (postgres.transaction)."""
    check_table(table)
    with postgres.transaction(uri, read_only=False) as cur:
        _lock(cur)
        _ensure_log(cur, columns)
        yield cur


def publish(
    uri: str,
    table: str,
    df: pl.DataFrame,
    info: Callable[[], dict[str, Any]],
    columns: tuple[tuple[str, str], ...],
    check: Callable[[bool, list[dict[str, Any]]], None],
) -> str:
    """Replace the release table by ``df`` and append ``info()`` (called under the lock) to the log,
    in one transaction; ``check(table exists, log)`` runs first, under the lock, and may refuse."""
    with _locked(uri, table, columns) as cur:
        check(_exists(cur, table), _log(cur, columns, table))
        incoming = f"{table}__incoming_{uuid.uuid4().hex[:12]}"
        cur.adbc_ingest(incoming, df.to_arrow(), mode="create")
        cur.execute(f"drop table if exists {quote_ident(table)}")
        cur.execute(f"alter table {quote_ident(incoming)} rename to {quote_ident(table)}")
        _insert(cur, info(), columns, table)
    return f"{postgres.describe(uri)} table {table}"


def read_state(
    uri: str, table: str, columns: tuple[tuple[str, str], ...], *, table_too: bool = True
) -> tuple[pl.DataFrame | None, list[dict[str, Any]]]:
    """(the release table or None, the log) from one consistent snapshot (``table_too=False``: the log
    only)."""
    check_table(table)
    with postgres.transaction(uri) as cur:
        cur.execute("set transaction isolation level repeatable read")
        return _held(cur, table, columns, table_too=table_too)


def withdraw(
    uri: str,
    table: str,
    check: Callable[[pl.DataFrame | None, list[dict[str, Any]]], dict[str, Any]],
    columns: tuple[tuple[str, str], ...],
) -> dict[str, Any]:
    """Under the lock: ``check(table, log)`` returns the log row (or raises), then the release table is
    dropped and the row appended, in one transaction."""
    with _locked(uri, table, columns) as cur:
        info = check(*_held(cur, table, columns))
        cur.execute(f"drop table if exists {quote_ident(table)}")
        _insert(cur, info, columns, table)
    return info


class PostgresStore:
    """A PostgreSQL database (``postgresql://…``): the release table and the log, one transaction each."""

    kind = "postgresql"

    def __init__(self, path: str, table: str) -> None:
        self.path, self.table = path, table

    def publish(
        self, df: pl.DataFrame, release_id: str, check: PublishCheck, entry: Callable[[], dict[str, Any]]
    ) -> str:
        return publish(self.path, self.table, df, entry, LOG_COLUMNS, check)

    def state(self) -> tuple[pl.DataFrame | None, Log]:
        return read_state(self.path, self.table, LOG_COLUMNS)

    def withdraw(
        self, release_id: str, check: WithdrawCheck, *, by: str, reason: str, record: Any
    ) -> dict[str, Any]:
        return withdraw(self.path, self.table, check, LOG_COLUMNS)

    def log(self) -> Log:
        return read_state(self.path, self.table, LOG_COLUMNS, table_too=False)[1]
