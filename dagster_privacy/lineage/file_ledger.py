"""A ledger in a DuckDB file of its own (``*.duckdb``, never a data file), locked with ``flock`` on
``<ledger>.lock``; its keys in ``<ledger>.keys/`` beside it."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .ledger import COLUMNS, GENESIS, NAMES, TABLE, Ledger
from .names import LineageError, key_folder

#: how often a ledger another process holds a moment is tried again before it is refused
TRIES = 40


class FileLedger(Ledger):
    """The ledger as a DuckDB file; every read and write is one connection, opened and closed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.suffix.lower() != ".duckdb":
            raise LineageError(
                f"the ledger is a DuckDB file (*.duckdb) or a postgresql:// URI, not {self.path.name}"
            )
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise LineageError(f"the ledger {self.path} is not a regular file")
        if not self.path.parent.is_dir():
            raise LineageError(f"the ledger's folder {self.path.parent} does not exist")
        self.keys, self.where = key_folder(self.path), str(self.path)
        self.location = self.where

    @contextmanager
    def locked(self) -> Iterator[None]:
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:  # a link planted at its name, a folder we cannot write
            raise LineageError(f"the ledger's lock {lock} cannot be opened ({type(exc).__name__})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock, also when the process is killed

    def _no_links(self) -> None:
        """DuckDB writes ``<ledger>.wal`` (and ``.tmp``) beside the file: a link planted there would be
        written through."""
        for suffix in (".wal", ".tmp"):
            side = self.path.with_name(self.path.name + suffix)
            planted = side.is_symlink() or (side.exists() and not (side.is_file() or side.is_dir()))
            if planted or (side.is_file() and side.stat().st_nlink > 1):  # a hard link: another file's data
                raise LineageError(f"{side} is a link or not a regular file: remove it")

    @contextmanager
    def _connect(self, *, read_only: bool) -> Iterator[Any]:
        import duckdb

        self._no_links()
        con = self._open(read_only)
        try:
            self._check_tables(con)
            yield con
        except duckdb.Error as exc:  # a table of another shape under the ledger's name
            raise LineageError(f"the ledger {self.path} cannot be read ({type(exc).__name__})") from None
        finally:
            con.close()

    def _open(self, read_only: bool) -> Any:
        import duckdb

        delay = 0.05
        for i in range(TRIES):  # a reader elsewhere (lineage show) holds the file a moment
            try:
                return duckdb.connect(str(self.path), read_only=read_only)
            except (duckdb.IOException, duckdb.ConnectionException) as exc:
                if "lock" not in str(exc).lower():  # not a database, truncated: no wait makes it one
                    raise LineageError(
                        f"the ledger {self.path} cannot be opened ({type(exc).__name__})"
                    ) from None
                if i == TRIES - 1:
                    raise LineageError(f"the ledger {self.path} is locked: {type(exc).__name__}") from None
                time.sleep(delay)
                delay = min(2 * delay, 1.0)
            except duckdb.Error as exc:
                raise LineageError(
                    f"the ledger {self.path} cannot be opened ({type(exc).__name__})"
                ) from None
        raise AssertionError("unreachable")

    def _check_tables(self, con: Any) -> None:
        others = con.execute(
            "select count(*) from information_schema.tables where table_name <> ?", [TABLE]
        ).fetchall()[0][0]
        if others:
            raise LineageError(
                f"{self.path} holds {others} table(s) besides the ledger's: the ledger lives in a file of "
                "its own, never beside the data"
            )

    @staticmethod
    def _has_table(con: Any) -> bool:
        found = con.execute(
            "select count(*) from information_schema.tables where table_name = ?", [TABLE]
        ).fetchall()
        return bool(found[0][0])

    def _rows(self, lineage: str) -> list[tuple[Any, ...]]:
        if not self.path.is_file():
            return []
        with self._connect(read_only=True) as con:
            if not self._has_table(con):
                return []
            cols = ", ".join(f'"{c}"' for c in NAMES)
            return list(
                con.execute(
                    f"select {cols} from {TABLE} where lineage = ? order by seq", [lineage]
                ).fetchall()
            )

    def _lineage_names(self) -> list[str]:
        if not self.path.is_file():
            return []
        with self._connect(read_only=True) as con:
            if not self._has_table(con):
                return []
            return [
                str(r[0]) for r in con.execute(f"select distinct lineage from {TABLE} order by 1").fetchall()
            ]

    def _append_row(self, lineage: str, build: Callable[[int, str], dict[str, Any]]) -> dict[str, Any]:
        with self._connect(read_only=False) as con:
            con.execute(
                f"create table if not exists {TABLE} ("
                + ", ".join(f'"{c}" {t}' for c, t in COLUMNS)
                + ", primary key (lineage, seq))"
            ).fetchall()
            last = con.execute(
                f"select seq, row_hash from {TABLE} where lineage = ? order by seq desc limit 1", [lineage]
            ).fetchall()
            row = build(*((int(last[0][0]) + 1, str(last[0][1])) if last else (1, GENESIS)))
            con.execute(
                f"insert into {TABLE} values (" + ", ".join("?" * len(NAMES)) + ")", [row[k] for k in NAMES]
            ).fetchall()
        return row


__all__ = ["FileLedger"]
