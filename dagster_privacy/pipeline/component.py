"""``PrivacyChecksComponent``: declare a synthetic release's privacy checks in ``defs.yaml``.

Registered through the ``dagster_dg_cli.registry_modules`` entry point (``dg list components`` shows it).
``dg scaffold defs dagster_privacy.PrivacyChecksComponent NAME`` writes ``defs.yaml`` with every
attribute (the optional ones commented, with their description) and a ``policy.yaml`` that starts from
the ``standard`` preset (:class:`PrivacyChecksScaffolder`).

```yaml
type: dagster_privacy.pipeline.component.PrivacyChecksComponent
attributes:
  database: data/release.duckdb      # relative to the project root
  policy: policy.yaml                # preset name, or a file relative to this folder
  publish_target: data/published.duckdb
```
"""

import json
import textwrap
from pathlib import Path

import dagster as dg
from pydantic import BaseModel, Field

from ..data import postgres
from ..decision import policy as pol


class ScaffoldParams(BaseModel):
    """``dg scaffold defs dagster_privacy.PrivacyChecksComponent NAME --database FILE``."""

    database: str = Field(default="data/release.duckdb", description="DuckDB file or postgresql:// URI")


POLICY_TEMPLATE = """\
# The release policy of these privacy checks (docs/policy.md). It starts from the standard preset:
# every metric with its default threshold and severity. Override per metric below, e.g.
#   metrics:
#     dcr_percentile: {threshold: 0.03, severity: ERROR}
#     domias: {severity: ERROR}
# require_signoff: true adds the privacy officer's sign-off check and the evidence report.
preset: standard
"""


class PrivacyChecksScaffolder(dg.Scaffolder[ScaffoldParams]):
    """Writes ``defs.yaml`` (every attribute, optional ones commented with their description and
    default) and ``policy.yaml`` (the standard preset, overrides commented)."""

    @classmethod
    def get_scaffold_params(cls) -> type[ScaffoldParams]:
        return ScaffoldParams

    def scaffold(self, request: dg.ScaffoldRequest[ScaffoldParams]) -> None:
        params = request.params or ScaffoldParams()
        if request.scaffold_format != "yaml" or request.append:  # python format / append: Dagster's own
            from dagster.components.component_scaffolding import scaffold_component

            scaffold_component(request, {"database": params.database, "policy": "policy.yaml"})
            return
        # the folder's name namespaces what this component defines: a second one scaffolds beside it
        folder = "".join(c if c.isascii() and c.isalnum() else "_" for c in request.target_path.name)
        folder = folder.strip("_")
        live = {"database": params.database, "policy": "policy.yaml"}
        if folder:  # what ReleaseSettings accepts: a letter first, at most 63
            live["name"] = (folder if folder[0].isalpha() else f"r_{folder}")[:63]
        lines = [
            "# Privacy checks on a synthetic release (dagster_privacy). Paths: the database relative to the",
            "# project root, the policy relative to this folder. Uncomment an attribute to change it.",
            f"type: {request.type_name}",
            "",
            "attributes:",
        ]
        for name, field in PrivacyChecksComponent.model_fields.items():
            lines += [f"  # {d}" for d in textwrap.wrap(field.description or "", 96)]
            if name in live:
                lines.append(f"  {name}: {json.dumps(live[name])}")
            else:
                lines.append(f"  # {name}: {json.dumps(field.get_default())}")  # JSON is valid YAML
        request.target_path.mkdir(parents=True, exist_ok=True)
        (request.target_path / "defs.yaml").write_text("\n".join(lines) + "\n")
        (request.target_path / "policy.yaml").write_text(POLICY_TEMPLATE)


@dg.scaffold_with(PrivacyChecksScaffolder)
class PrivacyChecksComponent(dg.Component, dg.Model, dg.Resolvable):
    """Blocking privacy checks (one per policy metric), a GX schema gate and, when the policy requires it,
    the sign-off check on a synthetic table, with the evidence report; optionally the table assets and a
    gated ``published_release``. Built by ``build_release_definitions`` like every other entry point.

    Args:
        database: the DuckDB file holding the tables (relative: from the project root), or a
            ``postgresql://`` URI (password: ``PGPASSWORD`` or ``~/.pgpass``, never in the URI).
        policy: a preset (``strict``, ``standard``, ``report-only``) or a policy YAML file (relative:
            from this ``defs.yaml``'s folder, else the project root); default ``standard``.
        asset: the key of the synthetic table asset.
        real: the real (training) table's name or query.
        synthetic: the synthetic table's name or query.
        holdout: the holdout table's name or query; null: none.
        schema_gate: add the Great Expectations schema gate.
        tables: define the table assets; false: the asset exists elsewhere.
        publish_target: define ``published_release`` writing here (a DuckDB file, Parquet file, directory
            or a ``postgresql://`` URI of another database); null: no publication.
        release_id: the release id; empty: the run tag, the environment or the fingerprint.
        name: this release's name: everything it defines is ``<name>_…``, so several components live in
            one project; empty: the plain names.
        lineage: judge every release with the earlier releases of its lineage (``privacy_lineage``): true
            names the lineage by the real table, a text names it.
        ledger: the lineage's ledger, a DuckDB file or a ``postgresql://`` URI; null:
            ``$DAGSTER_PRIVACY_LEDGER``, else the PostgreSQL ``publish_target``'s database, else beside the
            instance.

    Example:
        .. code-block:: yaml

            type: dagster_privacy.pipeline.component.PrivacyChecksComponent
            attributes:
              database: data/release.duckdb
              policy: strict
    """

    database: str = Field(
        description="DuckDB file holding the tables (relative paths: from the project root), or a "
        "postgresql://host:port/db URI (password: PGPASSWORD or ~/.pgpass, never in the URI)"
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
        description="define published_release writing here (DuckDB file, Parquet file, directory or a "
        "postgresql:// URI of another database)",
    )
    release_id: str = Field(default="", description="release id; empty: run tag, env or fingerprint")
    name: str = Field(
        default="",
        description="this release's name: every asset, resource, job, schedule and sensor it defines is "
        "<name>_..., so several components live in one project; empty: the plain names (one release)",
    )
    lineage: bool | str = Field(
        default=False,
        description="judge every release with the earlier releases of its lineage (privacy_lineage): true "
        "names the lineage by the real table, a text names it yourself",
    )
    ledger: str | None = Field(
        default=None,
        description="the lineage's ledger: a DuckDB file or a postgresql:// URI; null: "
        "$DAGSTER_PRIVACY_LEDGER, else the PostgreSQL publish_target's database, else beside the instance",
    )

    def _policy(self, context: dg.ComponentLoadContext) -> pol.Policy:
        if self.policy in pol.PRESET_NAMES:
            return pol.load_policy(self.policy)
        for base in (context.path, context.project_root):
            candidate = Path(base) / self.policy
            if candidate.is_file():
                return pol.load_policy(candidate)
        return pol.load_policy(self.policy)  # absolute path, or a clear PolicyError

    def _path(self, context: dg.ComponentLoadContext, value: str) -> str:
        if postgres.is_postgres(value):
            return value
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
            name=self.name,
            lineage=self.lineage,
            ledger=self._path(context, self.ledger) if self.ledger else None,
        )
        return build_release_definitions(settings=settings)
