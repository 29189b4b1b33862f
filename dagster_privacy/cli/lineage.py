"""``dagster-privacy lineage show|withdraw``, and what ``evaluate --lineage`` does (issue 56).

``evaluate … --lineage NAME --ledger FILE|URI`` judges the candidate alone and on the union with every
earlier release of the lineage; the lineage's decision joins the verdict (``blocked_by:
privacy_lineage``). With ``--record`` the candidate is recorded: ``published`` when the verdict lets it
publish (exit 0), ``reserved`` when it awaits a sign-off (it counts from now on), ``refused`` when it
fails (a look at the count, no exposure counted).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import click

from .args import UsageFailure

LEDGER_HELP = (
    "the ledger: a file (*.duckdb) or a postgresql:// URI (its keys: $DAGSTER_HOME or ~/.dagster_privacy)"
)


def check_options(
    lineage: str | None, ledger: str | None, record: bool, inputs: Sequence[str | None]
) -> None:
    """Before the evaluation: a lineage needs a ledger, --record needs a lineage, the ledger is no input."""
    from ..data.atomic import input_files
    from ..lineage import FileLedger, LineageError, open_ledger, valid_lineage

    if (lineage is None) != (ledger is None):
        raise UsageFailure("--lineage and --ledger go together: the lineage's name and the ledger file")
    if record and lineage is None:
        raise UsageFailure("--record needs --lineage and --ledger")
    if lineage is None or ledger is None:
        return
    try:
        valid_lineage(lineage)
        led = open_ledger(ledger)
    except LineageError as exc:
        raise UsageFailure(f"--ledger/--lineage: {exc}") from None
    if isinstance(led, FileLedger) and any(f.resolve() == led.path.resolve() for f in input_files(inputs)):
        raise UsageFailure(
            f"--ledger {ledger} is one of the input tables; keep the ledger in a file of its own"
        )
    try:  # before the evaluation: a ledger that cannot be read or written is bad input, not a lost verdict
        led.lineages()
    except LineageError as exc:
        raise UsageFailure(f"--ledger: {exc}") from None
    if record and isinstance(led, FileLedger) and not os.access(led.path.parent, os.W_OK):
        raise UsageFailure(f"--ledger {ledger}: its folder is not writable (the release is recorded there)")


def judged(ev: Any, lineage: str, ledger: str, release_id: str, record: bool, awaiting: bool) -> Any:
    """The evaluation with its lineage decision; recorded (and, when it may publish, committed as
    published) with ``record``."""
    from ..lineage import LineageError, commit, judge_lineage, open_ledger

    try:
        led = open_ledger(ledger)
        out = judge_lineage(ev, lineage=lineage, ledger=led, release_id=release_id, record=record)
        recorded = (out.lineage or {}).get("recorded") or {}
        if record and recorded.get("event") == "reserved" and not awaiting:
            commit(led, lineage, release_id, "published")
            recorded["event"] = "published"
    except LineageError as exc:
        raise UsageFailure(f"lineage: {exc}") from None
    return out


@click.group("lineage")
def lineage_command() -> None:
    """The releases of one real table: what each exposed, and the union."""


@lineage_command.command("show")
@click.argument("name")
@click.option("--ledger", required=True, help=LEDGER_HELP)
def show(name: str, ledger: str) -> None:
    """Print the lineage's releases (chain checked): status, people each exposed and added."""
    from ..lineage import LineageError, open_ledger, releases, valid_lineage

    try:
        valid_lineage(name)
        led = open_ledger(ledger)  # a reader: no lock (each read is one consistent snapshot)
        entries = led.entries(name, led.key(name))
    except LineageError as exc:
        raise UsageFailure(f"lineage: {exc}") from None
    rel = releases(entries)
    if not rel:
        click.echo(f"lineage {name}: no release recorded in {led.where}")
        return
    click.echo(f"lineage {name}: {len(rel)} release(s) in {led.where}, hash chain intact")
    for r in rel:
        f = r.first.figures()
        click.echo(
            f"  {r.first.look:>3}  {r.release_id}  {r.status:<9}  recorded {r.first.recorded_at}  "
            f"exposed {f.get('candidate_people')} (new {f.get('added_people')})  lineage then: "
            f"{f.get('status')}, {f.get('people')} people, chance {float(f.get('chance') or 0):.1f}"
        )


@lineage_command.command("withdraw")
@click.argument("name")
@click.argument("release_id")
@click.option("--ledger", required=True, help=LEDGER_HELP)
def withdraw(name: str, release_id: str, ledger: str) -> None:
    """Record a release as withdrawn: it still counts (a record copied once stays copied)."""
    from ..lineage import LineageError, commit, open_ledger

    try:
        entry = commit(open_ledger(ledger), name, release_id, "withdrawn")
    except LineageError as exc:
        raise UsageFailure(f"lineage: {exc}") from None
    click.echo(f"lineage {name}: release {release_id} withdrawn (ledger row {entry.seq}); it still counts")


__all__ = ["check_options", "judged", "lineage_command"]
