"""Every release counts (issue 56): the releases of one real table form a lineage; a ledger records what
each exposed (records named by a keyed hash, never a value); a candidate is judged on the union.

names.py (keys, record names) → ledger.py (the append-only, hash-chained table; in a DuckDB file:
file_ledger.py, in PostgreSQL: pg_ledger.py; backends.open_ledger picks one) → cumulative.py (the
union's exact test, the level spent per look) → gate.py (judge a candidate, record it).
"""

from .backends import open_ledger
from .file_ledger import FileLedger
from .gate import commit, judge_lineage, sentence, valid_lineage
from .ledger import Ledger, releases
from .names import LineageError

__all__ = [
    "FileLedger",
    "Ledger",
    "LineageError",
    "commit",
    "judge_lineage",
    "open_ledger",
    "releases",
    "sentence",
    "valid_lineage",
]
