"""``PrivacyChecksComponent``: declare a synthetic release's privacy checks in ``defs.yaml``.

Registered through the ``dagster_dg_cli.registry_modules`` entry point (``dg list components`` shows it).

```yaml
type: dagster_privacy.pipeline.component.PrivacyChecksComponent
attributes:
  database: data/release.duckdb      # relative to the project root
  policy: policy.yaml                # preset name, or a file relative to this folder
  publish_target: data/published.duckdb
```
"""

from pathlib import Path

import dagster as dg
from pydantic import Field

from .. import policy as pol


class PrivacyChecksComponent(dg.Component, dg.Model, dg.Resolvable):
    """Blocking privacy checks (one per policy metric), a GX schema gate and, when the policy requires it,
    the sign-off check on a synthetic table, with the evidence report; optionally the table assets and a
    gated ``published_release``. Built by ``build_release_definitions`` like every other entry point."""

    database: str = Field(
        description="DuckDB file holding the tables (relative paths: from the project root)"
    )
    policy: str = Field(
        default="standard",
        description="preset (strict, standard, report-only) or a policy "
        "YAML file (relative paths: from this defs.yaml's folder)",
    )
    asset: str = Field(default="synthetic_table", description="key of the synthetic table asset")
    real: str = Field(default="real", description="real (training) table name or query")
    synthetic: str = Field(default="synthetic", description="synthetic table name or query")
    holdout: str | None = Field(default="holdout", description="holdout table name or query; null: none")
    schema_gate: bool = Field(default=True, description="add the Great Expectations schema gate")
    tables: bool = Field(
        default=True, description="define the table assets (false: the asset exists elsewhere)"
    )
    publish_target: str | None = Field(
        default=None,
        description="define published_release writing here (DuckDB file, Parquet file or directory)",
    )
    release_id: str = Field(default="", description="release id; empty: run tag, env or fingerprint")

    def _policy(self, context: dg.ComponentLoadContext) -> pol.Policy:
        if self.policy in pol.PRESET_NAMES:
            return pol.load_policy(self.policy)
        for base in (context.path, context.project_root):
            candidate = Path(base) / self.policy
            if candidate.is_file():
                return pol.load_policy(candidate)
        return pol.load_policy(self.policy)  # absolute path, or a clear PolicyError

    def _path(self, context: dg.ComponentLoadContext, value: str) -> str:
        p = Path(value)
        return str(p if p.is_absolute() else Path(context.project_root) / p)

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        """The same definitions as ``build_release_definitions`` (release.py, the one assembler): the
        policy's sign-off check, the evidence report, the jobs, schedule and sensor come with them."""
        from .release import ReleaseSettings, build_release_definitions

        settings = ReleaseSettings(
            database=self._path(context, self.database),
            policy=self._policy(context),
            publish_target=self._path(context, self.publish_target) if self.publish_target else None,
            real=self.real,
            synthetic=self.synthetic,
            holdout=self.holdout,
            schema_gate=self.schema_gate,
            release_id=self.release_id,
            asset=self.asset,
            tables=self.tables,
        )
        return build_release_definitions(settings=settings)
