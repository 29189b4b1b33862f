"""What every ``dagster-privacy`` command shares: the bad-usage exception (exit 2) and argument parsing."""

from __future__ import annotations

from collections.abc import Sequence

import click


class UsageFailure(click.ClickException):
    """Bad input: exit 2 with one line."""

    exit_code = 2


def split_list(values: Sequence[str] | None) -> list[str] | None:
    """Comma-separated values, repeatable options: ("a,b", "c") → [a, b, c]."""
    if not values:
        return None
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    return out or None


def parse_kinds(values: Sequence[str]) -> dict[str, str]:
    kinds = {}
    for item in values:
        name, sep, kind = item.rpartition("=")
        if not sep or not name:
            raise UsageFailure(f"--column-kind takes COLUMN=KIND, got {item!r}")
        kinds[name] = kind
    return kinds
