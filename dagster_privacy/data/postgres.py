"""PostgreSQL as a table source, through the ADBC PostgreSQL driver (Arrow out, no row-by-row Python).

``postgresql://[user@]host[:port]/database?table=NAME`` (or ``?query=SELECT …``) names a table like a
file path does; the Dagster resource ``PostgresTables`` reads table names or queries on one connection
URI. Each read is one connection, one ``READ ONLY`` transaction, exactly one SELECT (checked here, and a
prepared statement holds one command on the server too), rolled back and closed; the Arrow table goes
to polars like every other input.

Why ADBC and not DuckDB's ``postgres`` extension: the installable extension packages are built for
DuckDB 1.4 and this project runs DuckDB 2.0, so the extension does not load here (and our DuckDB
connections keep extensions off: sql.py). Passwords: keep them out of the URI (libpq reads
``PGPASSWORD`` or ``~/.pgpass``); messages name a source by scheme, host, port, database and table only.
READ ONLY stops writes, not the administrative functions a SELECT may call: connect as a role that can
only read, with a ``statement_timeout`` (docs/pipeline.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

import polars as pl

from ..errors import OwnMessage, TableError, safe_reason
from .sql import one_select

SCHEMES = ("postgresql", "postgres")
#: what to install when the driver is missing
DRIVER = "adbc-driver-postgresql (pip install 'dagster-privacy[postgres]')"


def is_postgres(text: str) -> bool:
    """Whether ``text`` is a ``postgresql:`` (or ``postgres:``) URI; read from the scheme alone, so a URI
    that does not parse further is still one (and refused as such where it is used)."""
    if not isinstance(text, str):
        return False
    scheme, sep, _ = text.strip().partition(":")
    return bool(sep) and scheme.lower() in SCHEMES


def split(uri: str) -> tuple[str, str | None]:
    """(the connection URI without our ``table`` / ``query`` parameters, the table name or query)."""
    try:
        parts = urlsplit(uri.strip())
        parts.port  # noqa: B018  (a port that is no number raises here, not inside a library)
    except ValueError:
        raise TableError("the PostgreSQL URI does not parse (host, port or brackets)") from None
    # parsed as a URI (RFC 3986), not as form data: '+' stays '+' (`select age+fnlwgt` was read as
    # `select age fnlwgt`), the other parameters pass through as written (re-encoding broke
    # `options=-c%20statement_timeout%3D5000`), and the text is cut, not rebuilt (rebuilding mangled
    # `postgresql:///db?host=/socket`)
    base, _, query = uri.strip().partition("?")
    query, hash_, fragment = query.partition("#")
    ours: list[str] = []
    rest: list[str] = []
    for item in query.split("&") if query else []:
        key = unquote(item.partition("=")[0])
        (ours if key in ("table", "query") else rest).append(item)
    if len(ours) > 1:
        raise TableError("a PostgreSQL source takes one table= or one query=")
    own = unquote(ours[0].partition("=")[2]) if ours else None
    conn = base + ("?" + "&".join(rest) if rest else "") + (hash_ + fragment)
    return conn, own


def describe(uri: str, source: str | None = None) -> str:
    """How a PostgreSQL source is named in a message: no user, no password, a query only by length."""
    try:
        conn, own = split(uri) if is_postgres(uri) else (uri, None)
        p = urlsplit(conn)
        port = f":{p.port}" if p.port else ""
    except (TableError, ValueError):
        return "postgresql:// URI that does not parse"
    where = f"{p.scheme}://{p.hostname or ''}{port}{p.path}"
    what = source if source is not None else own
    if what is None:
        return where
    return f"{where} query ({len(what)} characters)" if _is_query(what) else f"{where} table {what}"


#: a (schema-qualified) table name; anything else is read as a query
_TABLE_NAME = re.compile(r'\s*([A-Za-z_][\w$]*|"(?:[^"]|"")+")(\.([A-Za-z_][\w$]*|"(?:[^"]|"")+"))?\s*')


def _is_query(text: str) -> bool:
    return _TABLE_NAME.fullmatch(text) is None


def _parts(name: str) -> list[str]:
    """The parts of a (schema-qualified, possibly quoted) table name."""
    m = _TABLE_NAME.fullmatch(name)
    assert m is not None
    return [m.group(1)] + ([m.group(3)] if m.group(3) else [])


def connect(uri: str, *, autocommit: bool = False) -> Any:
    """An ADBC DB-API connection (the caller closes it); a missing driver is a one-line TableError."""
    try:
        import adbc_driver_postgresql.dbapi as pg
    except ImportError:
        raise TableError(f"reading or writing PostgreSQL needs the package {DRIVER}") from None
    return pg.connect(uri, autocommit=autocommit)


@contextmanager
def transaction(uri: str, *, read_only: bool = True) -> Iterator[Any]:
    """A cursor in one transaction on one connection, closed afterwards: ``read_only`` sets the
    transaction READ ONLY and rolls it back; otherwise it commits when the body returns (an exception,
    or a killed process, leaves PostgreSQL to roll it back)."""
    con = connect(split(uri)[0])
    try:
        with con.cursor() as cur:
            if read_only:
                cur.execute("set transaction read only")
            # the syntax the one-SELECT check parses with, whatever a URI's options= set: a backslash
            # in a literal is a character, never an escape that could end the literal early
            cur.execute("set local standard_conforming_strings = on")
            yield cur
        if read_only:
            con.rollback()
        else:
            con.commit()
    finally:
        con.close()


def select_of(source: str) -> str:
    """The one SELECT that reads ``source``: a query (checked) or a (schema-qualified) table name."""
    source = source.strip()
    if not source:
        raise TableError("empty table source: give a table name or a query")
    if _is_query(source):
        return one_select(source)
    # a quoted part stays as written (it may hold dots or doubled quotes); a bare one is quoted as is
    parts = [p if p.startswith('"') else '"' + p + '"' for p in _parts(source)]
    return f"select * from {'.'.join(parts)}"


def read(uri: str, source: str | None = None, *, role: str = "input") -> pl.DataFrame:
    """One table or query of the database at ``uri`` as a polars frame, read in a READ ONLY
    transaction. ``source`` defaults to the URI's ``table=`` / ``query=``. Failures are one line naming
    the source (never the password, a query's text or a value)."""
    failure = None
    try:
        what = source if source is not None else split(uri)[1]
        if what is None:
            raise TableError(f"{role} table: give the PostgreSQL table as {describe(uri)}?table=NAME")
        sql = select_of(what)
        with transaction(uri) as cur:
            cur.execute(sql)
            table = cur.fetch_arrow_table()
        return pl.from_arrow(_arrow_types(table, role))  # type: ignore[return-value]
    except TableError:
        raise
    except Exception as exc:  # libpq / ADBC messages quote the query and may quote values
        failure = f"cannot read the {role} table ({describe(uri, source)}): {safe_reason(exc)}"
    raise TableError(failure)  # outside the except block: no chained exception carries the original


def _arrow_types(table: Any, role: str) -> Any:
    """PostgreSQL types Arrow has no type for, made readable: ``numeric`` (an opaque string) as float64;
    another opaque type as its text; an ``interval`` is refused with the column's name."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for field, col in zip(table.schema, table.columns, strict=True):
        meta = field.metadata or {}
        kind = meta.get(b"POSTGRESQL:type", b"").decode(errors="replace")
        if isinstance(field.type, pa.BaseExtensionType):
            col = pa.chunked_array([c.storage for c in col.chunks], type=field.type.storage_type)
            if kind == "numeric":
                col = pc.cast(col, pa.float64())
        elif pa.types.is_interval(field.type):
            raise TableError(
                f"column {field.name!r} of the {role} table is a PostgreSQL interval: select it as a number "
                "(extract(epoch from ...)) in a query"
            )
        columns.append(col)
    return pa.table(columns, names=table.column_names)


def identity(uri: str) -> tuple[str, ...]:
    """What the server says the database at ``uri`` is: (database, port setting, postmaster start time,
    cluster system identifier). Asked, not parsed, and none of it depends on the route: ``localhost``,
    ``127.0.0.1``, a Unix socket, ``?dbname=`` and percent-encoding all name one database, which comparing
    URIs as text would miss (``inet_server_port()`` is NULL over a socket: never used). An element the
    server does not give (NULL) cannot be compared: refused (:class:`~.errors.OwnMessage`)."""
    with transaction(uri) as cur:
        cur.execute(
            "select current_database(), current_setting('port'), pg_postmaster_start_time()::text, "
            "(pg_control_system()).system_identifier::text"
        )
        row = tuple(cur.fetchall()[0])
    if any(v is None or str(v) == "" for v in row):
        raise IdentityUnknown("the server does not say which database this is (a NULL identity element)")
    return tuple(str(v) for v in row)


class IdentityUnknown(OwnMessage):
    """The server gave no complete identity for a database: it cannot be compared, so it is refused."""


def same_database(a: str, b: str) -> bool:
    """Whether two PostgreSQL URIs may reach the same data: the same database name in a cluster of the
    same system identifier. Port and start time are not compared: a streaming replica shares its
    primary's system identifier and data under another port (a clone of a cluster is refused too)."""
    ia, ib = identity(a), identity(b)
    return (ia[0], ia[3]) == (ib[0], ib[3])


def replace_tables(uri: str, tables: dict[str, pl.DataFrame]) -> None:
    """Create or replace tables in the database at ``uri``, all in one transaction (demo and tests:
    the product itself only reads PostgreSQL sources)."""
    with transaction(uri, read_only=False) as cur:
        for name, df in tables.items():
            cur.adbc_ingest(name, df.to_arrow(), mode="replace")
