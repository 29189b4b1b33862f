"""A Dagster job of its own that calibrates the release policy on the current real table (on demand).

It is an op job, not an asset: no asset selection (the release job, ``dg launch --assets '*'``, the
sensor, the schedule) can start it, and it materializes nothing. It reads the real
table through the read-only DuckDB resource, runs the leaky risk model (``dagster_privacy.calibration``)
for every metric of the release policy, writes the outputs (plot, tables, calibrated policy YAML) under
``out_dir/<run id>`` and records the response table, thresholds, flags and the plot as metadata of an
``AssetObservation`` of ``real_table`` (figures only, never a value of a record).

No ``from __future__ import annotations`` here: Dagster reads the op's config annotation at definition time.
"""

import base64
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from ..calibration import DEFAULT_FRACTIONS, DEFAULT_LEAK_LEVEL
from .assets import DUCKDB_KEY

if TYPE_CHECKING:  # pragma: no cover
    from .settings import ReleaseSettings

CALIBRATION_JOB = "privacy_calibration_job"
CALIBRATION_OP = "privacy_calibration"


class CalibrationConfig(dg.Config):
    """Run config of the calibration op (the defaults are those of `dagster-privacy calibrate`)."""

    fractions: list[float] = Field(
        default_factory=lambda: list(DEFAULT_FRACTIONS),
        description="leak fractions f; 0 and the leak level are always added",
    )
    repeats: int = Field(3, ge=1, description="seeded repeats")
    leak_level: float = Field(DEFAULT_LEAK_LEVEL, gt=0, le=1, description="the leak a threshold must catch")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="probability the leak exceeds the threshold")
    metrics: list[str] = Field(default_factory=list, description="metric ids; empty: the policy's")
    outliers: list[float] = Field(default_factory=list, description="also repeat without these LOF fractions")
    seed: int | None = Field(None, description="first seed; default: the policy's")
    out_dir: str = Field(".dagster_privacy/calibration", description="outputs go to out_dir/<run id>")


def build_calibration_job(
    *,
    settings: "ReleaseSettings",
    name: str = CALIBRATION_JOB,
    real_asset: str = "real_table",
    resource_key: str = DUCKDB_KEY,
    op_name: str = CALIBRATION_OP,
) -> dg.JobDefinition:
    """The on-demand calibration job for ``settings.real`` under ``settings.policy``."""

    @dg.op(
        name=op_name,
        required_resource_keys={resource_key},
        description="Leaky risk model (seed 004 §5.1.1) on the real table: responses, thresholds, plot.",
    )
    def _calibrate(context: dg.OpExecutionContext, config: CalibrationConfig) -> None:
        from ..calibration import calibrate

        real = getattr(context.resources, resource_key).read(settings.real, role="real")
        cal = calibrate(
            real,
            policy=settings.loaded_policy(),
            metrics=config.metrics or None,
            fractions=config.fractions,
            repeats=config.repeats,
            seed=config.seed,
            leak_level=config.leak_level,
            confidence=config.confidence,
            outliers=config.outliers,
            progress=False,
        )
        out = Path(config.out_dir) / context.run_id[:8]
        paths = cal.write(out)
        png = base64.b64encode(paths["plot"].read_bytes()).decode()
        thr = {k: t.threshold for k, t in (cal.thresholds or {}).items() if t.calibrated}
        metadata = {
            "calibration/response": dg.MetadataValue.md(cal.to_markdown()),
            "calibration/plot": dg.MetadataValue.md(
                f"![response to inserted risk](data:image/png;base64,{png})"
            ),
            "calibration/thresholds": dg.MetadataValue.json(thr),
            "calibration/flagged": dg.MetadataValue.json({r.id: r.flag for r in cal.flagged}),
            "calibration/leak_level": dg.MetadataValue.float(float(config.leak_level)),
            "calibration/levels": dg.MetadataValue.json(cal.sweep.levels),
            "calibration/repeats": dg.MetadataValue.int(len(cal.sweep.seeds)),
            "calibration/table_sha256": dg.MetadataValue.text(str(cal.table["sha256"])),
            "calibration/policy_path": dg.MetadataValue.path(str(paths["policy"])),
            "calibration/plot_path": dg.MetadataValue.path(str(paths["plot"])),
            "calibration/json_path": dg.MetadataValue.path(str(paths["json"])),
            "calibration/seconds": dg.MetadataValue.float(float(cal.sweep.seconds)),
        }
        context.log_event(
            dg.AssetObservation(
                asset_key=real_asset,
                metadata=metadata,
                description="calibration of the release policy on this table",
            )
        )
        context.log.info(
            f"calibrated {len(thr)} threshold(s), {len(cal.flagged)} metric(s) flagged; "
            f"policy written to {paths['policy']}"
        )

    @dg.job(
        name=name,
        description="On demand: calibrate the release policy's thresholds on the current real "
        "table (seed 004 §5.1.1). Not part of the release run.",
    )
    def _job() -> None:
        _calibrate()

    return _job
