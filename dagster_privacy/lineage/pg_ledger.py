"""A ledger in a PostgreSQL database: the table ``lineage_ledger`` as the connection's search_path finds
it (made in its current schema at the first recording), beside the ``publications`` log when the
pipeline publishes to that database (issue 56).

The lock is a session-level advisory lock (``pg_advisory_lock``) on a connection of its own, held while
a candidate is judged and reserved: the server releases it when the holder commits, fails or is killed
(its connection drops). Each read is one READ ONLY transaction, each append one transaction that reads
the lineage's last row and inserts the next (the primary key (lineage, seq) refuses a second row at the
same place, lock or no lock). The keys and kept heads stay on this machine, in a folder named by the
database's identity (its name and the cluster's system identifier: a socket and a TCP route to one
database share it), never in the database: whoever can read the ledger cannot invert its names.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..data import postgres
from ..data.sql import quote_ident
from ..errors import OwnMessage, safe_reason
from .ledger import COLUMNS, GENESIS, NAMES, TABLE, Ledger
from .names import LineageError

#: the advisory lock's key: one per database, computed here (no text from outside reaches the SQL)
LOCK_KEY = int.from_bytes(hashlib.sha256(b"dagster_privacy:lineage_ledger").digest()[:8], "big", signed=True)
#: how long a recording waits for another to finish before it is refused
LOCK_WAIT_SECONDS = 300


def _password_parameter(conn: str) -> bool:
    """Whether the URI's parameters carry a password (``?password=``, however it is spelt)."""
    query = conn.partition("?")[2].partition("#")[0]
    return any(unquote(item.partition("=")[0]).strip().lower() == "password" for item in query.split("&"))


def default_home() -> Path:
    """Where a database ledger's keys folder lives when none is given: as the pipeline keeps it without
    an instance (``$DAGSTER_HOME/dagster_privacy``, else ``~/.dagster_privacy``)."""
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) / "dagster_privacy" if home else Path.home() / ".dagster_privacy"


class PostgresLedger(Ledger):
    """The ledger as the table ``lineage_ledger`` of the database at ``uri`` (no password in the URI:
    PGPASSWORD or ~/.pgpass); its keys in ``<home>/postgres-<database identity>.keys``."""

    def __init__(self, uri: str, *, home: Path | None = None) -> None:
        try:
            conn, own = postgres.split(uri)
            password = urlsplit(conn).password
        except (OwnMessage, ValueError):
            raise LineageError("the ledger's postgresql:// URI does not parse") from None
        if own is not None:
            raise LineageError("a ledger URI names a database only: its table is lineage_ledger (no table=)")
        if password or _password_parameter(conn):
            raise LineageError("keep the password out of the ledger's URI (PGPASSWORD or ~/.pgpass)")
        self.uri = self.location = conn
        self.where = f"{postgres.describe(conn)} table {TABLE}"
        try:
            ident = postgres.identity(conn)
        except Exception as exc:  # noqa: BLE001 (a server down, a refused role: one line, no value)
            raise LineageError(f"the ledger {self.where} cannot be reached: {safe_reason(exc)}") from None
        # named as the server says it is (a URI's host= or dbname= parameters may say otherwise)
        self.where = f"PostgreSQL database {ident[0]} (port {ident[1]}) table {TABLE}"
        stem = hashlib.sha256(f"{ident[0]}\0{ident[3]}".encode()).hexdigest()[:16]
        self.keys = (home or default_home()) / f"postgres-{stem}.keys"

    @contextmanager
    def _cursor(self, *, read_only: bool) -> Iterator[Any]:
        try:
            with postgres.transaction(self.uri, read_only=read_only) as cur:
                yield cur
        except LineageError:
            raise
        except Exception as exc:  # noqa: BLE001 (libpq messages may quote what a row holds)
            what = "read" if read_only else "written"
            failure = f"the ledger {self.where} cannot be {what}: {safe_reason(exc)}"
        else:
            return
        raise LineageError(failure)  # outside the except block: no chained exception carries the original

    @contextmanager
    def locked(self) -> Iterator[None]:
        try:  # a write follows: the folder that holds the keys folder (the instance's) is made
            self.keys.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LineageError(f"{self.keys.parent} cannot be made ({type(exc).__name__})") from None
        con = None
        try:
            con = postgres.connect(self.uri, autocommit=True)
            cur = con.cursor()
            cur.execute(f"set lock_timeout = '{LOCK_WAIT_SECONDS}s'")  # a holder that never lets go: refused
            cur.execute(f"select pg_advisory_lock({LOCK_KEY})")
            cur.fetchall()
        except Exception as exc:  # noqa: BLE001
            if con is not None:
                con.close()
            raise LineageError(f"the ledger {self.where} cannot be locked: {safe_reason(exc)}") from None
        try:
            yield
        finally:
            con.close()  # the session ends: the server releases its advisory lock

    def _table(self, cur: Any) -> str | None:
        """The ledger table, schema-qualified, as the connection's search_path finds it (whatever the
        role may read: a table it cannot read is refused on reading, not taken for none); None when
        there is none. A view, a temporary table or a table of another shape is refused."""
        cur.execute(
            "select n.nspname, c.relkind, n.oid = pg_my_temp_schema() from pg_class c join pg_namespace n "
            "on n.oid = c.relnamespace where c.oid = to_regclass($1)",
            (TABLE,),
        )
        found = cur.fetchall()
        if not found:
            return None
        schema, kind, temporary = found[0]
        if kind not in ("r", "p") or temporary:
            raise LineageError(f"{self.where} is a view or a temporary table: not a ledger this product made")
        cur.execute(
            "select attname from pg_attribute where attrelid = to_regclass($1) and attnum > 0 and "
            "not attisdropped order by attnum",
            (TABLE,),
        )
        if tuple(r[0] for r in cur.fetchall()) != NAMES:
            raise LineageError(f"{self.where} is a table of another shape: not a ledger this product wrote")
        return f"{quote_ident(str(schema))}.{TABLE}"

    def _created(self, cur: Any) -> str:
        """The ledger table made in the connection's schema (never a temporary one)."""
        cur.execute("select current_schema(), current_schema() like 'pg\\_temp%'")
        schema, temporary = cur.fetchall()[0]
        if schema is None or temporary:
            raise LineageError(f"{self.where}: the connection has no schema for the ledger (search_path)")
        name = f"{quote_ident(str(schema))}.{TABLE}"
        cols = ", ".join(f'"{c}" {t}' for c, t in COLUMNS)
        cur.execute(f"create table {name} ({cols}, primary key (lineage, seq))")
        return name

    def _rows(self, lineage: str) -> list[tuple[Any, ...]]:
        with self._cursor(read_only=True) as cur:
            table = self._table(cur)
            if table is None:
                return []
            cols = ", ".join(f'"{c}"' for c in NAMES)
            cur.execute(f"select {cols} from {table} where lineage = $1 order by seq", (lineage,))
            return [tuple(r) for r in cur.fetchall()]

    def _lineage_names(self) -> list[str]:
        with self._cursor(read_only=True) as cur:
            table = self._table(cur)
            if table is None:
                return []
            cur.execute(f"select distinct lineage from {table} order by 1")
            return [str(r[0]) for r in cur.fetchall()]

    def _append_row(self, lineage: str, build: Callable[[int, str], dict[str, Any]]) -> dict[str, Any]:
        with self._cursor(read_only=False) as cur:
            table = self._table(cur) or self._created(cur)
            cur.execute(
                f"select seq, row_hash from {table} where lineage = $1 order by seq desc limit 1", (lineage,)
            )
            last = cur.fetchall()
            row = build(*((int(last[0][0]) + 1, str(last[0][1])) if last else (1, GENESIS)))
            marks = ", ".join(f"${i + 1}" for i in range(len(NAMES)))
            cur.execute(
                f"insert into {table} values ({marks}) returning seq, row_hash", tuple(row[k] for k in NAMES)
            )
            if [tuple(r) for r in cur.fetchall()] != [(row["seq"], row["row_hash"])]:  # a trigger, a rule
                raise LineageError(f"{self.where} did not keep the row it was given: not recorded")
        return row


__all__ = ["PostgresLedger", "default_home"]
