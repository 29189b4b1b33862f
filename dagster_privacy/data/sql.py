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
from typing import TYPE_CHECKING, Any

from ..errors import OwnMessage
from ..threads import thread_count

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
            "threads": thread_count(),  # the evaluation's count, not the machine's (threads.py)
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

    failure: str | None = None
    try:
        statements = duckdb.extract_statements(sql)
    except Exception:
        failure = "the SQL does not parse"
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


#: table functions that read no file (their arguments may be computed: ``unnest(t.tags)``)
_NO_FILES = frozenset(
    {"range", "generate_series", "unnest", "repeat", "repeat_row", "glob", "test_all_types"}
)
#: table functions whose files cannot be told from the text
_OPAQUE = frozenset({"json_execute_serialized_sql"})


class FilesUnknown(OwnMessage, ValueError):
    """The files a query reads cannot be determined from its text (a computed file name)."""


def files_named(sql: str) -> list[str]:  # noqa: C901
    """Every path ``sql`` may read, as written (globs unexpanded): the string constants among the
    positional arguments of its table functions (``read_parquet('a.parquet')``, lists of them) and the
    names of its tables (a replacement scan reads ``from 'a.csv'``). Found from DuckDB's parse tree, not
    by matching text. A table function's positional argument that is not a constant (a concatenation, a
    column) names files no one can know before running it: :class:`FilesUnknown`."""
    import json

    import duckdb

    con = duckdb.connect(":memory:")
    try:
        tree = json.loads(con.execute("select json_serialize_sql(?)", [one_select(sql)]).fetchall()[0][0])
    finally:
        con.close()
    if tree.get("error"):
        raise SqlRefused("the SQL does not parse")
    found: list[str] = []

    def constants(expr: Any, fn: str, into: list[str]) -> None:
        cls = expr.get("class")
        if cls == "CONSTANT":
            lit = expr.get("literal") or {}
            if lit.get("kind") in ("STRING", "VARCHAR"):
                into.append(str(lit.get("text", "")))
        elif cls == "FUNCTION" and expr.get("function_name") in ("list_value", "array_value"):
            for a in expr.get("arguments", []):
                constants(a.get("expression", a), fn, into)
        elif cls == "CAST":
            constants(expr.get("child", {}), fn, into)
        else:
            raise FilesUnknown(
                f"the files the query's table function {fn} reads are computed, not written: "
                "name them as constants"
            )

    def positional(fn: dict[str, Any]) -> list[Any]:
        out = []
        for a in fn.get("arguments", []):
            expr = a.get("expression", a)
            option = expr.get("type") == "COMPARE_EQUAL" and expr["left"].get("class") == "COLUMN_REF"
            if not a.get("name") and not option:  # positional: the files; named: header=…
                out.append(expr)
        return out

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "TABLE_FUNCTION":
                fn = node.get("function") or {}
                name = str(fn.get("function_name", "?")).lower()
                args: list[str] = []
                if name in _OPAQUE:
                    raise FilesUnknown(
                        f"the query's table function {name} runs SQL no one can read before it"
                    )
                if not (name in _NO_FILES or name.startswith(("duckdb_", "pragma_"))):
                    for expr in positional(fn):
                        constants(expr, name, args)
                if name == "query":  # SQL in a string: its own files
                    for text in args:
                        found.extend(files_named(text))
                else:
                    found.extend(args)
            elif node.get("type") == "BASE_TABLE":
                # a file DuckDB scans in place of a table; "a/b".parquet is schema "a/b", table "parquet"
                name = ".".join(
                    str(node[k]) for k in ("catalog_name", "schema_name", "table_name") if node.get(k)
                )
                if any(c in name for c in "./*?[:"):
                    found.append(name)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(tree["statements"])
    return found


__all__ = [
    "FilesUnknown",
    "SqlRefused",
    "files_named",
    "locked_connection",
    "one_select",
    "quote_ident",
    "read_select",
]
