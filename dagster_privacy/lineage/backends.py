"""Which ledger a location names: a ``postgresql://`` URI or a DuckDB file."""

from __future__ import annotations

import os
from pathlib import Path

from ..data import postgres
from .file_ledger import FileLedger
from .ledger import Ledger
from .pg_ledger import PostgresLedger


def open_ledger(location: str | os.PathLike[str], *, home: Path | None = None) -> Ledger:
    """The ledger at ``location``: a ``postgresql://`` URI (the table ``lineage_ledger`` of that database,
    its keys in a folder of ``home``: pg_ledger.default_home()) or a DuckDB file of its own."""
    if postgres.is_postgres(str(location)):
        return PostgresLedger(str(location), home=home)
    return FileLedger(location)


__all__ = ["open_ledger"]
