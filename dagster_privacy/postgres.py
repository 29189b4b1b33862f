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
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import polars as pl

from .errors import TableError, safe_reason
from .sql import one_select, quote_ident

SCHEMES = ("postgresql", "postgres")
#: what to install when the driver is missing
DRIVER = "adbc-driver-postgresql (pip install 'dagster-privacy[postgres]')"


def is_postgres(text: str) -> bool:
    return isinstance(text, str) and urlsplit(text.strip()).scheme.lower() in SCHEMES


def split(uri: str) -> tuple[str, str | None]:
    """(the connection URI without our ``table`` / ``query`` parameters, the table name or query)."""
    parts = urlsplit(uri.strip())
    params = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in params if k in ("table", "query")}
    if len(ours) > 1:
        raise TableError("a PostgreSQL source takes table= or query=, not both")
    rest = urlencode([(k, v) for k, v in params if k not in ("table", "query")])
    return urlunsplit(parts._replace(query=rest)), next(iter(ours.values()), None)


def describe(uri: str, source: str | None = None) -> str:
    """How a PostgreSQL source is named in a message: no user, no password, a query only by length."""
    conn, own = split(uri) if is_postgres(uri) else (uri, None)
    p = urlsplit(conn)
    port = f":{p.port}" if p.port else ""
    where = f"{p.scheme}://{p.hostname or ''}{port}{p.path}"
    what = source if source is not None else own
    if what is None:
        return where
    return f"{where} query ({len(what)} characters)" if _is_query(what) else f"{where} table {what}"


#: a (schema-qualified) table name; anything else is read as a query
_TABLE_NAME = re.compile(r'\s*([A-Za-z_][\w$]*|"[^"]+")(\.([A-Za-z_][\w$]*|"[^"]+"))?\s*')


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


def select_of(source: str) -> str:
    """The one SELECT that reads ``source``: a query (checked) or a (schema-qualified) table name."""
    source = source.strip()
    if not source:
        raise TableError("empty table source: give a table name or a query")
    if _is_query(source):
        return one_select(source)
    return f"select * from {'.'.join(quote_ident(p.strip(chr(34))) for p in _parts(source))}"


def read(uri: str, source: str | None = None, *, role: str = "input") -> pl.DataFrame:
    """One table or query of the database at ``uri`` as a polars frame, read in a READ ONLY
    transaction. ``source`` defaults to the URI's ``table=`` / ``query=``. Failures are one line naming
    the source (never the password, a query's text or a value)."""
    conn_uri, own = split(uri)
    what = source if source is not None else own
    if what is None:
        raise TableError(f"{role} table: give the PostgreSQL table as {describe(uri)}?table=NAME")
    failure = None
    try:
        sql = select_of(what)
        con = connect(conn_uri)
        try:
            with con.cursor() as cur:
                cur.execute("set transaction read only")
                cur.execute(sql)
                table = cur.fetch_arrow_table()
            con.rollback()
        finally:
            con.close()
        return pl.from_arrow(table)  # type: ignore[return-value]
    except TableError:
        raise
    except Exception as exc:  # libpq / ADBC messages quote the query and may quote values
        failure = f"cannot read the {role} table ({describe(uri, what)}): {safe_reason(exc)}"
    raise TableError(failure)  # outside the except block: no chained exception carries the original


def same_database(a: str, b: str) -> bool:
    """Whether two PostgreSQL URIs name the same database on the same server."""
    pa, pb = urlsplit(split(a)[0]), urlsplit(split(b)[0])
    return (pa.hostname, pa.port or 5432, pa.path) == (pb.hostname, pb.port or 5432, pb.path)


def replace_tables(uri: str, tables: dict[str, pl.DataFrame]) -> None:
    """Create or replace tables in the database at ``uri``, all in one transaction (demo and tests:
    the product itself only reads PostgreSQL sources)."""
    con = connect(split(uri)[0])
    try:
        with con.cursor() as cur:
            for name, df in tables.items():
                cur.adbc_ingest(name, df.to_arrow(), mode="replace")
        con.commit()
    finally:
        con.close()
