"""Loading one table: frames as they are, files and SQL through one read-only SELECT on a locked DuckDB
connection (sql.py). What is a path and what is SQL, strict CSV reading, and messages that name the
source but never a value."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import polars as pl

from ..errors import TableError, safe_reason
from . import postgres
from .sql import quote_ident, read_select
from .tables import _is_text

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    import pyarrow as pa

#: what ``load`` (and so ``evaluate``) takes as a table: a polars or pandas frame, an Arrow table, a
#: DuckDB relation, a path, or text — a path, ``FILE.duckdb:TABLE``, one SQL SELECT or
#: ``postgresql://host/db?table=NAME`` (postgres.py). Named as strings: pandas, Arrow and DuckDB are
#: imported only when a value of theirs comes.
TableLike = Union[  # noqa: UP007  (the string names need Union)
    pl.DataFrame, "pd.DataFrame", "pa.Table", "duckdb.DuckDBPyRelation", str, "os.PathLike[str]"
]

_SQL_START = re.compile(r"^\s*(select|with|from|table|values|describe|summarize)\s", re.IGNORECASE)
_DUCKDB_SOURCE = re.compile(r"^(.*?\.duckdb):(.+)$", re.IGNORECASE | re.DOTALL)


def is_sql(text: str) -> bool:
    """SQL text rather than a path: a path that exists is a path (``table.csv``, ``values 2024.csv``);
    otherwise text DuckDB parses as one or more statements (of any kind: sql.one_select then refuses
    all but one SELECT, naming the statement kind rather than echoing the text)."""
    import duckdb

    try:
        if Path(text).exists():
            return False
    except (OSError, ValueError):  # too long or NUL: not a path
        pass
    if _SQL_START.match(text):
        return True
    try:
        return bool(duckdb.extract_statements(text))
    except Exception:  # does not parse: a path (that does not exist)
        return False


def describe_source(text: str) -> str:
    """How an input is named in a message: a path as is; SQL only by its length (it may hold literals);
    a PostgreSQL URI without its user and password."""
    if postgres.is_postgres(text):
        return postgres.describe(text)
    m = _DUCKDB_SOURCE.match(text)
    if m and is_sql(m.group(2)):
        return f"{m.group(1)}: query ({len(m.group(2))} characters)"
    return f"query ({len(text)} characters)" if is_sql(text) else text


#: directories SQL text may read files from (os.pathsep-separated); default: the working directory
SQL_DIRS_ENV = "DAGSTER_PRIVACY_SQL_DIRS"


def sql_directories() -> list[str]:
    """Where a query given as text may read files: ``DAGSTER_PRIVACY_SQL_DIRS``, else the working
    directory. Nothing else is reachable (no other file, no network, no extension)."""
    dirs = [d for d in os.environ.get(SQL_DIRS_ENV, "").split(os.pathsep) if d.strip()]
    return dirs or [os.getcwd()]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def source_query(source: str) -> str:
    """The SQL that reads ``source`` in a DuckDB file: a query as it is, a table name as ``select *``."""
    source = source.strip()
    if not source:
        raise TableError("empty table source: give a table name or a query")
    return source if is_sql(source) else f"select * from {quote_ident(source)}"


def _read_duckdb(path: str, what: str, role: str) -> pl.DataFrame:
    if not Path(path).is_file():
        raise TableError(f"{role} table: DuckDB file not found: {path}")
    return read_select(source_query(what), database=path)


#: the widest table the product evaluates (README): the distance metrics' cost grows with the square
#: of the columns (5 rows × 10,000 columns exhausted memory), and no release table is that wide
MAX_COLUMNS = 1_000
#: how much of a CSV file's first line is read to count its columns before anything else parses it
_HEADER_BYTES = 1 << 20


def check_width(n: int, role: str) -> None:
    """Refuse a table wider than MAX_COLUMNS in one line."""
    if n > MAX_COLUMNS:
        raise TableError(
            f"the {role} table has {n:,} columns; at most {MAX_COLUMNS:,} are evaluated (drop or "
            "aggregate columns first)"
        )


def _header_width(path: Path, delim: str) -> int:
    """Columns of a CSV file's header, counted on its first line (at most 1 MB, gzip read through),
    before DuckDB's sniffer, whose cost grows with the width (10,000 columns took minutes)."""
    import csv
    import gzip
    import io

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        head = fh.read(_HEADER_BYTES)
    line = head.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    if len(head) == _HEADER_BYTES and b"\n" not in head:
        return MAX_COLUMNS + 1  # a first line over 1 MB: far wider than any evaluated table
    return len(next(csv.reader(io.StringIO(line), delimiter=delim), []))


def _read_csv(path: Path, role: str) -> pl.DataFrame:
    """A CSV file with a header row, read strictly: comma-separated (tab for .tsv), double quotes, no
    rows skipped. A file without a header (its first record would become the column names) or with a
    row of another width is refused, not read (an unpinned dialect reads a ragged file as one column)."""
    delim = "\t" if path.name.lower().endswith(".tsv") else ","
    check_width(_header_width(path, delim), role)
    opts = (
        f"delim = {_quote(delim)}, quote = '\"', escape = '\"', skip = 0, strict_mode = true, "
        "ignore_errors = false, null_padding = false"
    )
    q = _quote(str(path))
    sniff = read_select(f"select HasHeader as h from sniff_csv({q}, {opts})", allowed_paths=[path])
    if not bool(sniff.item(0, "h")):
        raise TableError(
            f"{role} table {path}: the CSV file has no header row (its first line reads as "
            "data); add a line of column names"
        )
    df = read_select(f"select * from read_csv({q}, header = true, {opts})", allowed_paths=[path])
    numeric_names = sum(
        bool(re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", c)) for c in df.columns
    )
    if numeric_names:
        raise TableError(
            f"{role} table {path}: {numeric_names} column name(s) are numbers, so the first line "
            "looks like data, not a header; add a line of column names"
        )
    # an all-text file without a header sniffs as having one: its first record then names the columns,
    # and a record's values occur among their own column's values, which column names seldom do
    text = [c for c in df.columns if _is_text(df.schema[c])]
    named_by_value = sum(bool(df.get_column(c).is_in([c]).any()) for c in text)
    if text and named_by_value * 2 >= len(text):
        raise TableError(
            f"{role} table {path}: {named_by_value} of {len(text)} text column name(s) occur among "
            "their own column's values, so the first line looks like a record, not a header; add "
            "a line of column names"
        )
    return df


def as_given(source: str) -> pl.DataFrame | None:
    """A CSV or Parquet file as its bytes say, row for row as ``load`` reads it: a CSV's cells as the
    text they are spelled with (``load`` reads yes/no as booleans), a Parquet file's own types; None
    for any other source. What ``remediate`` writes back (issue 57: its output is the input less rows)."""
    path = Path(source)
    name = path.name.lower()
    if is_sql(source) or not path.is_file():
        return None
    if name.endswith((".parquet", ".pq")):
        return pl.read_parquet(path)
    if not name.endswith((".csv", ".tsv")):
        return None
    delim = "\t" if name.endswith(".tsv") else ","
    opts = (
        f"delim = {_quote(delim)}, quote = '\"', escape = '\"', skip = 0, strict_mode = true, "
        "ignore_errors = false, null_padding = false, all_varchar = true"
    )
    q = _quote(str(path))
    return read_select(f"select * from read_csv({q}, header = true, {opts})", allowed_paths=[path])


def _read_file(path: Path, role: str) -> pl.DataFrame:
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        return read_select(f"select * from read_parquet({_quote(str(path))})", allowed_paths=[path])
    if name.endswith((".csv", ".csv.gz", ".tsv", ".txt")):
        return _read_csv(path, role)
    if name.endswith(".duckdb"):
        raise TableError(f"{role} table: give the table as {path}:TABLE")
    raise TableError(
        f"{role} table: unsupported file type {path.suffix!r} (CSV, Parquet or FILE.duckdb:TABLE)"
    )


def _load_text(text: str, role: str) -> pl.DataFrame:
    if postgres.is_postgres(text):
        return postgres.read(text, role=role)
    path = Path(text)
    if not is_sql(text) and path.is_file():
        return _read_file(path, role)
    m = _DUCKDB_SOURCE.match(text)
    if m and not path.exists():
        return _read_duckdb(m.group(1), m.group(2), role)
    if is_sql(text):
        return read_select(text, allowed_directories=sql_directories())
    raise TableError(f"{role} table: file not found: {text}")


def load(source: TableLike, *, role: str = "input") -> pl.DataFrame:
    """Load one table as a polars frame; files and SQL are read through one read-only SELECT on a
    locked DuckDB connection (sql.py), PostgreSQL through ADBC in a READ ONLY transaction (postgres.py).
    A failure is one line naming the source, never a value."""
    if isinstance(source, pl.DataFrame):
        check_width(source.width, role)
        return _no_objects(source, role)
    if not isinstance(source, (str, Path)):
        try:
            return _no_objects(_from_frame(source, role), role)
        except TableError:
            raise
        except Exception as exc:  # pandas / Arrow conversion errors quote values
            failure = f"cannot convert the {role} table ({type(source).__name__}): {safe_reason(exc)}"
        raise TableError(failure)
    text = str(source)
    try:
        df = _load_text(text, role)
        check_width(df.width, role)
        return df
    except TableError:
        raise
    except Exception as exc:  # SQL refused, duckdb / polars errors: their class, our words
        failure = f"cannot read the {role} table ({describe_source(text)}): {safe_reason(exc)}"
    raise TableError(failure)  # outside the except block: no chained exception carries the original


def _no_objects(df: pl.DataFrame, role: str) -> pl.DataFrame:
    """A frame given in memory may hold Python objects, which have no order, hash or distance."""
    objects = [c for c, t in df.schema.items() if t == pl.Object]
    if objects:
        raise TableError(
            f"{role} table: column(s) {', '.join(map(repr, objects))} hold Python objects; "
            "give them as text or numbers"
        )
    return df


def _from_frame(source: Any, role: str) -> pl.DataFrame:
    """A polars LazyFrame, pandas DataFrame, pyarrow Table or DuckDB relation as a polars frame."""
    import pandas as pd
    import pyarrow as pa

    if isinstance(source, pl.LazyFrame):
        return source.collect()
    if isinstance(source, pd.DataFrame):
        return pl.from_pandas(source)
    if isinstance(source, pa.Table):
        return pl.from_arrow(source)  # type: ignore[return-value]
    if type(source).__name__ == "DuckDBPyRelation":  # an IO manager's DuckDB relation
        return source.pl()
    raise TableError(f"{role} table: unsupported input type {type(source).__name__}")
