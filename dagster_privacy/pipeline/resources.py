"""Read-only table access for the pipeline (DuckDB, PostgreSQL), and the release settings a run carries.

Unlike ``dagster_duckdb.DuckDBResource`` (read-write, not closed when the body raises, dagster-facts §6),
:class:`ReadOnlyDuckDB` opens every connection ``read_only=True`` and closes it in ``finally``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from ..data import postgres
from ..data.loading import describe_source, source_query, sql_directories
from ..data.release_ids import ReleaseIdError, default_release_id, file_name, valid_release_id
from ..data.sql import locked_connection, read_select
from ..errors import TableError, safe_reason

if TYPE_CHECKING:  # pragma: no cover
    import duckdb
    import polars as pl

#: environment variable naming the release under test (architecture.md "The Dagster side")
RELEASE_ID_ENV = "DAGSTER_PRIVACY_RELEASE_ID"
#: run tag a sensor or a user may set instead of run config
RELEASE_ID_TAG = "dagster_privacy/release_id"


class ReadOnlyDuckDB(dg.ConfigurableResource):
    """DuckDB, read-only and locked: every read is one SELECT on a connection opened ``read_only=True``
    with extensions, external access and configuration changes off (``dagster_privacy.data.sql``), always
    closed.

    ``database`` is a DuckDB file; empty means an in-memory database, for sources that are queries over
    Parquet or CSV files (``select * from read_parquet('release/*.parquet')``), which may read files
    under ``allowed_directories`` only (default: the working directory).

    Args:
        database: the DuckDB file; empty: an in-memory database (queries over files).
        allowed_directories: the directories queries over files may read, with an in-memory database;
            empty: the working directory.

    Example:
        ``ReadOnlyDuckDB(database="data/release.duckdb").read("real", role="real")``
    """

    database: str = Field(default="", description="DuckDB file; empty: in-memory (queries over files)")
    allowed_directories: list[str] = Field(
        default_factory=list,
        description="directories queries may read files from; empty: the working directory",
    )

    @contextmanager
    def get_connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A locked, read-only connection (for callers that need one; ``read`` is the usual way)."""
        con = locked_connection(self._database(), allowed_directories=self._directories())
        try:
            yield con
        finally:
            con.close()

    def _database(self) -> str | None:
        """The DuckDB file (None: in-memory); a configured file that does not exist is bad input."""
        if self.database and not os.path.isfile(self.database):
            raise TableError(f"DuckDB file not found: {self.database}")
        return self.database or None

    def _directories(self) -> list[str]:
        return [] if self.database else (list(self.allowed_directories) or sql_directories())

    def read(self, source: str, *, role: str = "input") -> pl.DataFrame:
        """One table or query as a polars frame (via Arrow). Errors become a one-line ``TableError``
        naming the exception class only (a DuckDB message may quote a record's value)."""
        failure = None
        try:
            return read_select(
                source_query(source), database=self._database(), allowed_directories=self._directories()
            )
        except TableError:
            raise
        except Exception as exc:  # SQL refused, duckdb errors: the class, in our words
            failure = f"cannot read the {role} table ({describe_source(source)}): {safe_reason(exc)}"
        raise TableError(failure)  # outside the except block: no chained exception carries the original


class PostgresTables(dg.ConfigurableResource):
    """PostgreSQL, read-only, beside :class:`ReadOnlyDuckDB` (the same ``read``): every read is one
    connection through the ADBC driver, one READ ONLY transaction, one SELECT, rolled back and closed
    (``dagster_privacy.data.postgres``). Keep the password out of ``database`` (it is run config, shown in the
    UI): libpq reads ``PGPASSWORD`` or ``~/.pgpass``.

    Args:
        database: ``postgresql://[user@]host[:port]/database``, without a password.

    Example:
        ``PostgresTables(database="postgresql://etl@db:5432/warehouse").read("public.real", role="real")``
    """

    database: str = Field(description="postgresql://[user@]host[:port]/database (no password: PGPASSWORD)")

    def read(self, source: str, *, role: str = "input") -> pl.DataFrame:
        """One table (schema-qualified names allowed) or SELECT query as a polars frame."""
        return postgres.read(self.database, source, role=role)


def tables_resource(database: str) -> ReadOnlyDuckDB | PostgresTables:
    """The read-only resource for a database setting: a ``postgresql://`` URI or a DuckDB file."""
    return (
        PostgresTables(database=database)
        if postgres.is_postgres(database)
        else ReadOnlyDuckDB(database=database)
    )


class PrivacyRelease(dg.ConfigurableResource):
    """Which release a run evaluates or publishes.

    ``release_id`` (set here, or per run: ``resources: {privacy_release: {config: {release_id: v2}}}``)
    wins over the ``dagster_privacy/release_id`` run tag, which wins over ``DAGSTER_PRIVACY_RELEASE_ID``;
    without any of them the release id is the synthetic table's content fingerprint.
    """

    release_id: str = Field(default="", description="release id; empty: run tag, env, else the fingerprint")

    def resolve(self, fingerprint: str, tags: dict[str, str] | None = None) -> str:
        return release_id(self.release_id, tags=tags, fingerprint=fingerprint)


def release_id(configured: str | None, *, tags: dict[str, str] | None = None, fingerprint: str) -> str:
    """Run config, else the run tag, else ``DAGSTER_PRIVACY_RELEASE_ID``, else ``sha256:<16 hex>``;
    validated (``valid_release_id``) whichever it is."""
    for candidate in (configured, (tags or {}).get(RELEASE_ID_TAG), os.environ.get(RELEASE_ID_ENV)):
        if candidate and candidate.strip():
            return valid_release_id(candidate.strip())
    return default_release_id(fingerprint)


def run_release_id(context: dg.AssetCheckExecutionContext, release_resource_key: str | None, fp: str) -> str:
    """The release id a check run judges: the ``PrivacyRelease`` resource's (when it has a key), else the
    run tag, the environment or the content; one partition of a partitioned release is a release of its
    own, ``<release>+<partition>`` — the checks and the report name the same one."""
    from ..data.release_ids import partition_release_id

    tags = dict(context.run.tags)
    if release_resource_key:
        rel: PrivacyRelease = getattr(context.resources, release_resource_key)
        release = rel.resolve(fp, tags)
    else:
        release = release_id(None, tags=tags, fingerprint=fp)
    return partition_release_id(release, context.partition_key) if context.has_partition_key else release


__all__ = [
    "PrivacyRelease",
    "RELEASE_ID_ENV",
    "RELEASE_ID_TAG",
    "ReadOnlyDuckDB",
    "ReleaseIdError",
    "file_name",
    "release_id",
    "run_release_id",
    "valid_release_id",
]
