"""A context that borrows its base's encodings and queries (one encoded pool per repeat)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl

from ..engine.context import EvaluationContext
from ..engine.neighbors import Neighbors


class _SharedContext(EvaluationContext):
    """An evaluation context that borrows from ``base`` whatever does not depend on its synthetic table.

    ``base`` has the same real and holdout tables (same schema, same seed). With ``rows`` given, the
    synthetic table is ``base``'s synthetic rows ``rows`` (the leaky pool): encodings, hashes and codes
    of synthetic rows and every query *from* synthetic rows are rows of the base's. Without ``rows``
    (a generator sweep) only the real / holdout side is borrowed. Only the public context API is
    overridden, so a metric cannot tell the difference.
    """

    def __init__(
        self,
        real: pl.DataFrame,
        synthetic: pl.DataFrame,
        holdout: pl.DataFrame | None,
        *,
        base: EvaluationContext,
        rows: np.ndarray | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(real, synthetic, holdout, **kw)
        self.encoder = base.encoder  # fitted on the same real table
        self._base = base
        self._rows = rows
        self._slices: dict[str, Any] = {}

    @property
    def spent_seconds(self) -> float:
        # shared work done by the base on this context's behalf is not a metric's own time
        return super().spent_seconds + self._base.spent_seconds

    def _slice(self, name: str, full: Callable[[], np.ndarray]) -> np.ndarray:
        if name not in self._slices:
            assert self._rows is not None
            self._slices[name] = full()[self._rows]
        return self._slices[name]

    def _per_row(
        self, name: str, role: str, own: Callable[[str], np.ndarray], base: Callable[[str], np.ndarray]
    ) -> np.ndarray:
        """Real/holdout: the base's; synthetic: its rows of the base's pool, or this context's own."""
        if role != "synthetic":
            return base(role)
        if self._rows is None:
            return own(role)
        return self._slice(name, lambda: base("synthetic"))

    def euclidean(self, role: str) -> np.ndarray:
        return self._per_row("euclidean", role, super().euclidean, self._base.euclidean)

    @property
    def projection(self):  # fitted on the real table: the base's
        return self._base.projection

    def projected(self, role: str) -> np.ndarray:
        return self._per_row("projected", role, super().projected, self._base.projected)

    def row_hashes(self, role: str) -> np.ndarray:
        return self._per_row("hashes", role, super().row_hashes, self._base.row_hashes)

    def codes(self, role: str) -> np.ndarray:
        # codes are shared by all tables of one context, so borrow all of them or none
        if self._rows is None:
            return super().codes(role)
        if role != "synthetic":
            return self._base.codes(role)
        return self._slice("codes", lambda: self._base.codes("synthetic"))

    def neighbors(
        self,
        space,
        query: str,
        reference: str,
        k: int = 1,
        *,
        columns: Sequence[str] | None = None,
    ) -> Neighbors:
        if "synthetic" not in (query, reference):
            return self._base.neighbors(space, query, reference, k, columns=columns)
        if self._rows is not None and query == "synthetic" and reference != "synthetic":
            nn = self._base.neighbors(space, query, reference, k, columns=columns)
            return Neighbors(nn.dist[self._rows], nn.idx[self._rows], nn.seconds)
        return super().neighbors(space, query, reference, k, columns=columns)
