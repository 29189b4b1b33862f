"""Read-only DuckDB: one ``SELECT`` on a locked connection — the only way the product runs SQL.

A connection opened ``read_only=True`` still lets ``COPY … TO`` write a file, ``ATTACH`` create a
database and ``INSTALL`` download an extension. So every input the product reads (a file, a
``FILE.duckdb:TABLE``, SQL text, the Dagster resource) goes through :func:`read_select`:

* the text must be exactly one statement of type SELECT (``duckdb.extract_statements``; a ``WITH``,
  ``FROM``, ``TABLE``, ``VALUES``, ``DESCRIBE`` or ``SUMMARIZE`` query is one too);
* the connection has extension autoload and autoinstall off, no temp directory, external access off
  except for the paths and directories the caller allows, and its configuration locked before the
  query runs. (Allowed paths could be written by ``COPY``: only the SELECT rule stops that.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import OwnMessage

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import polars as pl


class SqlRefused(OwnMessage, ValueError):
    """SQL the product will not run; the message names the statement kind, never the text."""


def _abs(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    return [os.path.abspath(os.fspath(p)) for p in paths]


def quote_ident(name: str) -> str:
    """A (possibly schema-qualified) table or column name quoted for DuckDB."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def locked_connection(
    database: str | None = None,
    *,
    allowed_paths: Sequence[str | os.PathLike[str]] = (),
    allowed_directories: Sequence[str | os.PathLike[str]] = (),
) -> duckdb.DuckDBPyConnection:
    """A connection that can read ``database`` (read-only) and the allowed files, and nothing else."""
    import duckdb

    con = duckdb.connect(
        database or ":memory:",
        read_only=bool(database),
        config={
            "autoload_known_extensions": False,
            "autoinstall_known_extensions": False,
            "temp_directory": "",
        },
    )  # else DuckDB adds its temp directory to the allowed
    try:
        if allowed_paths:
            con.execute("set allowed_paths = ?", [_abs(allowed_paths)])
        if allowed_directories:
            con.execute("set allowed_directories = ?", [_abs(allowed_directories)])
        con.execute("set enable_external_access = false")
        con.execute("set lock_configuration = true")
    except Exception:
        con.close()
        raise
    return con


def one_select(sql: str) -> str:
    """``sql`` if it is exactly one SELECT statement; else :class:`SqlRefused`."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except Exception:
        failure = "the SQL does not parse"
    else:
        failure = None
    if failure:
        raise SqlRefused(failure)  # outside the except block: DuckDB's message quotes the text
    if len(statements) != 1:
        raise SqlRefused(f"the SQL holds {len(statements)} statements; give exactly one SELECT")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise SqlRefused(f"only a SELECT query is read, not a statement of kind {kind.name}")
    return sql


def read_select(
    sql: str,
    *,
    database: str | None = None,
    allowed_paths: Sequence[str | os.PathLike[str]] = (),
    allowed_directories: Sequence[str | os.PathLike[str]] = (),
) -> pl.DataFrame:
    """Run one SELECT on a locked connection and return a polars frame (via Arrow). Raises
    :class:`SqlRefused` before running anything else; DuckDB's own errors propagate (callers turn
    them into a one-line message with :func:`~dagster_privacy.errors.safe_reason`)."""
    one_select(sql)
    con = locked_connection(database, allowed_paths=allowed_paths, allowed_directories=allowed_directories)
    try:
        return con.sql(sql).pl()
    finally:
        con.close()


__all__ = ["SqlRefused", "locked_connection", "one_select", "quote_ident", "read_select"]
