"""The attack family's targets: which records each attack aims at, on equal footing per side.

Every attack of seed 004 §4.3 is scored twice, against training records (e_train) and against control
(holdout) records the generator never saw (e_control). The same number of target records per side, and
every random choice made from the seed and record content only, never from row or column order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...data import tables as tb
from ...engine.context import EvaluationContext


def salt(ctx: EvaluationContext, name: str) -> np.uint64:
    """A 64-bit salt drawn from the metric's own seeded generator."""
    return np.uint64(ctx.rng(name).integers(0, 2**63 - 1, dtype=np.int64))


def content_key(ctx: EvaluationContext, role: str) -> np.ndarray:
    """A 64-bit key per row from its integer codes taken in column-name order: equal records, equal
    keys, whatever the input's row or column order (row hashes depend on the column order)."""
    names = ctx.schema.names
    codes = ctx.codes(role)
    h = np.zeros(codes.shape[0], dtype=np.uint64)
    for c in sorted(names):
        h = tb.mix64(h ^ (codes[:, names.index(c)].astype(np.uint64) + tb.GOLDEN))
    return h


def content_order(ctx: EvaluationContext, role: str, name: str) -> np.ndarray:
    """All rows of a table in a seeded order that depends on their content only.

    Rows are ranked by a salted hash of their content key and of their occurrence among identical rows
    (the first copy by position, the second, ...), so the same records are chosen whatever the row or
    column order of the input (identical rows are interchangeable), and the first n rows are a simple
    random sample of rows: hashing the content alone put every copy of a record side by side, and on a
    table of twins n targets were a few dozen records (cluster sampling) under intervals binomial in n.
    """
    key = tb.salted_keys(content_key(ctx, role), salt(ctx, f"{name}:{role}"))
    return np.lexsort((np.arange(key.size), key))


def sample_targets(ctx: EvaluationContext, role: str, n: int, name: str) -> np.ndarray:
    """n target rows of one side, chosen by content_order (a seeded sample without replacement)."""
    return content_order(ctx, role, name)[:n]


def hash_order(ctx: EvaluationContext, role: str) -> np.ndarray:
    """Rows sorted by content key: the reference order that makes 'lowest index' ties order-free."""
    return np.argsort(content_key(ctx, role), kind="stable")


def canonical_columns(ctx: EvaluationContext, columns: Sequence[str] | None = None) -> list[str]:
    """Columns in name order: random column choices must not depend on the input's column order."""
    return sorted(ctx.schema.names if columns is None else columns)


def n_targets(ctx: EvaluationContext, n_attacks: int, *, control_rows: int | None = None) -> int:
    """Targets per side: n_attacks, fewer only when a side has fewer rows (both sides the same)."""
    ctl = ctx.n("holdout") if control_rows is None else control_rows
    return int(max(0, min(int(n_attacks), ctx.n("real"), ctl)))


__all__ = [
    "canonical_columns",
    "content_key",
    "content_order",
    "hash_order",
    "n_targets",
    "salt",
    "sample_targets",
]
