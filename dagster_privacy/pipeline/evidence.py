"""The evidence report written by the privacy check evaluation itself.

An asset downstream of a failed blocking check never runs (dagster-facts §1), and a blocked release is
exactly the one the officer must read: so the report is written inside the check, by the hook
``build_privacy_checks(on_evaluation=...)`` calls with the Evaluation. Its path and sha256 go into every
check result's metadata; the sign-off approves that sha256.

Reports go to ``DAGSTER_PRIVACY_REPORTS``, by default ``<instance directory>/dagster_privacy/reports``
(``$DAGSTER_HOME/dagster_privacy/reports`` for a persistent instance), one file per release and run:
``<release>/<run id>.html``.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from ..decision import policy as pol
from ..evaluation import Evaluation
from ..metrics import registry
from . import metadata as md
from .assets import RELEASE_KEY
from .hook import EvaluationHook
from .resources import file_name, run_release_id

REPORTS_ENV = "DAGSTER_PRIVACY_REPORTS"
#: the officer console's base URL (``dagster-privacy console``): check metadata links to its release page
CONSOLE_ENV = "DAGSTER_PRIVACY_CONSOLE_URL"
CONSOLE_LINK = "dagster_privacy/console"
#: metadata keys every privacy check result carries
REPORT_PATH = "dagster_privacy/report_path"
REPORT_SHA256 = "dagster_privacy/report_sha256"
REPORT_SUMMARY = "privacy_report"
#: the release's rows, and the run tag naming the generator that made it (a pipeline sets it; shown by
#: the console beside the release id)
SYNTHETIC_ROWS = "dagster_privacy/synthetic_rows"
GENERATOR_TAG = "dagster_privacy/generator"


def instance_dir(instance: dg.DagsterInstance | None = None) -> Path:
    """``<instance root>/dagster_privacy`` (the instance's directory, else ``$DAGSTER_HOME``), else
    ``~/.dagster_privacy``: governance files live next to the instance that records the decisions."""
    root = getattr(instance, "root_directory", None) if instance is not None else None
    home = root or os.environ.get("DAGSTER_HOME")
    return Path(home) / "dagster_privacy" if home else Path.home() / ".dagster_privacy"


def default_reports_dir(instance: dg.DagsterInstance | None = None) -> Path:
    """``DAGSTER_PRIVACY_REPORTS``, else ``<instance dir>/dagster_privacy/reports``."""
    env = os.environ.get(REPORTS_ENV)
    return Path(env) if env else instance_dir(instance) / "reports"


def check_history(
    instance: dg.DagsterInstance,
    asset: dg.AssetKey,
    *,
    metric_ids: Sequence[str] | None = None,
    limit: int = 20,
    exclude_run: str | None = None,
    name_prefix: str = "",
) -> list[dict[str, Any]]:
    """Earlier evaluations of the privacy checks on ``asset``, oldest first, one point per run:
    ``{"release", "run_id", "time", "values": {metric: value}, "failed": [metric, ...], "verdict",
    "exposed_records", "report_path", "report_sha256", "partition"}`` (the report's fields None when
    the evaluation wrote none; the partition None on an unpartitioned asset);
    ``name_prefix``: the checks' own (``build_privacy_checks(name_prefix=…)``)."""
    ids = list(metric_ids) if metric_ids is not None else list(registry())
    runs: dict[str, dict[str, Any]] = {}
    for mid in ids:
        key = dg.AssetCheckKey(asset, name_prefix + mid)
        for rec in instance.event_log_storage.get_asset_check_execution_history(key, limit=limit):
            ev = rec.evaluation if rec.event is not None else None
            if not isinstance(ev, dg.AssetCheckEvaluation) or not rec.run_id or rec.run_id == exclude_run:
                continue
            value = md.recorded(ev.metadata, "value")
            if md.recorded(ev.metadata, REPORT_SHA256) is None and value is None:
                continue
            point = runs.setdefault(
                rec.run_id,
                {
                    "run_id": rec.run_id,
                    "time": rec.create_timestamp,
                    "release": md.recorded(ev.metadata, md.RELEASE_ID) or rec.run_id[:8],
                    "values": {},
                    "failed": [],
                    "verdict": md.recorded(ev.metadata, "verdict"),
                    "exposed_records": md.recorded(ev.metadata, "exposed_records"),
                    "report_path": md.recorded(ev.metadata, REPORT_PATH),
                    "report_sha256": md.recorded(ev.metadata, REPORT_SHA256),
                    "partition": rec.partition,  # a partitioned release: the partition judged
                    "rows": md.recorded(ev.metadata, SYNTHETIC_ROWS),
                    "generator": md.recorded(ev.metadata, GENERATOR_TAG),
                },
            )
            point["time"] = min(point["time"], rec.create_timestamp)
            if isinstance(value, (int, float)):
                point["values"][mid] = float(value)
            if not ev.passed:
                point["failed"].append(mid)
    return sorted(runs.values(), key=lambda p: p["time"])[-limit:]


def build_report_hook(
    *,
    asset: dg.AssetsDefinition | dg.AssetKey | str,
    policy: pol.Policy | str | Path | Mapping[str, Any] | None = None,
    release_resource_key: str | None = RELEASE_KEY,
    reports_dir: str | os.PathLike[str] | None = None,
    history_limit: int = 20,
    name_prefix: str = "",
) -> EvaluationHook:
    """The ``on_evaluation`` hook of ``build_privacy_checks``: writes the HTML report and returns the
    metadata (path, sha256, Markdown summary) attached to every check result.

    The distance figure comes from the evaluation itself (``Evaluation.distances``, drawn from the
    context's cached neighbour queries). Any error raises, and the checks fail closed.
    """
    key = dg.AssetKey.from_coercible_or_definition(asset)
    p = pol.load_policy(policy) if policy is not None else None

    def hook(ev: Evaluation, context: dg.AssetCheckExecutionContext) -> dict[str, Any]:
        from ..report import markdown_summary, write_report

        release = run_release_id(context, release_resource_key, ev.tables["synthetic"]["sha256"])
        history = check_history(
            context.instance,
            key,
            metric_ids=ev.ids,
            limit=history_limit,
            exclude_run=context.run.run_id,
            name_prefix=name_prefix,
        )
        base = Path(reports_dir) if reports_dir is not None else default_reports_dir(context.instance)
        # one report per asset, policy (name_prefix) and run: two policies on one asset write two, and
        # two assets evaluated in one run under one release id never share a file (review)
        name = f"{name_prefix}{context.run.run_id}.html"
        # the folder resolved, never the file: a link planted at the report's name is replaced, not followed
        path = (base / file_name(key.to_user_string()) / file_name(release)).resolve() / name
        sha = write_report(ev, path, release_id=release, history=history, policy=p, pipeline=True)
        context.log.info(f"privacy report of release {release}: {path} (sha256 {sha})")
        console = os.environ.get(CONSOLE_ENV, "").rstrip("/")
        link = {}
        if console.startswith(("http://", "https://")):  # the officer's page of this release
            page = f"{console}/release/{urllib.parse.quote(release, safe='')}"
            link = {CONSOLE_LINK: dg.MetadataValue.url(page)}
        # what names a release to the officer (issue 57): its rows and the generator the run is tagged with
        named: dict[str, dg.MetadataValue] = {
            SYNTHETIC_ROWS: dg.MetadataValue.int(int(ev.tables["synthetic"]["rows"]))
        }
        if context.run.tags.get(GENERATOR_TAG):
            named[GENERATOR_TAG] = dg.MetadataValue.text(str(context.run.tags[GENERATOR_TAG])[:200])
        return {
            **link,
            **named,
            REPORT_PATH: dg.MetadataValue.path(str(path)),
            REPORT_SHA256: dg.MetadataValue.text(sha),
            REPORT_SUMMARY: dg.MetadataValue.md(
                markdown_summary(
                    ev,
                    release_id=release,
                    report_path=str(path),
                    report_sha256=sha,
                    signoff=bool(getattr(p, "require_signoff", False)),
                )
            ),
        }

    return hook
