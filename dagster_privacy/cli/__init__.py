"""`dagster-privacy`: evaluate | demo | metrics (and the commands later modules add).

Exit codes: 0 the verdict is pass or warn; 1 the verdict is fail; 2 bad input or usage (one line on
stderr, no traceback); 4 the gates pass and the policy requires a privacy officer's sign-off
("awaiting sign-off": not a failure). Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from ..decision.policy import PolicyError
from ..engine.executors import ExecutorError
from ..errors import TableError, first_line
from ..evaluation import Evaluation
from ..results import Status
from .args import UsageFailure, parse_kinds, split_list
from .calibrate import calibrate_command
from .console import console_command
from .governance import audit_command, signoff_command, withdraw_command
from .lineage import check_options, judged, lineage_command
from .remediate import remediate_command
from .terminal import print_table as print_table  # the public table printer


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dagster-privacy")
def cli() -> None:
    """Privacy gates for synthetic-data releases."""


@cli.command()
@click.option(
    "--real", required=True, help="the training table: CSV, Parquet, FILE.duckdb:TABLE or one SELECT"
)
@click.option("--synthetic", required=True, help="the release under test")
@click.option("--holdout", default=None, help="records of the same population the generator never saw")
@click.option("--metrics", "metric_ids", multiple=True, help="metric ids, comma-separated, repeatable")
@click.option("--policy", default="standard", show_default=True, help="preset name or policy YAML")
@click.option("--key-columns", multiple=True, help="quasi-identifiers the attacker knows")
@click.option("--sensitive-columns", multiple=True, help="attributes the attacker wants to infer")
@click.option("--column-kind", multiple=True, help="COLUMN=numerical|categorical|binary|exclude")
@click.option("--source-index-column", default=None, help="synthetic column: the real row each came from")
@click.option(
    "--seed", type=click.IntRange(0, 2**32 - 1), default=None, help="random seed (default: the policy's)"
)
@click.option("--json", "json_out", type=click.Path(dir_okay=False), default=None, help="write the JSON here")
@click.option(
    "--report", "report_out", type=click.Path(dir_okay=False), default=None, help="write the HTML report here"
)
@click.option(
    "--threads",
    type=click.IntRange(1, 4096),
    default=None,
    help="threads of every pool (executor, BLAS, OpenMP, Arrow, DuckDB, polars) [default: "
    "$DAGSTER_PRIVACY_THREADS, else the CPUs this process may use: affinity and cgroup quota]",
)
@click.option(
    "--release-id",
    default=None,
    help="the release id the report names [default: sha256:<16 hex> of the synthetic table, as in Dagster]",
)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS",
    help="run the neighbour blocks on Ray: local (start one here), auto (join this machine's cluster) "
    "or ray://HEAD:10001",
)
@click.option("--lineage", default=None, help="judge the release with every earlier release of this lineage")
@click.option("--ledger", default=None, help="the lineage's ledger: a file (*.duckdb) or a postgresql:// URI")
@click.option(
    "--record", is_flag=True, help="record the release in the lineage (published, reserved or refused)"
)
def evaluate(  # noqa: PLR0913
    real: str,
    synthetic: str,
    holdout: str | None,
    metric_ids: tuple[str, ...],
    policy: str,
    key_columns: tuple[str, ...],
    sensitive_columns: tuple[str, ...],
    column_kind: tuple[str, ...],
    source_index_column: str | None,
    seed: int | None,
    json_out: str | None,
    report_out: str | None,
    release_id: str | None,
    threads: int | None,
    ray_address: str | None,
    lineage: str | None,
    ledger: str | None,
    record: bool,
) -> None:
    """Evaluate a synthetic table; exit 1 when the verdict is fail, 4 when it awaits a sign-off."""
    from ..data.release_ids import ReleaseIdError, valid_release_id
    from ..engine.executors import RayExecutor
    from ..evaluate import evaluate as run

    if threads is not None:
        _restart_for_threads(threads)
    if release_id is not None:
        try:
            valid_release_id(release_id)
        except ReleaseIdError as exc:
            raise UsageFailure(f"--release-id: {exc}") from None

    check_options(lineage, ledger, record, (real, synthetic, holdout))
    # before the evaluation: an unwritable output is bad input, not a lost verdict
    writable("--json", json_out, inputs=(real, synthetic, holdout), suffixes=(".json",), marker=FORMAT_MARK)
    writable(
        "--report",
        report_out,
        inputs=(real, synthetic, holdout),
        suffixes=(".html", ".htm"),
        marker=b'content="dagster-privacy"',
    )
    executor = None
    if ray_address and _ENTRY and RAY_SUPERVISED_ENV not in os.environ:
        _supervise_ray(ray_address)  # never returns: the child evaluates, this process tells its end
    if ray_address:
        executor = RayExecutor(ray_address)
        executor.connect()  # an unreachable cluster is bad input (exit 2), before any table is read
    ev = run(
        real,
        synthetic,
        holdout,
        metrics=split_list(metric_ids),
        policy=policy,
        key_columns=split_list(key_columns),
        sensitive_columns=split_list(sensitive_columns),
        column_kinds=parse_kinds(column_kind),
        source_index_column=source_index_column,
        seed=seed,
        progress=True,
        executor=executor,
        threads=threads,
    )
    if lineage and ledger:
        from ..data.release_ids import default_release_id

        release = release_id or default_release_id(ev.sha256() or "")
        awaiting = _requires_signoff(policy) or bool(ev.waivers)
        ev = judged(ev, lineage, ledger, release, record, awaiting)
    finish(
        ev,
        json_out=json_out,
        report_out=report_out,
        policy=policy,
        release_id=release_id,
        inputs=(real, synthetic, holdout),
    )


#: the first bytes of an evaluation JSON (evaluation.FORMAT)
FORMAT_MARK = b'"format": "dagster-privacy/evaluation/'


def writable(
    option: str,
    target: str | None,
    *,
    inputs: Sequence[str | None] = (),
    suffixes: Sequence[str],
    marker: bytes,
) -> None:
    """Refuse an output path (exit 2) that is an input table, lacks the output's suffix, is not a regular
    file (a device, a symlink), exists without being an output of ours, or whose directory does not
    exist or cannot be written. An input named by SQL cannot be matched by path: the suffix and the
    marker keep a data file from being overwritten."""
    if not target:
        return
    path = Path(target)
    if path.suffix.lower() not in suffixes:
        raise UsageFailure(f"{option} {target}: give a {' or '.join(suffixes)} file")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise UsageFailure(f"{option} {target}: not a regular file")
    resolved = path.resolve()
    named = [src.rpartition(":")[0] if ".duckdb:" in src.lower() else src for src in inputs if src]
    if any(Path(src).is_file() and Path(src).resolve() == resolved for src in named):
        raise UsageFailure(f"{option} {target} is one of the input tables; write the output elsewhere")
    if path.exists():
        with path.open("rb") as f:
            if marker not in f.read(4096):
                raise UsageFailure(
                    f"{option} {target} exists and is not an output of dagster-privacy; remove it "
                    "or write elsewhere"
                )
    parent = resolved.parent
    if not parent.is_dir():
        raise UsageFailure(f"{option} {target}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (Path(target).exists() and not os.access(target, os.W_OK)):
        raise UsageFailure(f"{option} {target}: not writable")


def finish(
    ev: Evaluation,
    *,
    json_out: str | None = None,
    report_out: str | None = None,
    policy: str | None = None,
    release_id: str | None = None,
    inputs: Sequence[object] = (),
) -> None:
    """Print the table, write the outputs (never onto one of ``inputs``), exit with the verdict's code
    (2 if an output fails)."""
    from ..data.atomic import write_bytes_atomically

    print_table(ev)
    try:
        if json_out:
            write_bytes_atomically(json_out, ev.to_json().encode("utf-8"), inputs=inputs)
            click.echo(f"JSON written to {json_out}", err=True)
        if report_out:
            from ..decision.policy import load_policy
            from ..report import write_report

            write_report(
                ev,
                report_out,
                policy=load_policy(policy) if policy else None,
                release_id=release_id,
                inputs=inputs,
            )
            click.echo(f"report written to {report_out}", err=True)
    except OSError as exc:
        raise UsageFailure(
            f"cannot write an output ({type(exc).__name__}); the verdict was {ev.verdict.value}"
        ) from None
    _verdict_reached()
    if ev.verdict is not Status.FAIL and (_requires_signoff(policy) or ev.waivers):
        click.echo(
            f"awaiting sign-off: the verdict is {ev.verdict.value} and the policy requires a privacy "
            "officer's sign-off before publication (exit 4)",
            err=True,
        )
        sys.exit(EXIT_AWAITING_SIGNOFF)
    sys.exit(1 if ev.verdict is Status.FAIL else 0)


#: the exit code of a verdict that passes its gates but awaits a person's sign-off (not a failure)
EXIT_AWAITING_SIGNOFF = 4


def _requires_signoff(policy: str | None) -> bool:
    from ..decision.policy import load_policy

    return bool(policy) and bool(load_policy(policy).require_signoff)


#: set in the child a --ray run is supervised from: the descriptor it reports a verdict on
RAY_SUPERVISED_ENV = "DAGSTER_PRIVACY_RAY_VERDICT_FD"


def _verdict_reached() -> None:
    """Tell the supervising parent (a --ray run) that this process computed a verdict: its exit 0 / 1
    is the verdict's, not Ray's core ending the process when its cluster vanished."""
    fd = os.environ.get(RAY_SUPERVISED_ENV)
    if fd and fd.isdigit():
        with contextlib.suppress(OSError):  # the parent went away: nothing to tell
            os.write(int(fd), b"verdict")


def _supervise_ray(address: str) -> None:
    """A --ray evaluation runs in a child process: when its cluster's head is lost from outside (every
    process of it killed at once), Ray's core ends the process with exit 1 — a failing verdict's code —
    after 10 to 60 s and a page of its own logs. Here the parent tells: a child that exits without
    having reached a verdict lost its cluster, which is one line of ours and exit 2 (issue 44, break 8).
    The child's standard error is held and replayed when it reached a verdict or said why it stopped."""
    import subprocess
    import tempfile

    read, write = os.pipe()
    env = {**os.environ, RAY_SUPERVISED_ENV: str(write)}
    sys.stdout.flush()
    with tempfile.TemporaryFile() as held:
        child = subprocess.Popen(
            [sys.executable, "-c", _RESTART, *sys.argv[1:]], env=env, pass_fds=(write,), stderr=held
        )
        os.close(write)
        code = child.wait()
        with os.fdopen(read, "rb") as r:
            reached = r.read() == b"verdict"
        held.seek(0)
        text = held.read().decode("utf-8", errors="replace")
    ours = [line for line in text.splitlines() if line.startswith("dagster-privacy:")]
    if reached:
        sys.stderr.write(text)
        sys.exit(code)
    if ours:  # the child said why it stopped: that line, not the page of Ray's own logs around it
        sys.stderr.write(ours[-1] + "\n")
        sys.exit(code if code else 2)
    click.echo(
        f"dagster-privacy: error: the Ray cluster at {address!r} was lost mid-run (exit {code} without a "
        "verdict: its head or this node's raylet stopped): no verdict",
        err=True,
    )
    sys.exit(2)


@cli.command()
@click.option(
    "--workdir",
    type=click.Path(file_okay=False),
    default=None,
    help="where the embedded DuckDB, publication and Dagster instance go (default .dagster_privacy/demo)",
)
@click.option(
    "--database",
    default=None,
    help="postgresql://host:port/db to hold the demo tables instead of the embedded DuckDB",
)
@click.option(
    "--publish-target",
    default=None,
    help="postgresql://host:port/db (another database) to publish to instead of a DuckDB file",
)
def demo(workdir: str | None, database: str | None, publish_target: str | None) -> None:
    """The demo release: the Dagster pipeline on the shipped demo data (UCI Adult subset, CC BY 4.0);
    v1 (clean) is published, v2 (30 % of the training rows copied) is blocked. Exit 1 otherwise."""
    from ..data.postgres import is_postgres
    from ..pipeline.demo_run import DEMO_DIR, run_demo
    from .args import UsageFailure

    for name, value in (("--database", database), ("--publish-target", publish_target)):
        if value is not None and not is_postgres(value):
            raise UsageFailure(f"{name} takes a postgresql:// URI")
    outcome = run_demo(
        Path(workdir) if workdir else DEMO_DIR,
        echo=click.echo,
        database=database,
        publish_target=publish_target,
    )
    sys.exit(0 if outcome.as_expected else 1)


@cli.command("metrics")
def list_metrics() -> None:
    """List the registered metrics: id, family, source, tables needed, parameters."""
    from rich.console import Console
    from rich.table import Table

    from ..metrics import registry

    t = Table(title="registered privacy metrics")
    for col in ("id", "family", "source", "risk", "needs", "parameters"):
        t.add_column(col, overflow="fold")
    for s in registry().values():
        params = ", ".join(f"{k}={v!r}" for k, v in s.params.items())
        t.add_row(s.id, s.family, s.source, s.risk, ",".join(s.needs), params)
    Console(width=max(120, Console().width)).print(t)


cli.add_command(signoff_command)  # governance.py; the governance commands import Dagster only when run
cli.add_command(audit_command)
cli.add_command(withdraw_command)
cli.add_command(calibrate_command)  # calibrate.py
cli.add_command(console_command)  # console.py
cli.add_command(remediate_command)  # remediate.py
cli.add_command(lineage_command)  # lineage.py


#: set by ``main`` when this process is the command itself (never in a test's CliRunner)
_ENTRY = False
#: how a restart runs the command: the working directory never joins sys.path (``python -m`` and
#: ``-c`` would put it first, and a duckdb.py beside the data would run)
_RESTART = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "sys.argv[0] = 'dagster-privacy'; from dagster_privacy.cli import main; main()"
)


def _restart_for_threads(threads: int) -> None:
    """polars sized its pool when the package was imported: a ``--threads N`` it does not match
    restarts this process with ``POLARS_MAX_THREADS`` and ``DAGSTER_PRIVACY_THREADS`` at N (click has
    parsed N: the last ``--threads`` given, a valid number)."""
    from ..threads import THREADS_ENV

    n = str(threads)
    if not _ENTRY or (os.environ.get("POLARS_MAX_THREADS") == n and os.environ.get(THREADS_ENV) == n):
        return
    # the pools that size themselves when their library loads, before any limit of ours applies: BLAS
    # on one thread (threads.py), OpenMP and numba at N
    pools = {"POLARS_MAX_THREADS": n, THREADS_ENV: n, "OMP_NUM_THREADS": n, "NUMBA_NUM_THREADS": n}
    env = {**os.environ, **pools, "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-c", _RESTART, *sys.argv[1:]], env)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: one clear line and exit 2 for bad input, never a traceback."""
    if not os.environ.get("DAGSTER_PRIVACY_DEBUG"):  # library warnings print source lines, maybe values
        import warnings

        warnings.simplefilter("ignore")
    global _ENTRY
    _ENTRY = argv is None
    try:
        cli.main(
            args=list(argv) if argv is not None else None, prog_name="dagster-privacy", standalone_mode=False
        )
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("dagster-privacy: aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"dagster-privacy: error: {exc.format_message()}", err=True)
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except (TableError, PolicyError, ExecutorError, FileNotFoundError) as exc:
        click.echo(f"dagster-privacy: error: {first_line(str(exc))}", err=True)
        sys.exit(2)
    except Exception as exc:
        if os.environ.get("DAGSTER_PRIVACY_DEBUG"):
            raise
        from ..errors import safe_reason

        click.echo(
            f"dagster-privacy: internal error: {safe_reason(exc)} "
            "(DAGSTER_PRIVACY_DEBUG=1 shows the traceback)",
            err=True,
        )
        sys.exit(3)
    sys.exit(0)


if __name__ == "__main__":  # pragma: no cover
    main()
