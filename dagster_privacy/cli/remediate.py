"""`dagster-privacy remediate`: the synthetic table without the rows that expose real records, written
to a new file and evaluated again (issue 45). The rows are dropped by content (remediate.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .args import UsageFailure, parse_kinds, split_list

#: the metrics whose flagged rows are dropped by default: the rows that expose a rare real record
DEFAULT_DROP = ("exposed_records",)


def _output(out: str, inputs: tuple[str | None, ...]) -> Path:
    """A new CSV or Parquet file: never an existing file (it may be someone's data), never an input."""
    path = Path(out)
    if path.suffix.lower() not in (".csv", ".parquet"):
        raise UsageFailure(f"--out {out}: give a .csv or .parquet file")
    if path.exists() or path.is_symlink():
        raise UsageFailure(f"--out {out} exists; remediate writes a new file, never over one")
    if any(src and Path(src).exists() and Path(src).resolve() == path.resolve() for src in inputs):
        raise UsageFailure(f"--out {out} is one of the input tables")
    if not path.resolve().parent.is_dir():
        raise UsageFailure(f"--out {out}: the directory {path.resolve().parent} does not exist")
    return path


#: how many times remediation drops and counts again: a copy's second synthetic row within its stratum
#: is flagged only once the first is gone (the count names each record's nearest row)
MAX_ROUNDS = 5


def _until_none_flagged(first: Any, synthetic: Any, drop: list[str], again: Callable[[Any], Any]) -> Any:
    """Drop the flagged rows, count again on what is left, and drop again until no row is flagged
    (issue 55: the re-evaluation may not pass while a counted copy remains)."""
    from ..remediate import flagged_rows, remediate

    ev, current = first, synthetic
    for _ in range(MAX_ROUNDS):
        try:
            if not flagged_rows(ev, drop).size:
                break
            current = remediate(ev, current, metrics=drop)
        except ValueError as exc:
            raise UsageFailure(f"cannot remediate: {exc}") from None
        ev = again(current)
    return current if current is not synthetic else remediate(ev, synthetic, metrics=drop)


def _as_given(first: Any, synthetic: str, kept: Any, out: Path) -> Any:
    """The kept rows as the input spells them (issue 57: a CSV's yes/no came out true/false) when the
    output has the input's format; else the rows as evaluated."""
    import polars as pl

    from ..data.loading import as_given, load
    from ..remediate import kept_rows

    same = Path(synthetic).suffix.lower() == out.suffix.lower()
    try:
        raw = as_given(synthetic) if same else None
        original = load(synthetic, role="synthetic") if raw is not None else None
    except Exception:  # noqa: BLE001 - read as evaluated (the file was read once already): the typed rows
        return kept
    if raw is None or original is None:
        return kept
    if raw.height != original.height or raw.columns != original.columns:  # never misaligned
        return kept
    return raw.filter(pl.Series(kept_rows(first, original, kept)))


@click.command("remediate")
@click.option(
    "--real", required=True, help="the training table: CSV, Parquet, FILE.duckdb:TABLE or one SELECT"
)
@click.option("--synthetic", required=True, help="the release to remediate")
@click.option("--holdout", required=True, help="records of the same population the generator never saw")
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False), help="the remediated table (.csv, .parquet)"
)
@click.option("--policy", default="standard", show_default=True, help="preset name or policy YAML")
@click.option(
    "--drop", "drop_ids", multiple=True,
    help="metric ids whose flagged rows are dropped [default: exposed_records]",
)  # fmt: skip
@click.option("--key-columns", multiple=True, help="quasi-identifiers the attacker knows")
@click.option("--sensitive-columns", multiple=True, help="attributes the attacker wants to infer")
@click.option("--column-kind", multiple=True, help="COLUMN=numerical|categorical|binary|exclude")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=None, help="random seed")
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False), default=None, help="the re-evaluation's JSON"
)
def remediate_command(  # noqa: PLR0913
    real: str,
    synthetic: str,
    holdout: str,
    out: str,
    policy: str,
    drop_ids: tuple[str, ...],
    key_columns: tuple[str, ...],
    sensitive_columns: tuple[str, ...],
    column_kind: tuple[str, ...],
    seed: int | None,
    json_out: str | None,
) -> None:
    """Drop the synthetic rows that expose real records, write the rest to --out, evaluate it again;
    exit with the re-evaluation's code (0 pass or warn, 1 fail, 4 awaiting a sign-off)."""
    from ..data.atomic import write_atomically
    from ..errors import safe_reason
    from ..evaluate import evaluate
    from . import FORMAT_MARK, finish, writable

    path = _output(out, (real, synthetic, holdout))
    writable("--json", json_out, inputs=(real, synthetic, holdout), suffixes=(".json",), marker=FORMAT_MARK)
    drop = split_list(drop_ids) or list(DEFAULT_DROP)
    common: dict[str, Any] = {
        "policy": policy,
        "key_columns": split_list(key_columns),
        "sensitive_columns": split_list(sensitive_columns),
        "column_kinds": parse_kinds(column_kind),
        "seed": seed,
        "progress": True,
    }
    first = evaluate(real, synthetic, holdout, **common)
    missing = [m for m in drop if m not in first.ids]
    if missing:
        raise UsageFailure(f"--drop {', '.join(missing)}: not run by this policy")
    kept = _until_none_flagged(first, synthetic, drop, lambda s: evaluate(real, s, holdout, **common))
    kept = _as_given(first, synthetic, kept, path)
    before = first.tables["synthetic"]["rows"]
    inputs = (real, synthetic, holdout)
    try:  # a random name created exclusively, never through a link, never onto an input (issue 54)
        write_atomically(
            path,
            kept.write_parquet if path.suffix.lower() == ".parquet" else kept.write_csv,
            inputs=inputs,
            new=True,
        )
    except OSError as exc:
        raise UsageFailure(f"--out {path}: cannot write it ({safe_reason(exc)})") from None
    exposed = next(
        ((r.decision or {}).get("exposed") for r in first.results if r.id == "exposed_records"), None
    )
    said = "" if exposed is None else f" ({exposed} rare real records were exposed)"  # not in every policy
    click.echo(
        f"dropped {before - kept.height} of {before} synthetic rows flagged by {', '.join(drop)}{said}; "
        f"wrote {kept.height} rows to {path}; evaluating it again",
        err=True,
    )
    finish(evaluate(real, str(path), holdout, **common), json_out=json_out, policy=policy, inputs=inputs)
