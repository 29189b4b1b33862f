"""evaluate(): the whole engine behind one call — load, schema, spaces, metrics, policy, verdict."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from . import allocator
from .data import new_values
from .data import tables as tb
from .data.left_out import left_out_overlap
from .data.loading import TableLike, load
from .data.surrogate import surrogate_keys
from .decision import advisory
from .decision import policy as pol
from .decision.power import detection_floor
from .engine.context import EvaluationContext
from .engine.distance_summary import SIDES, SPACE, distance_summary
from .engine.executors import Executor, executor_for
from .errors import Aborted, safe_reason
from .evaluation import Evaluation
from .metrics import registration as reg
from .metrics import registry
from .progress import progress_bar
from .results import MetricResult, PolicyRef, Severity, Status, TableInfo, ThreatModelRef, Timings
from .threads import held

VERSIONED = ("dagster_privacy", "numpy", "polars", "duckdb", "scikit-learn", "scipy", "lightgbm")


def versions() -> dict[str, str]:
    out = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _source_index(synthetic: pl.DataFrame, column: str, n_real: int) -> np.ndarray:
    if column not in synthetic.columns:
        raise tb.TableError(f"the source index column {column!r} is not a column of the synthetic table")
    s = synthetic.get_column(column)
    if not s.dtype.is_integer() or s.null_count():
        raise tb.TableError(f"the source index column {column!r} must hold whole row numbers without gaps")
    idx = s.to_numpy().astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n_real):
        raise tb.TableError(f"the source index column {column!r} points outside the real table's rows")
    return idx


def prepare(  # noqa: PLR0913
    real: Any,
    synthetic: Any,
    holdout: Any = None,
    *,
    key_columns: Sequence[str] | None = None,
    sensitive_columns: Sequence[str] | None = None,
    column_kinds: Mapping[str, str] | None = None,
    source_index_column: str | None = None,
    seed: int = 0,
    executor: Executor | str | None = None,
) -> tuple[EvaluationContext, dict[str, TableInfo]]:
    """Load and validate the tables and build the evaluation context (raises TableError)."""
    raw = {"real": load(real, role="real"), "synthetic": load(synthetic, role="synthetic")}
    if holdout is not None:
        raw["holdout"] = load(holdout, role="holdout")
    ignore = [source_index_column] if source_index_column else []
    schema = tb.infer_schema(raw["real"], column_kinds, exclude=ignore)
    tb.validate(raw, schema, ignore=ignore)
    schema.left_out = left_out_overlap(raw["real"], raw["synthetic"], schema)
    canon = {role: tb.canonical(df, schema, role=role) for role, df in raw.items()}
    tb.check_ranges(canon["real"], schema)
    rng = np.random.default_rng([seed, 46])
    schema.surrogates = surrogate_keys(
        raw["real"], raw["synthetic"], canon["real"], canon["synthetic"], schema, rng
    )
    schema.notes += list(schema.surrogates.values())
    order = {role: tb.content_order(df) for role, df in canon.items()}
    canon = {role: df[order[role]] for role, df in canon.items()}
    source = None
    if source_index_column:  # g maps input rows to input rows: restate it in content order
        g = _source_index(raw["synthetic"], source_index_column, raw["real"].height)
        real_rank = np.empty_like(order["real"])
        real_rank[order["real"]] = np.arange(order["real"].size)
        source = real_rank[g[order["synthetic"]]]
    for role in ("synthetic", "holdout"):
        if role in canon:
            unseen = tb.unseen_categories(canon["real"], canon[role], schema)
            if unseen:
                schema.notes.append(
                    f"{role}: categories absent from the real table in "
                    + ", ".join(f"{c} ({n} rows)" for c, n in unseen.items())
                )
    fingerprints = {role: tb.table_info(df) for role, df in raw.items()}
    ctx = EvaluationContext(
        canon["real"],
        canon["synthetic"],
        canon.get("holdout"),
        schema=schema,
        key_columns=key_columns,
        sensitive_columns=sensitive_columns,
        seed=seed,
        source_index=source,
        executor=executor_for(executor),
    )
    ctx.source_index_column = source_index_column
    ctx.input_rows = order
    # values the real tables never hold: a finding on every route (issue 55, data/new_values.py)
    ctx.new_values = new_values.new_values(canon["real"], canon.get("holdout"), canon["synthetic"], schema)
    return ctx, fingerprints


def evaluate(  # noqa: PLR0913
    real: TableLike,
    synthetic: TableLike,
    holdout: TableLike | None = None,
    *,
    metrics: Sequence[str] | None = None,
    policy: str | Path | pol.Policy | Mapping[str, Any] | None = "standard",
    key_columns: Sequence[str] | None = None,
    sensitive_columns: Sequence[str] | None = None,
    column_kinds: Mapping[str, str] | None = None,
    source_index_column: str | None = None,
    seed: int | None = None,
    progress: bool = True,
    executor: Executor | str | None = None,
    threads: int | None = None,
) -> Evaluation:
    """Evaluate a synthetic table against the real (training) table and, optionally, a holdout.

    Tables are polars/pandas frames, CSV/Parquet paths, ``FILE.duckdb:TABLE`` or SQL DuckDB runs.
    ``metrics`` = ids, each configured in the policy (None: every metric the policy configures).
    Arguments override the policy's threat model and seed. Bad input raises ``TableError``, a bad
    policy ``PolicyError``; a metric that raises becomes an ``error`` result. ``threads``: every pool
    of the evaluation at most this many (default: ``DAGSTER_PRIVACY_THREADS``, else the CPUs this
    process may use; threads.py).

    Args:
        real: the real (training) table.
        synthetic: the synthetic table under test.
        holdout: real records the generator never saw; None: no holdout (the metrics that need one
            are not_applicable).
        metrics: the metric ids to run, each configured in the policy; None: every metric the policy
            configures.
        policy: a preset name, a policy file, a ``Policy`` or its mapping; None: ``standard``.
        key_columns: the quasi-identifier columns; None: the policy's, else the metrics' defaults.
        sensitive_columns: the columns an inference attack guesses; None: the policy's, else the
            metrics' defaults.
        column_kinds: column → kind, over the policy's and the kinds inferred from the real table.
        source_index_column: a synthetic column holding each row's source row number in the real table;
            None: the policy's, else none.
        seed: the random seed; None: the policy's.
        progress: show a progress bar on stderr when it is a terminal.
        executor: where the neighbour blocks run: an executor (``RayExecutor``), ``"local"``, ``"auto"``
            or ``"ray://HOST:PORT"`` for Ray; None or ``"in-process"``: this process.
        threads: the thread pools' size; None: the default above.

    Returns:
        The judged ``Evaluation``: every result, the verdict, the fingerprints of the tables.

    Raises:
        TableError: a table that cannot be read or does not fit the real one.
        PolicyError: a policy that cannot be used, or a metric id it does not configure.

    Example:
        ``evaluate("real.parquet", "synthetic.parquet", holdout="holdout.parquet", policy="strict")``
    """
    t0 = time.perf_counter()
    plan = pol.resolve(
        policy,
        metrics,
        key_columns=key_columns,
        sensitive_columns=sensitive_columns,
        column_kinds=column_kinds,
        source_index_column=source_index_column,
        seed=seed,
    )
    return evaluate_plan(
        plan, real, synthetic, holdout, executor=executor, progress=progress, started=t0, threads=threads
    )


def evaluate_plan(
    plan: pol.EvaluationPlan,
    real: Any,
    synthetic: Any,
    holdout: Any = None,
    *,
    executor: Executor | str | None = None,
    progress: bool = False,
    started: float | None = None,
    threads: int | None = None,
) -> Evaluation:
    """Evaluate with a plan already resolved (``policy.resolve``): load, prepare, run, judge; every
    pool held at ``threads`` (threads.py). A plan whose entries are not its policy's (built by hand) is
    refused: the policy is the one signed, its loosenings waived (issue 54, review)."""
    checked = pol.load_policy(plan.policy)
    if any(plan.entries[m] != checked.entry_or_inform(m) for m in plan.ids):
        raise pol.PolicyError("the plan's entries are not its policy's: resolve the plan from the policy")
    plan = dataclasses.replace(
        plan, policy=checked
    )  # judged by the copy checked, not an object that may differ
    with held(threads):
        ctx, fingerprints = prepare(
            real,
            synthetic,
            holdout,
            key_columns=plan.key_columns,
            sensitive_columns=plan.sensitive_columns,
            column_kinds=plan.column_kinds,
            source_index_column=plan.source_index_column,
            seed=plan.seed,
            executor=executor,
        )
        return run_metrics(ctx, plan, fingerprints=fingerprints, progress=progress, started=started)


def _defaults(ctx: EvaluationContext) -> dict[str, list[str]]:
    """The key and sensitive columns the metrics took where the threat model named none (column names
    only; docs/metrics.md, "Threat model defaults"): what the report shows beside the named ones."""
    from .metrics.simulation import threat_columns

    if (ctx.key_columns and ctx.sensitive_columns) or not ctx.schema.names:
        return {}
    keys, sensitive = threat_columns(ctx)
    out = {"key_columns": keys} if not ctx.key_columns else {}
    return out | ({"sensitive_columns": sensitive} if not ctx.sensitive_columns else {})


def _distances(ctx: EvaluationContext) -> dict[str, Any]:
    """The NN distance histograms, or why there are none (a figure of ours that failed is no crash)."""
    try:
        return distance_summary(ctx).to_dict()
    except Aborted:
        raise
    except Exception as exc:
        return {"error": safe_reason(exc)}


def left_out_findings(schema: tb.Schema) -> list[str]:
    """Blocking findings about columns no metric evaluates: a synthetic column left out of every metric
    (identifier, empty, unsupported, excluded) whose values occur in the real table is published
    unexamined, so it fails the verdict (fail closed), whatever the metrics say."""
    reasons = dict(schema.excluded)
    out = []
    for name in schema.left_out_leaks:
        n = schema.left_out[name]
        what = (
            "its values could not be compared with the real column"
            if n is None
            else f"{n} of its synthetic values occur in the real table"
        )
        why = reasons.get(name, "excluded")
        judged = (
            " (judged an identifier, not a surrogate key: row numbers of the real table that link no "
            "synthetic row to the real row of its number pass)"
            if why.startswith("identifier")
            else ""
        )
        out.append(
            f"column {name!r} is left out of every metric ({why}) and {what}{judged}: drop it from the "
            "synthetic table or evaluate it (--column-kind)"
        )
    return out


#: the tables a metric may read to be compared with unseen real rows in the release's place
ONE_SIDE = frozenset({"real", "synthetic"})


def _not_run(plan: pol.EvaluationPlan) -> dict[str, str]:
    """The policy's gates a metric subset (``--metrics``, ``metrics=``) left out: running fewer gates
    than the policy passes more easily, so it reads as a waiver that asks for a sign-off (issue 54,
    review: a subset passed a leak that the policy's exposed_records fails, under the policy's name)."""
    left = [m for m, e in plan.policy.metrics.items() if e.blocks_on_failure and m not in plan.ids]
    if not left:
        return {}
    return {
        "metrics not run": f"the evaluation ran a subset of the policy's gates, without {', '.join(left)}"
    }


def _judged(
    plan: pol.EvaluationPlan, entry: Any, mid: str, result: MetricResult, n_real: int
) -> MetricResult:
    """A result judged by its policy entry at its level (the one decision rule: judge.py)."""
    return pol.judge(
        entry,
        result,
        fail_level=plan.fail_level_of(mid),
        pass_level=plan.pass_level,
        accepted_floor=max(
            plan.policy.accepted_floor_people, math.ceil(plan.policy.accepted_floor_share * n_real)
        ),
        accepted_excess=plan.policy.accepted_excess,
        accept_unrun=plan.policy.accept_unrun,
    )


def run_metrics(
    ctx: EvaluationContext,
    plan: pol.EvaluationPlan,
    *,
    fingerprints: dict[str, TableInfo] | None = None,
    progress: bool = False,
    started: float | None = None,
    free: bool = True,
) -> Evaluation:
    """Run the plan's metrics on a prepared context and judge each by its policy entry; with ``free``,
    what no metric left to run reads is freed before each metric (``free=False`` for a context other
    contexts borrow from: calibration's sweeps)."""
    t0 = time.perf_counter() if started is None else started
    specs = registry()
    ctx.plan([q for mid in plan.ids for q in specs[mid].queries])
    findings = left_out_findings(ctx.schema) + new_values.findings(
        new_values.blocked(ctx.new_values, plan.policy.waivers)
    )
    with progress_bar(progress, len(plan.ids), "privacy metrics") as step:
        judged_by, pending = _run_each(ctx, plan, free, step)
        # an advisory figure is compared with unseen real rows (advisory.py) unless a gate found
        # evidence of risk: the comparison decides between PASS and WARN, and a release failing a gate
        # is blocked whatever its advisories read (it is spared the second computation)
        failed = (Status.FAIL, Status.ERROR)
        blocked = bool(findings) or any(r.blocks and r.status in failed for r in judged_by.values())
        _compare_advisories(ctx, plan, judged_by, [] if blocked else pending)
    results = [judged_by[m] for m in plan.ids]
    waivers = {**plan.policy.waivers, **_not_run(plan)}
    verdict = Status.FAIL if findings else pol.verdict(results, plan.policy.required, waivers)
    if verdict is not Status.FAIL:  # a blocked release's lines are its gates': warnings stay plain
        results = [
            advisory.with_action(r, remediable=ctx.has("holdout"), monotone=specs[r.id].monotone)
            for r in results
        ]
    return Evaluation(
        results=results,
        verdict=verdict,
        required_risks=plan.policy.required,
        waivers=waivers,
        levels=_levels(plan, results),
        detection_floor=detection_floor(results, {r: ctx.n(r) for r in ("real", "synthetic") if ctx.has(r)}),
        findings=findings,
        seed=ctx.seed,
        policy=PolicyRef(name=plan.policy.name, preset=plan.policy.preset, sha256=plan.policy.sha256),
        threat_model=ThreatModelRef(
            key_columns=ctx.key_columns,
            sensitive_columns=ctx.sensitive_columns,
            source_index_column=ctx.source_index_column,
            defaults=_defaults(ctx),
        ),
        tables=fingerprints or {},
        schema=ctx.schema.to_json(),
        versions=versions(),
        distances=_distances(ctx),
        timings=Timings(
            total=time.perf_counter() - t0,
            encode=ctx.encode_seconds,
            metrics={r.id: r.seconds for r in results},
            queries=dict(ctx.query_seconds),
        ),
    )


def _run_each(
    ctx: EvaluationContext, plan: pol.EvaluationPlan, free: bool, step: Callable[[str], None]
) -> tuple[dict[str, MetricResult], list[str]]:
    """Each metric run and judged, in the plan's order; (results by id, the advisories over their
    thresholds, compared with unseen rows at the end)."""
    specs = registry()
    histograms = {(SPACE, side, "real") for side in SIDES}  # read by _distances, after the metrics
    judged_by: dict[str, MetricResult] = {}
    pending: list[str] = []
    for i, mid in enumerate(plan.ids):
        if free:  # what no metric left reads is freed (memory)
            left = [specs[m] for m in plan.ids[i:]]
            reads = {q[:3] for s in left for q in s.queries} | histograms
            ctx.release(spaces=any(s.spaces for s in left), queries=reads)
        step(mid)
        entry = plan.entry(mid)
        judged_by[mid] = _judged(plan, entry, mid, reg.run(specs[mid], ctx, entry.params), ctx.n("real"))
        if advisory.compared(judged_by[mid]) and ctx.has("holdout"):
            pending.append(mid)
        allocator.trim()  # the metric's temporaries freed in thread arenas: back to the system
    return judged_by, pending


def _compare_advisories(
    ctx: EvaluationContext, plan: pol.EvaluationPlan, judged_by: dict[str, MetricResult], pending: list[str]
) -> None:
    """Each pending advisory judged against the same figure on unseen real rows (the holdout as a
    release), or on its interval when it reads the holdout itself."""
    specs = registry()
    mirror: EvaluationContext | None = None  # made once, for the first advisory that needs it
    for mid in pending:
        if not set(specs[mid].needs) <= ONE_SIDE:  # it reads the holdout itself: judged on its interval
            judged_by[mid] = advisory.against_interval(judged_by[mid])
            continue
        mirror = mirror or ctx.holdout_as_release()
        entry = plan.entry(mid)
        again = _judged(plan, entry, mid, reg.run(specs[mid], mirror, entry.params), ctx.n("real"))
        judged_by[mid] = advisory.against_holdout(judged_by[mid], again)


def _levels(plan: pol.EvaluationPlan, results: list[MetricResult]) -> dict[str, Any]:
    """The levels the gates were judged at (the JSON's ``levels``)."""
    return {
        "false_alarm": plan.policy.false_alarm,
        "assurance": plan.policy.assurance,
        "gates": len(plan.gating),
        "fail_level_per_gate": plan.fail_level,  # of a gate of weight 1 (weighted Bonferroni)
        "gate_levels": {m: plan.fail_level_of(m) for m in plan.gating},
        "lineage_budget": plan.policy.lineage_budget,  # what a lineage's union may expose (lineage/)
        # gates judged on a point figure (proxies a policy made ERROR): no false-alarm bound
        "gates_without_bounds": sum(
            1
            for r in results
            if r.severity is Severity.ERROR
            and r.threshold is not None
            and r.decision is None
            and r.status in (Status.PASS, Status.FAIL)
        ),
    }


__all__ = ["evaluate", "evaluate_plan", "prepare", "run_metrics", "versions", "Status"]
