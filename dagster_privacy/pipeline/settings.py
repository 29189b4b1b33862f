"""``ReleaseSettings``: what a release pipeline reads, checks and where it publishes (and the
environment variables the reference code location reads them from)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..data import postgres
from ..decision import policy as pol
from ..lineage.pg_ledger import default_home

DATABASE_ENV = "DAGSTER_PRIVACY_DATABASE"
POLICY_ENV = "DAGSTER_PRIVACY_POLICY"
PUBLISH_TARGET_ENV = "DAGSTER_PRIVACY_PUBLISH_TARGET"
LEDGER_ENV = "DAGSTER_PRIVACY_LEDGER"
#: where `dagster-privacy demo` writes its embedded DuckDB, publication and instance (relative to cwd)
DEMO_DIR = Path(".dagster_privacy") / "demo"

ASSETS = ("real_table", "holdout_table", "synthetic_table", "published_release")


@dataclass(frozen=True)
class ReleaseSettings:
    """What a release pipeline reads, checks and where it publishes.

    Args:
        database: the DuckDB file or ``postgresql://`` URI holding the tables.
        policy: a preset name, a policy file, a ``Policy`` or its mapping.
        publish_target: where ``published_release`` writes (a DuckDB file, Parquet file, directory or a
            ``postgresql://`` URI); None: no ``published_release``.
        real: the real (training) table's name or query.
        synthetic: the synthetic table's name or query.
        holdout: the holdout table's name or query; None: no holdout.
        schema_gate: add the schema gate (``build_schema_gate_check``).
        required_checks: extra check names publication requires.
        checks_cron: the checks-only schedule; default daily at 03:00.
        release_id: the release id; empty: the run tag, ``DAGSTER_PRIVACY_RELEASE_ID``, else the content
            fingerprint.
        asset: the key of the synthetic table asset.
        tables: define the table assets; False: they exist elsewhere.
        name: the release's name: every asset, resource, job, schedule, sensor and op it creates is
            ``<name>_<base>``; a letter, then letters, digits or _ (at most 63); empty: the plain names.
        lineage: judge every release with the earlier releases of its lineage: True names it by the real
            table, a text names it.
        ledger: the lineage's ledger, a DuckDB file or a ``postgresql://`` URI; None: ``ledger_location``.

    Raises:
        ValueError: a ``name`` of another form.

    Example:
        ``ReleaseSettings(database="release.duckdb", policy="strict", publish_target=None, name="adult")``
    """

    database: str
    policy: str | Path | pol.Policy | Mapping[str, Any]
    publish_target: str | None  # None: no published_release
    real: str = "real"
    synthetic: str = "synthetic"
    holdout: str | None = "holdout"
    schema_gate: bool = True
    required_checks: tuple[str, ...] = field(default_factory=tuple)  # extra names publication requires
    checks_cron: str = "0 3 * * *"
    release_id: str = ""
    asset: str = "synthetic_table"  # key of the synthetic table asset
    tables: bool = True  # define the table assets (False: they exist elsewhere)
    #: the release's name: every asset, resource, job, schedule, sensor and op this pipeline creates is
    #: ``<name>_<base>``, so several releases live in one code location; empty: the plain names
    name: str = ""
    #: judge every release with the earlier releases of its lineage (issue 56): True names it by the real
    #: table, a text names it; ``ledger``: the lineage's ledger, a DuckDB file or a postgresql:// URI
    #: (default: ledger_location)
    lineage: bool | str = False
    ledger: str | None = None

    def __post_init__(self) -> None:
        if self.name and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,62}", self.name):
            raise ValueError("a release name is a letter, then letters, digits or _ (at most 63)")

    def named(self, base: str) -> str:
        """``base`` in this release's namespace."""
        return f"{self.name}_{base}" if self.name else base

    @property
    def synthetic_key(self) -> str:
        """The synthetic table asset: ours (namespaced) when this pipeline defines it, else as given."""
        return self.named(self.asset) if self.tables else self.asset

    @classmethod
    def from_env(cls, *, default_policy: str | Path = "standard", **overrides: Any) -> ReleaseSettings:
        """``DAGSTER_PRIVACY_DATABASE`` (default: the demo's DuckDB file), ``DAGSTER_PRIVACY_POLICY``
        (default: ``default_policy``), ``DAGSTER_PRIVACY_PUBLISH_TARGET`` (default: next to the demo)."""
        return cls(
            database=os.environ.get(DATABASE_ENV) or str(DEMO_DIR / "release.duckdb"),
            policy=os.environ.get(POLICY_ENV) or default_policy,
            publish_target=os.environ.get(PUBLISH_TARGET_ENV) or str(DEMO_DIR / "published.duckdb"),
            **overrides,
        )

    @property
    def ledger_location(self) -> str | None:
        """Where the lineage's ledger lives: ``ledger``, else ``DAGSTER_PRIVACY_LEDGER``, else the
        PostgreSQL database the release is published to (the table ``lineage_ledger`` beside the
        ``publications`` log), else None (the file beside the instance: lineage_check.default_ledger)."""
        published = self.publish_target if postgres.is_postgres(self.publish_target or "") else None
        return self.ledger or os.environ.get(LEDGER_ENV) or (published and postgres.split(published)[0])

    def with_(self, **changes: Any) -> ReleaseSettings:
        return replace(self, **changes)

    def loaded_policy(self) -> pol.Policy:
        return pol.load_policy(self.policy)


def privacy_folder(instance: Any = None) -> Path:
    """Where the product keeps its records beside a Dagster instance: ``<instance directory, else
    $DAGSTER_HOME>/dagster_privacy``, else ``~/.dagster_privacy`` (the audit table, the lineages' ledger)."""
    root = getattr(instance, "root_directory", None) if instance is not None else None
    return Path(root) / "dagster_privacy" if root else default_home()
