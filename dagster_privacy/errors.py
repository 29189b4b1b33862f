"""What an error message may carry, decided once.

Every message that leaves the product (stderr, a result's ``reason``, JSON, reports, Dagster metadata
and event log) is either one *we* wrote — an :class:`OwnMessage`, built from column names, counts,
figures and the user's own arguments, never a record's value — or it is replaced: a library's message
(DuckDB, polars, numpy, scikit-learn, GX…) may quote a record's value in any form (quoted, bare number,
bracketed list, an SQL literal), so only its exception class travels, with a hint of our own.
"""

from __future__ import annotations

#: what a library exception class means, in our words (the class name alone is often obscure)
_HINTS = {
    "ConversionException": "a value could not be converted to the column's type",
    "ParserException": "the SQL does not parse",
    "CatalogException": "a table, view or function the SQL names does not exist",
    "BinderException": "a column or function the SQL names does not exist",
    "IOException": "a file could not be read",
    "InvalidInputException": "the input is malformed",
    "PermissionException": "the read-only connection refuses what the SQL asks for",
    "OutOfRangeException": "a value is out of the type's range",
    "InvalidOperationError": "an operation on a column failed",
    "ComputeError": "a column could not be computed",
    "SchemaError": "the columns' types do not fit",
    "MemoryError": "out of memory",
    "UnicodeDecodeError": "the file is not valid UTF-8 text",
}


class OwnMessage(Exception):
    """An exception whose message we wrote: one line, names and figures only, no record value."""


class Aborted(OwnMessage, RuntimeError):
    """Ends the whole evaluation, never one metric's ``error`` (an executor lost mid-run): a verdict
    from the metrics that ran before it would read as a decision on a partial evaluation."""


class TableError(OwnMessage, ValueError):
    """Bad input. Its message is one line, meant for the user, and carries no value of a record.

    Args:
        message: what is wrong with the input, from column names, counts and figures only.

    Example:
        ``raise TableError(f"the source index column {column!r} is not a column of the synthetic table")``
    """


class CalibrationError(OwnMessage, ValueError):
    """Calibration cannot run (bad fractions, a generator that raised …): one line, no record values."""


class MetricError(OwnMessage, ValueError):
    """A metric cannot be computed on these tables; the message says why (no record value)."""


class NotApplicable(OwnMessage):
    """Raised by a metric that cannot run on these tables (no key column…): the result is
    ``not_applicable`` with this reason, and the policy decides whether that blocks (``optional``).
    ``status="inconclusive"``: it could run on more rows (the reason says how many: lack of evidence,
    not of applicability); ``status="nothing_to_attack"``: the attack finds nothing to attack in the
    synthetic table (no predicate isolates a record), which is evidence of privacy, a pass.

    Args:
        reason: why the metric cannot run, one line, no record value; the result's ``reason``.
        sizes: rows used per table, recorded as the result's ``sizes``.
        details: figures and counts, recorded as the result's ``details``.
        status: the result's status: ``not_applicable`` (default), ``inconclusive`` or
            ``nothing_to_attack``.

    Example:
        ``raise NotApplicable("no key column to link on", sizes={"real": ctx.n("real")})``
    """

    def __init__(
        self,
        reason: str,
        *,
        sizes: dict[str, int] | None = None,
        details: dict[str, object] | None = None,
        status: str = "not_applicable",
    ) -> None:
        super().__init__(reason)
        self.sizes = dict(sizes or {})
        self.details = dict(details or {})
        self.status = status


def first_line(text: str) -> str:
    text = str(text).strip()
    return text.splitlines()[0] if text else "no message"


def safe_reason(exc: BaseException) -> str:
    """One line about ``exc`` that can be shown anywhere: our own message, or the library exception's
    class and our hint — its own message is withheld."""
    if isinstance(exc, OwnMessage):
        return first_line(str(exc))
    name = type(exc).__name__
    if isinstance(exc, ImportError) and exc.name:  # a module name, never a record's value
        return f"{name} (the package providing {exc.name.split('.')[0]!r} is not installed)"
    if isinstance(exc, OSError) and name not in _HINTS:
        return f"{name} (a file or directory could not be used)"
    hint = _HINTS.get(name, "library message withheld: it may quote a record's value")
    return f"{name} ({hint})"


__all__ = [
    "Aborted",
    "CalibrationError",
    "MetricError",
    "NotApplicable",
    "OwnMessage",
    "TableError",
    "first_line",
    "safe_reason",
]
