"""Table assets: ``real_table``, ``holdout_table``, ``synthetic_table``.

They hand no table data to an IO manager (the default one pickles outputs under DAGSTER_HOME, where a
real value would then sit): each reads its table through the read-only resource and records row count,
schema and a content fingerprint in a ``MaterializeResult``. The checks read the tables themselves.
"""

import dagster as dg

from ..data.loading import describe_source
from ..data.tables import fingerprint
from ..errors import TableError
from . import metadata as md
from .resources import PrivacyRelease, ReadOnlyDuckDB

DUCKDB_KEY = "duckdb"
RELEASE_KEY = "privacy_release"
PUBLISH_KEY = "publish_target"


def build_table_asset(
    *,
    key: str,
    source: str,
    role: str,
    description: str | None = None,
    group_name: str = "privacy_release",
    resource_key: str = DUCKDB_KEY,
    release_resource_key: str | None = None,
    deps: list[dg.AssetKey] | None = None,
) -> dg.AssetsDefinition:
    """An asset over one DuckDB table or query that records row count, schema and fingerprint.

    With ``release_resource_key`` (the synthetic table) it also records the release id.
    """
    keys = {resource_key} | ({release_resource_key} if release_resource_key else set())

    @dg.asset(
        name=key,
        description=description or f"The {role} table ({describe_source(source)}), read-only through DuckDB.",
        group_name=group_name,
        required_resource_keys=keys,
        kinds={"duckdb"},
        deps=deps,
        metadata={"source": describe_source(source), "role": role},
    )
    def _table(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        db: ReadOnlyDuckDB = getattr(context.resources, resource_key)
        failure = None
        try:
            df = db.read(source, role=role)
        except TableError as exc:
            failure = str(exc)
        if failure is not None:
            raise dg.Failure(description=failure)
        fp = fingerprint(df)
        meta = md.table_metadata(df, fp)
        if release_resource_key:
            release: PrivacyRelease = getattr(context.resources, release_resource_key)
            meta[md.RELEASE_ID] = dg.MetadataValue.text(release.resolve(fp, dict(context.run.tags)))
        return dg.MaterializeResult(metadata=meta)

    return _table
