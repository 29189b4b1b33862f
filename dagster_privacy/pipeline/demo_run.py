"""The demo release (``dagster-privacy demo``): the whole Dagster pipeline on the shipped demo data.

An embedded DuckDB holds a training split (``real``), a holdout split (``holdout``) and the release
under test (``synthetic``), made by the leaky risk model of seed 004 §5.1.1 (``calibration.leaky_split``):
v1 = rows of the release split the generator never saw; v2 = the same plus 30 % of the training rows.
The release job runs in-process for both on a persistent Dagster instance; v1 is published, v2 is
blocked, and a later run of ``published_release`` alone is refused by its re-verification.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import yaml

from ..calibration import leaky_split
from ..data import postgres
from ..decision import policy as pol
from ..demo import CITATION, load_demo
from ..metrics import registry
from .publication.target import PublishTarget
from .release import build_release_definitions
from .resources import RELEASE_ID_TAG
from .settings import DATABASE_ENV, DEMO_DIR, POLICY_ENV, PUBLISH_TARGET_ENV, ReleaseSettings

#: metrics the demo gates and reports on: the quick ones and every gate of the standard preset (a policy
#: that leaves one out loosens standard: issue 54), so the report covers the four risks
FAST_METRICS = (
    "crp",
    "dcr",
    "mdcr",
    "nndr",
    "authenticity",
    "nnaa",
    "ims",
    "dcr_percentile",
    "exposed_records",
    "membership_inference",
    "dcr_holdout_diff",
    "nndr_holdout_diff",
    "singling_out_univariate",
    "singling_out_multivariate",
    "linkability",
    "inference_distance",
)
MARKER = ".dagster_privacy_demo"
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def demo_policy() -> pol.Policy:
    """The standard preset restricted to quick metrics (those registered and listed in it): every gate
    of standard at its entry, so the demo policy loosens nothing."""
    std = pol.load_policy("standard")
    known = registry()
    metrics = {
        m: e.model_dump(mode="json") for m, e in std.metrics.items() if m in FAST_METRICS and m in known
    }
    return pol.from_mapping({"seed": std.seed, "metrics": metrics, "require_signoff": False}, name="demo")


def write_tables(database: Path, tables: dict[str, pl.DataFrame]) -> None:
    """Create or replace tables in a DuckDB file (the only read-write connection the demo opens)."""
    import duckdb

    database.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(database))
    try:
        for name, df in tables.items():
            con.register("frame", df.to_arrow())
            con.execute(f'create or replace table "{name}" as select * from frame')
            con.unregister("frame")
        con.execute("checkpoint").fetchall()
    finally:
        con.close()


def in_domain(df: pl.DataFrame, real: pl.DataFrame) -> pl.DataFrame:
    """Rows whose text values all occur in the real table (a generator trained on it emits no others)."""
    keep = pl.lit(True)
    for name, dtype in real.schema.items():
        if dtype == pl.String:
            keep = keep & (
                pl.col(name).is_null()
                | pl.col(name).is_in(real.get_column(name).drop_nulls().unique().implode())
            )
    return df.filter(keep)


@dataclass
class ReleaseOutcome:
    release: str
    rows: int
    success: bool
    published: bool
    checks: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class DemoOutcome:
    database: Path | str
    publish_target: Path | str
    dagster_home: Path
    releases: list[ReleaseOutcome]
    rerun_refused: bool
    published_ids: list[str]

    @property
    def as_expected(self) -> bool:
        v1, v2 = self.releases
        return v1.published and not v2.published and self.rerun_refused and self.published_ids[-1:] == ["v1"]


def _instance(home: Path) -> dg.DagsterInstance:
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text("telemetry:\n  enabled: false\n")
    return dg.DagsterInstance.from_config(str(home))


def _checks(result: dg.ExecuteInProcessResult) -> list[dict[str, Any]]:
    out = []
    for ev in result.get_asset_check_evaluations():
        m = {k: getattr(v, "value", v) for k, v in ev.metadata.items()}
        out.append(
            {
                "check": ev.check_name,
                "passed": ev.passed,
                "severity": ev.severity.value,
                "value": m.get("value"),
                "compared": m.get("compared_with_threshold"),
                "threshold": m.get("threshold"),
                "reason": m.get("reason"),
            }
        )
    return out


def published_releases(target: Path | str) -> list[str]:
    """Release ids in the publication log of a DuckDB or PostgreSQL target (ids only)."""
    return [r["release_id"] for r in PublishTarget(path=str(target)).log()]


def run_demo(
    workdir: Path = DEMO_DIR,
    *,
    echo: Callable[[str], None] = print,
    fraction: float = 0.3,
    seed: int = 0,
    dagster_home: Path | None = None,
    database: str | None = None,
    publish_target: str | None = None,
) -> DemoOutcome:
    """Build the embedded DuckDB, run the release pipeline for v1 and v2, print what happened.
    ``database`` / ``publish_target``: ``postgresql://`` URIs to run the same story from PostgreSQL
    tables to a PostgreSQL publication target (the tables are created or replaced there)."""
    workdir = Path(workdir)
    if workdir.exists() and (workdir / MARKER).exists():
        shutil.rmtree(workdir)  # only a directory this demo created
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / MARKER).write_text("created by `dagster-privacy demo`; safe to delete\n")
    env_home = os.environ.get("DAGSTER_HOME")
    home = Path(dagster_home or env_home or workdir / "dagster_home").resolve()
    db: str | Path = database or (workdir / "release.duckdb").resolve()
    target: Any = publish_target or (workdir / "published.duckdb").resolve()

    data = load_demo()
    clean, leaky = leaky_split(data, 0.0, seed=seed), leaky_split(data, fraction, seed=seed)
    v1 = in_domain(clean.synthetic, clean.train)
    v2 = in_domain(leaky.synthetic, leaky.train)
    dropped = clean.synthetic.height - v1.height
    echo(f"demo data: {CITATION}")
    echo(
        f"{_where(db)}: real = training split ({clean.train.height} rows), "
        f"holdout = holdout split ({clean.control.height} rows)"
    )
    echo(
        f"  v1 = {v1.height} rows of the release split the generator never saw"
        + (f" ({dropped} row(s) with a category absent from training dropped)" if dropped else "")
    )
    echo(f"  v2 = v1 + {v2.height - v1.height} training rows copied ({fraction:.0%} of training)")
    _write(db, {"real": clean.train, "holdout": clean.control, "synthetic": v1})

    policy_file = _policy_file(workdir)
    settings = ReleaseSettings(database=str(db), policy=str(policy_file), publish_target=str(target))
    defs = build_release_definitions(settings=settings)
    job = defs.resolve_job_def("privacy_release_job")
    instance = _instance(home)
    outcomes: list[ReleaseOutcome] = []
    for release, frame in (("v1", v1), ("v2", v2)):
        if release == "v2":
            _write(db, {"synthetic": frame})
        outcomes.append(_run_release(job, instance, release, frame.height))
        _print_release(outcomes[-1], echo)

    refused, reason = _published_alone(defs, instance)
    ids = published_releases(target)
    echo(
        f"later run of published_release alone: {'refused' if refused else 'PUBLISHED (unexpected)'}"
        + (f" — {reason[:300]}" if reason else "")
    )
    echo(
        f"publication target {_where(target)}: holds {ids[-1] if ids else 'nothing'} "
        f"(publications: {', '.join(ids) or 'none'})"
    )
    out = DemoOutcome(db, target, home, outcomes, refused, ids)
    cwd_home = f"DAGSTER_HOME={home} " if not env_home else ""
    echo("where to look: run history, check metadata and the asset graph in the Dagster UI —")
    echo(
        f"  {cwd_home}{DATABASE_ENV}={db} {POLICY_ENV}={policy_file} {PUBLISH_TARGET_ENV}={target} "
        "dagster dev -m dagster_privacy.pipeline.location"
    )
    echo("demo: v1 published, v2 blocked" if out.as_expected else "demo: UNEXPECTED outcome (see above)")
    return out


def _policy_file(workdir: Path) -> Path:
    """The demo policy written beside the demo's tables (the standard preset's quick metrics)."""
    policy_file = (workdir / "policy.yaml").resolve()
    policy_file.write_text(
        "# the demo policy: the standard preset restricted to quick metrics\n"
        + yaml.safe_dump(demo_policy().model_dump(mode="json", exclude={"name"}), sort_keys=False)
    )
    return policy_file


def _run_release(job: Any, instance: dg.DagsterInstance, release: str, rows: int) -> ReleaseOutcome:
    """One run of the release job, tagged with the release id: what it published and its checks."""
    t0 = time.perf_counter()
    res = job.execute_in_process(
        instance=instance, raise_on_error=False, run_config=QUIET, tags={RELEASE_ID_TAG: release}
    )
    mats = {e.asset_key.to_user_string() for e in res.get_asset_materialization_events() if e.asset_key}
    published = "published_release" in mats
    return ReleaseOutcome(release, rows, res.success, published, _checks(res), time.perf_counter() - t0)


def _published_alone(defs: dg.Definitions, instance: dg.DagsterInstance) -> tuple[bool, str]:
    """A later run that selects only published_release: Dagster would not refuse, our re-verification
    does. (refused, the first line of its failure)."""
    rerun = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance,
        raise_on_error=False,
        run_config=QUIET,
        asset_selection=[dg.AssetKey("published_release")],
        run_id=str(uuid.uuid4()),
    )
    errors = (getattr(e.event_specific_data, "error", None) for e in rerun.all_events if e.is_step_failure)
    reason = next((err.message.splitlines()[0].partition("Failure: ")[2] for err in errors if err), "")
    return not rerun.success, reason


def _where(database: Path | str) -> str:
    return (
        f"PostgreSQL {postgres.describe(str(database))}"
        if postgres.is_postgres(str(database))
        else (f"embedded DuckDB {database}")
    )


def _write(database: Path | str, tables: dict[str, pl.DataFrame]) -> None:
    if postgres.is_postgres(str(database)):
        postgres.replace_tables(str(database), tables)
    else:
        write_tables(Path(database), tables)


def _print_release(o: ReleaseOutcome, echo: Callable[[str], None]) -> None:
    verdict = "PUBLISHED" if o.published else "BLOCKED (not published)"
    echo(f"release {o.release} ({o.rows} rows): {verdict} in {o.seconds:.1f} s")
    width = max((len(c["check"]) for c in o.checks), default=18)
    for c in o.checks:
        fig = f" {c['compared']}" if c.get("compared") else ""
        thr = "" if c["threshold"] is None else f" threshold {c['threshold']:g}"
        state = "passed" if c["passed"] else ("FAILED" if c["severity"] == "ERROR" else "warned")
        why = f" — {c['reason']}" if c["reason"] and not c["passed"] else ""
        echo(f"  {c['check']:<{width}} {state:<7} {c['severity']:<5}{fig}{thr}{why}")
