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
from .assets import DUCKDB_KEY, PUBLISH_KEY, RELEASE_KEY, build_table_asset
from .checks import build_privacy_checks, required_check_names
from .publish import PublishTarget, build_published_release
from .resources import PrivacyRelease, ReadOnlyDuckDB
from .schema_gate import build_schema_gate_check


class PrivacyChecksComponent(dg.Component, dg.Model, dg.Resolvable):
    """Blocking privacy checks (one per policy metric) and a GX schema gate on a synthetic table; optionally
    the table assets and a gated ``published_release``."""

    database: str = Field(description="DuckDB file holding the tables (relative paths: from the project root)")
    policy: str = Field(default="standard", description="preset (strict, standard, report-only) or a policy "
                                                          "YAML file (relative paths: from this defs.yaml's folder)")
    asset: str = Field(default="synthetic_table", description="key of the synthetic table asset")
    real: str = Field(default="real", description="real (training) table name or query")
    synthetic: str = Field(default="synthetic", description="synthetic table name or query")
    holdout: str | None = Field(default="holdout", description="holdout table name or query; null: none")
    schema_gate: bool = Field(default=True, description="add the Great Expectations schema gate")
    tables: bool = Field(default=True, description="define the table assets (false: the asset exists elsewhere)")
    publish_target: str | None = Field(default=None, description="define published_release writing here "
                                                                   "(DuckDB file, Parquet file or directory)")
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
        policy = self._policy(context)
        assets: list[dg.AssetsDefinition] = []
        deps: list[str] = []
        if self.tables:
            assets.append(build_table_asset(key="real_table", source=self.real, role="real"))
            deps.append("real_table")
            if self.holdout:
                assets.append(build_table_asset(key="holdout_table", source=self.holdout, role="holdout"))
                deps.append("holdout_table")
            assets.append(build_table_asset(key=self.asset, source=self.synthetic, role="synthetic",
                                            release_resource_key=RELEASE_KEY))
        checks = list(build_privacy_checks(asset=self.asset, policy=policy, real=self.real, synthetic=self.synthetic,
                                           holdout=self.holdout, additional_deps=deps))
        if self.schema_gate:
            checks += build_schema_gate_check(asset=self.asset, real=self.real, synthetic=self.synthetic,
                                              policy=policy, additional_deps=deps[:1])
        resources: dict[str, object] = {
            DUCKDB_KEY: ReadOnlyDuckDB(database=self._path(context, self.database)),
            RELEASE_KEY: PrivacyRelease(release_id=self.release_id),
        }
        if self.publish_target:
            assets.append(build_published_release(
                synthetic_asset=self.asset, synthetic=self.synthetic,
                required_checks=required_check_names(policy, schema_gate=self.schema_gate),
                real=self.real, holdout=self.holdout))
            resources[PUBLISH_KEY] = PublishTarget(path=self._path(context, self.publish_target))
        return dg.Definitions(assets=assets, asset_checks=checks, resources=resources)
