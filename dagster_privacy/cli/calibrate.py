"""`dagster-privacy calibrate`: a risk model (leaky, noisy copies, overfit) on the user's table, printed and
written to --out.

The response table goes to stdout; progress and the list of written files go to stderr. Bad input
exits 2 with one line (cli.main). The command is registered in cli.py by one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from ..calibration import (
    DEFAULT_FRACTIONS,
    DEFAULT_LEAK_LEVEL,
    DEFAULT_NEIGHBOURS,
    Calibration,
    CalibrationError,
    level_label,
)
from ..calibration.analysis import fmt_figure

_f = fmt_figure


def _floats(values: Sequence[str] | None, what: str) -> list[float] | None:
    return _numbers(values, what, float, "numbers, e.g. 0,0.05,0.2,1")


def _ints(values: Sequence[str] | None, what: str) -> list[int] | None:
    return _numbers(values, what, int, "whole numbers, e.g. 50,10,2,1")


def _numbers(values: Sequence[str] | None, what: str, kind: Callable[[str], Any], takes: str) -> Any:
    from .args import UsageFailure, split_list

    items = split_list(values)
    if not values:
        return None
    if not items:
        raise UsageFailure(f"{what} takes {takes}, not an empty list")
    try:
        return [kind(v) for v in items]
    except ValueError:
        raise UsageFailure(f"{what} takes {takes}") from None


def _title(cal: Calibration, risk_model: str, name: str, sd: float) -> str:
    """The printed table's title: the risk model, the table and its split, the levels and repeats."""
    s = cal.sweep
    model = {
        "leaky": "Leaky risk model (seed 004 §5.1.1)",
        "noisy": f"Noisy-copy risk model (leaked rows moved by N(0, {sd:g}·sd))",
        "overfit": "Overfit risk model (knn_sampler)",
    }[risk_model]
    return (
        f"{model} on {name}: {cal.table['rows']} rows → training "
        f"{s.sizes.get('real')}, control {s.sizes.get('holdout')}; {s.parameter} ∈ "
        f"{{{', '.join(f'{v:g}' for v in s.levels)}}}; "
        f"{len(s.seeds)} repeat(s); policy {cal.policy.name}"
    )


def print_calibration(cal: Calibration, *, title: str | None = None) -> None:
    """The seed-004-Table-2-style response table (and the outlier table, if any) on stdout."""
    from rich.console import Console

    s, leak = cal.sweep, cal.leak_level
    leak_label = None
    if leak is not None:
        leak_label = f"{leak:.0%} leak" if s.leaks else f"{s.parameter}={level_label(leak)}"
    console = Console(width=max(150, Console().width))
    console.print(_response_table(cal, title or "response to inserted risk", leak_label or ""))
    _print_findings(console, cal, leak_label)
    for o in cal.outliers:
        console.print(_outlier_table(cal, o, leak_label))


def _response_table(cal: Calibration, title: str, leak_label: str) -> Any:
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c in cal.response_head(leak_label):
        t.add_column(c, overflow="fold", no_wrap=c in ("metric", "threshold"))
    for r, cells in cal.response_cells(_f, _yes):
        note = f"[yellow]{cells[-1]}[/]" if cells[-1].startswith("overlaps") else cells[-1]
        t.add_row(r.id, *cells[:-1], f"[red]FLAG[/] {note}" if r.flag else note)
    return t


def _print_findings(console: Any, cal: Calibration, leak_label: str | None) -> None:
    """The flags, the loosened gates, the metrics that cannot tell the leak from none, the floor."""
    flagged, thr = cal.flagged, cal.thresholds or {}
    console.print(
        f"{len(flagged)} of {len(cal.responses)} metrics flagged"
        + (f": {', '.join(r.id for r in flagged)}" if flagged else "")
    )
    by_id = {r.id: r for r in cal.responses}
    overlap = [t.id for t in thr.values() if not t.separates and not by_id[t.id].flag and not t.demoted]
    loosened = cal.loosened()  # the lines the calibrated policy's YAML header lists
    console.print(
        f"{len(loosened)} gate(s) of the input policy loosened" + (":" if loosened else ""), highlight=False
    )
    for line in loosened:
        console.print(f"  {line}", highlight=False, markup=False)
    if overlap:
        console.print(
            f"{len(overlap)} metric(s) cannot tell {leak_label or 'the leak'} from no risk on this data "
            f"(calibrated to catch the leak, clean releases may fail; or kept): {', '.join(overlap)}"
        )
    floor = cal.detection_floor
    console.print(
        "detection floor on this data: "
        + (
            "no exact-match gate can catch verbatim copies"
            if floor is None
            else f"verbatim copies of {floor:.3f} of the training rows are caught with 95 % probability"
        ),
        highlight=False,
    )


def _outlier_table(cal: Calibration, o: Any, leak_label: str | None) -> Any:
    """The response without the most outlying rows, against the full table."""
    from rich.table import Table

    ot = Table(
        title=f"without the {o.fraction:.0%} most outlying rows (LOF, {o.removed} rows removed): "
        "change against the full table",
        title_justify="left",
    )
    at_leak = [leak_label, f"Δ {leak_label}"] if leak_label else []
    for c in ("metric", "no risk", "Δ no risk", *at_leak, "max risk", "Δ max risk"):
        ot.add_column(c)
    base = {r.id: r for r in cal.responses}
    for r in o.responses:
        b = base[r.id]
        ot.add_row(
            r.id,
            _f(r.no_risk),
            _d(r.no_risk, b.no_risk),
            *([_f(r.at_leak), _d(r.at_leak, b.at_leak)] if leak_label else []),
            _f(r.max_risk),
            _d(r.max_risk, b.max_risk),
        )
    return ot


def _yes(flag: bool, known: bool) -> str:
    if not known:
        return "—"
    return "yes" if flag else "[red]no[/]"


def _d(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a - b:+.3f}"


def _check_outputs(out_dir: str, real: str | None) -> None:
    """The output folder and files checked like evaluate's outputs, before any work: a folder that is a
    file, files that are not regular files (a device; a symlink is replaced, never followed), the input
    table, or what cannot be written — one line, exit 2."""
    import os
    from pathlib import Path

    from ..calibration.outcome import OUTPUT_NAMES
    from .args import UsageFailure

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageFailure(f"--out {out_dir}: not a directory")
    base = out if out.exists() else next((p for p in out.resolve().parents if p.exists()), Path("/"))
    if not os.access(base, os.W_OK):
        raise UsageFailure(f"--out {out_dir}: not writable")
    real_path = Path(real.rpartition(":")[0] if real and ".duckdb:" in real.lower() else real or "")
    for name in OUTPUT_NAMES:
        p = out / name
        if p.exists() and not p.is_symlink() and not p.is_file():
            raise UsageFailure(f"--out {out_dir}: {name} exists and is not a regular file")
        # a symlink is replaced, never followed; a name that is the input itself would be replaced
        if real and real_path.is_file() and p.is_file() and not p.is_symlink() and p.samefile(real_path):
            raise UsageFailure(f"--out {out_dir}: {name} is the input table; write elsewhere")
        if p.is_file() and not p.is_symlink() and not _replaceable(p):
            raise UsageFailure(f"--out {out_dir}: {name} cannot be replaced (immutable or not writable)")


def _replaceable(path: object) -> bool:
    """An existing output can be written (an immutable or append-only file cannot be replaced: root's
    permissions do not help there). Opening it for appending changes nothing in it."""
    import fcntl
    import os

    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_APPEND)
    except OSError:
        return False
    try:  # FS_IOC_GETFLAGS: refuse append-only (0x20) and immutable (0x10) files where the call works
        import array

        flags = array.array("l", [0])
        fcntl.ioctl(fd, 0x80086601, flags, True)
        return not flags[0] & 0x30
    except OSError:
        return True  # the filesystem keeps no such flags
    finally:
        os.close(fd)


@click.command("calibrate")
@click.option("--real", default=None, help="the table to calibrate on: CSV, Parquet or FILE.duckdb:TABLE")
@click.option("--demo", is_flag=True, help="calibrate on the shipped demo data (UCI Adult subset) instead")
@click.option(
    "--policy",
    default="standard",
    show_default=True,
    help="preset name or policy YAML: its metrics are calibrated, its thresholds the starting point",
)
@click.option("--metrics", "metric_ids", multiple=True, help="only these metric ids (comma-separated)")
@click.option(
    "--fractions",
    multiple=True,
    help=f"leak fractions f in [0, 1] (default {','.join(f'{v:g}' for v in DEFAULT_FRACTIONS)}); "
    "0 and the leak level are always added",
)
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="seeded repeats")
@click.option(
    "--leak-level",
    type=click.FloatRange(0, 1, min_open=True),
    default=DEFAULT_LEAK_LEVEL,
    show_default=True,
    help="the leak a calibrated threshold must catch",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0.5, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="probability that the leak exceeds the threshold",
)
@click.option(
    "--outliers",
    multiple=True,
    help="also repeat without these fractions of outliers (LOF), e.g. 0.01,0.05 (seed 004 §5.2.1)",
)
@click.option(
    "--risk-model",
    type=click.Choice(["leaky", "noisy", "overfit"]),
    default="leaky",
    show_default=True,
    help="copies of training rows (leaky), near-duplicates of them (noisy) or an overfitting "
    "k-nearest-neighbour generator (overfit)",
)
@click.option(
    "--noise",
    type=click.FloatRange(0, 10),
    default=None,
    help="noisy: each numerical cell of a leaked row moves by N(0, noise × the column's sd) "
    "(default 0.05, at most 10)",
)
@click.option(
    "--neighbours",
    multiple=True,
    help="overfit: neighbourhood sizes by increasing memorisation (default 50,20,10,5,2,1; 1 = copies)",
)
@click.option(
    "--seed", type=click.IntRange(0, 2**32 - 1), default=None, help="first seed (default: the policy's)"
)
@click.option("--key-columns", multiple=True, help="quasi-identifiers the attacker knows")
@click.option("--sensitive-columns", multiple=True, help="attributes the attacker wants to infer")
@click.option("--column-kind", multiple=True, help="COLUMN=numerical|categorical|binary|exclude")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=".",
    show_default=True,
    help="directory for the plots, tables and calibrated policy",
)
def calibrate_command(  # noqa: PLR0913
    real: str | None,
    demo: bool,
    policy: str,
    metric_ids: tuple[str, ...],
    fractions: tuple[str, ...],
    repeats: int,
    leak_level: float,
    confidence: float,
    outliers: tuple[str, ...],
    risk_model: str,
    noise: float | None,
    neighbours: tuple[str, ...],
    seed: int | None,
    key_columns: tuple[str, ...],
    sensitive_columns: tuple[str, ...],
    column_kind: tuple[str, ...],
    out_dir: str,
) -> None:
    """Insert known risk (seed 004 §5.1.1 leaky model) and see which metrics respond; fit thresholds."""
    import time

    from ..calibration import calibrate
    from .args import UsageFailure, parse_kinds, split_list

    if demo == (real is not None):
        raise UsageFailure("give exactly one of --real INPUT and --demo")
    if noise is not None and risk_model != "noisy":
        raise UsageFailure("--noise applies to --risk-model noisy only")
    if neighbours and risk_model != "overfit":
        raise UsageFailure("--neighbours applies to --risk-model overfit only")
    _check_outputs(out_dir, real)  # before the run: a bad folder is exit 2 now, not after minutes
    source: object = real
    name = real or "demo data"
    if demo:
        from ..demo import CITATION, load_demo

        source = load_demo()
        click.echo(f"demo data: {CITATION}", err=True)
    t0 = time.perf_counter()
    try:
        cal = calibrate(
            source,
            policy=policy,
            metrics=split_list(metric_ids),
            fractions=_floats(fractions, "--fractions") or DEFAULT_FRACTIONS,
            repeats=repeats,
            seed=seed,
            leak_level=leak_level,
            confidence=confidence,
            outliers=_floats(outliers, "--outliers") or (),
            key_columns=split_list(key_columns),
            sensitive_columns=split_list(sensitive_columns),
            column_kinds=parse_kinds(column_kind),
            progress=True,
            risk_model=risk_model,
            noise=0.05 if noise is None else noise,  # the default where it applies
            neighbours=_ints(neighbours, "--neighbours") or DEFAULT_NEIGHBOURS,
        )
    except CalibrationError as exc:
        raise UsageFailure(str(exc)) from None
    print_calibration(cal, title=_title(cal, risk_model, name, 0.05 if noise is None else noise))
    try:
        paths = cal.write(out_dir)
    except OSError as exc:  # an output that cannot be written is bad input: one line, exit 2
        raise UsageFailure(
            f"--out {out_dir}: cannot write the calibration ({exc.strerror or 'error'})"
        ) from None
    for what, p in paths.items():
        click.echo(f"{what}: {p}", err=True)
    click.echo(f"calibration took {time.perf_counter() - t0:.1f} s", err=True)
