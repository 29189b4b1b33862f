"""The one guard every writer passes: what the product writes (a publication, the audit table) never lands
on an input, whatever the spelling of its path or URI.

Inputs are located by facts that do not depend on the route to them: files by their resolved path and
``os.stat`` identity (a symlink, a relative path, ``..`` or a hard link name one file), a query's files
from DuckDB's parse tree (globs expanded; the folder a glob searches counts as an input as a whole:
a release written there would be read as real data by the next run), and PostgreSQL databases by what
the server says they are (``postgres.identity``). What cannot be compared is refused.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ...data import postgres
from ...data.loading import _DUCKDB_SOURCE, is_sql
from ...data.sql import files_named
from ...errors import OwnMessage, safe_reason

_GLOB = frozenset("*?[")


class InputOverwrite(OwnMessage):
    """A write whose destination is (or holds, or is searched by) an input: refused before writing."""


@dataclass(frozen=True)
class InputLocations:
    """Where the inputs of one evaluation live."""

    files: tuple[Path, ...] = ()  # resolved files the inputs read
    searched: tuple[Path, ...] = ()  # folders a glob or a folder source searches (resolved)
    databases: tuple[str, ...] = field(default=())  # PostgreSQL URIs


#: URI schemes DuckDB reads remotely (never a local target); any other ``x://`` is a local path to it
_REMOTE = ("s3://", "s3a://", "s3n://", "gcs://", "gs://", "r2://", "http://", "https://", "hf://", "az://",
           "azure://", "abfss://")  # fmt: skip


def _local(text: str) -> str:
    """A path or ``file://`` URI as the local path DuckDB reads (``file://localhost/a`` is ``/a``)."""
    low = text.lower()
    if low.startswith("file://localhost/"):
        return text[len("file://localhost") :]
    return text[len("file://") :] if low.startswith("file://") else text


def resolved(text: str) -> Path:
    """A path as DuckDB and publication read it: ``file://`` dropped, ``~`` expanded, symlinks resolved."""
    return Path(os.path.realpath(os.path.expanduser(_local(text))))


def _add_path(text: str, files: list[Path], searched: list[Path]) -> None:
    if text.lower().startswith(_REMOTE):
        return
    expanded = os.path.expanduser(_local(text))
    if any(c in expanded for c in _GLOB):
        parts = Path(expanded).parts
        static = next((i for i, p in enumerate(parts) if any(c in p for c in _GLOB)), len(parts))
        searched.append(Path(os.path.realpath(Path(*parts[:static]) if static else ".")))
        files.extend(Path(os.path.realpath(m)) for m in glob.glob(expanded, recursive=True))
    elif os.path.isdir(expanded):
        searched.append(Path(os.path.realpath(expanded)))
    else:
        files.append(Path(os.path.realpath(expanded)))


def locate(database: str | None, sources: Iterable[str | None]) -> InputLocations:
    """The inputs of ``sources`` (paths, ``FILE.duckdb:TABLE``, SQL, table names in ``database``, or
    PostgreSQL URIs) and of ``database`` itself. A query whose files cannot be told from its text raises
    :class:`~dagster_privacy.data.sql.FilesUnknown` (the caller refuses to write)."""
    files: list[Path] = []
    searched: list[Path] = []
    databases: list[str] = []
    server = bool(database) and postgres.is_postgres(database or "")
    if database:
        if server:
            databases.append(database)
        else:
            _add_path(database, files, searched)
    for source in sources:
        if not source or not isinstance(source, str):
            continue
        if postgres.is_postgres(source):
            databases.append(source)
            continue
        if server:  # a table or a query the server runs: its files are the server's, not ours
            continue
        m = (
            None if is_sql(source) else _DUCKDB_SOURCE.match(source)
        )  # SQL first: a comment may hold ".duckdb:"
        if m:
            _add_path(m.group(1), files, searched)
            source = m.group(2)
            if not is_sql(source):
                continue
        if is_sql(source):
            for named in files_named(source):
                _add_path(named, files, searched)
        elif not database:  # a file path (a table name inside ``database`` is no file)
            _add_path(source, files, searched)
    return InputLocations(tuple(files), tuple(searched), tuple(databases))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): the resolved paths decide
        return a == b


def refuse_inputs(target: str, inputs: InputLocations, *, what: str = "publication target") -> None:
    """Raise :class:`InputOverwrite` (one line naming the input) if ``target`` is an input, holds one,
    or lies in a folder an input searches; PostgreSQL: if it is an input's database, or cannot be
    compared with one."""
    if postgres.is_postgres(target):
        for db in inputs.databases:
            try:
                same = postgres.same_database(target, db)
            except Exception as exc:  # fail closed: what we cannot compare we do not write to
                raise InputOverwrite(
                    f"cannot tell whether the {what} is the database holding the real data "
                    f"({postgres.describe(db)}): {safe_reason(exc)}"
                ) from None
            if same:
                raise InputOverwrite(
                    f"the {what} is the database holding the real data ({postgres.describe(db)}); "
                    "publish to a separate database"
                )
        return
    t = resolved(target)
    for f in inputs.files:
        if _same_file(f, t):
            raise InputOverwrite(
                f"the {what} {target} is the input {f}: it would overwrite it; write elsewhere"
            )
        if f.is_relative_to(t):
            raise InputOverwrite(f"the {what} {target} holds the input {f}; write to a folder of its own")
        if t.is_relative_to(f):  # an input folder that does not exist yet: the target would be in it
            raise InputOverwrite(f"the {what} {target} is inside the input {f}; write elsewhere")
    for d in inputs.searched:
        if t.is_relative_to(d) or d.is_relative_to(t):
            raise InputOverwrite(
                f"the {what} {target} is inside {d}, which an input reads by a glob or as a folder: the "
                "next run would read what is written there as input; write outside it"
            )


__all__ = ["InputLocations", "InputOverwrite", "locate", "refuse_inputs"]
