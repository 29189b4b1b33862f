"""A DuckDB file as a publication target: its next state written beside it, and the mark that says a
publication wrote it (issue 44, break 4: the warehouse file holding the real table was rewritten)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from ...data.sql import quote_ident
from .store import LOG, LOG_COLUMNS, FileStore, Log, PublicationRefused, PublishCheck, WithdrawCheck, locked

#: the table that marks a file publication wrote (as Parquet targets carry their metadata key)
MARK = "dagster_privacy_target"
MARK_FORMAT = "dagster-privacy/target/1"


def tables_of(path: Path) -> set[str]:
    """The file's tables (lower-cased, schema-qualified when not in main), read-only."""
    from ...data.sql import locked_connection

    con = locked_connection(str(path))  # read-only, no extension loads (a non-DuckDB file)
    try:
        rows = con.execute("select table_schema, table_name from information_schema.tables").fetchall()
    finally:
        con.close()
    return {(n if s == "main" else f"{s}.{n}").lower() for s, n in rows}


def unmarked(path: Path, table: str, log: str) -> str | None:
    """Why an existing target file must not be written (None: it may). It must carry the mark, or be one
    an earlier version wrote: its only tables the release table and a publication log (which the log
    check then accounts for). Anything else — the warehouse file that holds the real table — is refused
    before it is touched."""
    if not path.exists():
        return None
    try:
        found = tables_of(path)
    except Exception:  # not a DuckDB file, or not readable: not ours either
        found = {"?"}
    if MARK in found:
        return None
    legacy = found and found <= {table.lower(), log.lower()} and log.lower() in found
    if legacy and _accounted(path, table, log, table.lower() in found):
        return None  # written by an earlier version (before the mark): it gains the mark on this write
    return (
        f"{path} exists and was not written by publication (no {MARK} table): it may hold other data, "
        "so it is never rewritten; publish to a new file"
    )


def _accounted(path: Path, table: str, log: str, has_table: bool) -> bool:
    """An unmarked file an earlier version wrote: its log is a publication log (release_id, sha256,
    published_at; every action publish or withdraw) and its last row accounts for the release table
    (a publication of that very content: its fingerprint). A foreign pair of tables named alike is not."""
    from ...data.sql import locked_connection
    from ...data.tables import fingerprint

    con = locked_connection(str(path))
    try:
        cols = {c.lower() for c in con.sql(f"select * from {quote_ident(log)} limit 0").pl().columns}
        if not {"release_id", "sha256", "published_at"} <= cols:
            return False
        action = "action" if "action" in cols else "'publish'"
        rows = con.execute(f"select sha256, {action} from {quote_ident(log)} order by rowid").fetchall()
        if not rows or any(a not in ("publish", "withdraw", None) for _, a in rows):
            return False
        last_sha, last_action = rows[-1]
        if not has_table:
            return last_action == "withdraw"
        held = con.sql(f"select * from {quote_ident(table)}").pl()
        return last_action in ("publish", None) and last_sha == fingerprint(held)
    except Exception:  # a table we cannot read as a log is not one
        return False
    finally:
        con.close()


def write(
    tmp: Path,
    target: Path,
    info: dict[str, Any],
    *,
    df: pl.DataFrame | None,
    table: str,
    log: str,
    columns: tuple[tuple[str, str], ...],
) -> None:
    """The target's next state in ``tmp``: the release table replaced by ``df`` (dropped when None: a
    withdrawal), one log row appended, and the mark."""
    import duckdb

    if target.exists():
        shutil.copyfile(target, tmp)  # keep the publications log and other tables
    elif tmp.is_file() and not tmp.is_symlink() and tmp.stat().st_size == 0:
        tmp.unlink()  # the empty placeholder atomic.py created under its random name: DuckDB makes its own
    con = duckdb.connect(str(tmp))
    try:
        if df is not None:
            con.register("release_frame", df.to_arrow())
            con.execute(f"create or replace table {quote_ident(table)} as select * from release_frame")
            con.unregister("release_frame")
        else:
            con.execute(f"drop table if exists {quote_ident(table)}")
        con.execute(f"create table if not exists {log} (release_id varchar)")
        for name, typ in columns:  # older logs gain the newer columns
            con.execute(f"alter table {log} add column if not exists {quote_ident(name)} {typ}")
        names = [c for c, _ in columns]
        con.execute(
            f"insert into {log} ({', '.join(quote_ident(c) for c in names)}) values "
            f"({', '.join('?' * len(names))})",
            [info.get(c) for c in names],
        ).fetchall()
        con.execute(f"create table if not exists {MARK} (format varchar)")
        if not con.execute(f"select count(*) from {MARK}").fetchall()[0][0]:
            con.execute(f"insert into {MARK} values (?)", [MARK_FORMAT]).fetchall()
        con.execute("checkpoint").fetchall()
    finally:
        con.close()


class DuckDBStore(FileStore):
    """A DuckDB file: the release table ``table`` beside the ``publications`` log and the mark, the
    whole file replaced at once under the folder's lock."""

    kind = "duckdb"

    def publish(
        self, df: pl.DataFrame, release_id: str, check: PublishCheck, entry: Callable[[], dict[str, Any]]
    ) -> str:
        target = self.real()

        def next_state(tmp: Path) -> None:
            write(tmp, target, entry(), df=df, table=self.table, log=LOG, columns=LOG_COLUMNS)

        with locked(self.lock_folder()[0]):
            why = unmarked(target, self.table, LOG)  # a warehouse file is not a target
            if why:
                raise PublicationRefused(why)
            check(self._has_table(), self.log())
            self.replace(target, next_state)
        return str(target)

    def _has_table(self) -> bool:
        """Whether the target file holds the release table now."""
        if not self.real().is_file():
            return False
        from ...data.sql import locked_connection

        con = locked_connection(str(self.real()))  # read-only, no extension loads (a non-DuckDB file)
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

    def state(self) -> tuple[pl.DataFrame | None, Log]:
        if not self.real().is_file():
            return None, []
        import duckdb

        log = self.log()
        con = duckdb.connect(str(self.real()), read_only=True)
        try:
            have = con.execute(
                "select count(*) from information_schema.tables where table_name = ?", [self.table]
            ).fetchall()[0][0]
            df = con.sql(f"select * from {quote_ident(self.table)}").pl() if have else None
        finally:
            con.close()
        return df, log

    def withdraw(
        self, release_id: str, check: WithdrawCheck, *, by: str, reason: str, record: Any
    ) -> dict[str, Any]:
        target = self.real()
        with locked(self.lock_folder()[0]):
            info = check(*self.state())
            self.replace(
                target,
                lambda tmp: write(tmp, target, info, df=None, table=self.table, log=LOG, columns=LOG_COLUMNS),
            )
        return info

    def log(self) -> Log:
        target = self.real()
        if not target.is_file():
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


__all__ = ["MARK", "DuckDBStore", "tables_of", "unmarked", "write"]
