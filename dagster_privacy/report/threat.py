"""The report's threat model: the key and sensitive columns, named or taken by default (issue 57: "—
(none named)" hid the columns the metrics used; docs/metrics.md, "Threat model defaults"). Column names
only, never a value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

ROLES = (("key_columns", "what the attacker knows"), ("sensitive_columns", "what the attacker wants"))


def cols(names: Sequence[str] | None) -> str:
    return ", ".join(f"<code>{escape(str(n))}</code>" for n in names) if names else "— (none named)"


def threat_cols(tm: Mapping[str, Any], field: str) -> str:
    """The columns named, or those the metrics took by default."""
    named = tm.get(field)
    if named:
        return cols(named) + " (named)"
    took = (tm.get("defaults") or {}).get(field)
    if not took:
        return cols(named)
    return f"{cols(took)} (none named: the default, docs/metrics.md, “Threat model defaults”)"


def threat_model_html(tm: Mapping[str, Any]) -> str:
    """The threat model's rows of the report's definition list."""
    out = [f"<dt>{f.replace('_', ' ')} ({what})</dt><dd>{threat_cols(tm, f)}</dd>" for f, what in ROLES]
    if tm.get("source_index_column"):
        out.append(f"<dt>source index column</dt><dd>{cols([tm['source_index_column']])}</dd>")
    return "".join(out)
