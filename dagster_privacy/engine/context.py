"""EvaluationContext: the tables, their encoded spaces and every neighbour query, computed once.

Metrics never encode a table or search neighbours themselves: they ask the context, which caches each
space per table and each query per (space, columns, query side, reference side) with the largest k
asked so far. A query of a side against itself (real→real, synthetic→synthetic) excludes each row itself
(not its duplicates: an identical record of another person is a true neighbour).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import numpy as np
import polars as pl

from ..data import tables as tb
from ..data.new_values import NewRows
from .executors import IN_PROCESS, Executor
from .neighbors import MixedRows, Neighbors, knn_euclidean, knn_mixed
from .pairs import knn_pair, knn_self
from .spaces import Encoder, Projection, joint_codes

Space = Literal["euclidean", "projected", "hamming", "gower"]
SPACES: tuple[str, ...] = ("euclidean", "projected", "hamming", "gower")
T = TypeVar("T")
#: queries that also read each row's farthest reference off their blocks: the extreme pair of seed 000
#: eqs. 14–15 (metrics.distance.extremes) rides on the real→synthetic query instead of a product of its own
FARTHEST = {("euclidean", None, "real", "synthetic")}


class EvaluationContext:
    """Canonical tables, spaces fitted on the real table, cached neighbour queries, seeded RNG."""

    def __init__(  # noqa: PLR0913
        self,
        real: pl.DataFrame,
        synthetic: pl.DataFrame,
        holdout: pl.DataFrame | None = None,
        *,
        schema: tb.Schema,
        key_columns: Sequence[str] | None = None,
        sensitive_columns: Sequence[str] | None = None,
        seed: int = 0,
        source_index: np.ndarray | None = None,
        variance: float = 0.95,
        on_query: Callable[[str], None] | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.schema = schema
        #: where the neighbour queries' blocks run (executors.py); results do not depend on it
        self.executor: Executor = executor or IN_PROCESS
        self.seed = int(seed)
        self.variance = variance
        self.tables: dict[str, pl.DataFrame] = {"real": real, "synthetic": synthetic}
        if holdout is not None:
            self.tables["holdout"] = holdout
        for name in (*(key_columns or ()), *(sensitive_columns or ())):
            if name not in schema.names:
                raise tb.TableError(f"column {name!r} named in the threat model is not a used column")
        self.key_columns: list[str] | None = list(key_columns) if key_columns else None
        self.sensitive_columns: list[str] | None = list(sensitive_columns) if sensitive_columns else None
        #: for each synthetic row, the real row it was generated from (seed 000 §2.2.12), if known
        self.source_index = source_index
        self.source_index_column: str | None = None
        #: per table, the input row of each row here (evaluate.prepare sorts rows by content); empty: same
        self.input_rows: dict[str, np.ndarray] = {}
        #: per (column, kind), the synthetic and holdout rows holding values the real table never holds
        self.new_values: NewRows = {}
        self.encoder = Encoder.fit(real, schema)
        self._on_query = on_query
        self._euclid: dict[str, np.ndarray] = {}
        self._projection: Projection | None = None
        self._projected: dict[str, np.ndarray] = {}
        self._codes: dict[str, np.ndarray] | None = None
        self._hashes: dict[str, np.ndarray] = {}
        self._nn: dict[tuple, Neighbors] = {}
        self._plan: dict[tuple, int] = {}
        self._shared: dict[str, Any] = {}
        #: seconds spent per neighbour query (space:columns:query→reference, k)
        self.query_seconds: dict[str, float] = {}
        self.encode_seconds = 0.0

    # -- tables ------------------------------------------------------------------------------------

    def has(self, role: str) -> bool:
        return role in self.tables

    def table(self, role: str) -> pl.DataFrame:
        if role not in self.tables:
            raise KeyError(f"no {role} table")
        return self.tables[role]

    def n(self, role: str) -> int:
        return self.table(role).height

    @property
    def sizes(self) -> dict[str, int]:
        return {role: df.height for role, df in self.tables.items()}

    def sizes_with(self, queries: int) -> dict[str, int]:
        """A measurement's sizes: every table's rows and the metric's ``queries`` (the rows it scored)."""
        return {**self.sizes, "queries": int(queries)}

    def rng(self, name: str) -> np.random.Generator:
        """A generator of its own per name (a metric id): results do not depend on metric order."""
        return np.random.default_rng([self.seed, zlib.crc32(name.encode())])

    def row_hashes(self, role: str) -> np.ndarray:
        if role not in self._hashes:
            self._hashes[role] = tb.row_hashes(self.table(role))
        return self._hashes[role]

    def copies_of(self, query: str, reference: str) -> np.ndarray:
        """Boolean per query row: an identical row (all used columns, decided on hashes) is in reference."""
        return np.isin(self.row_hashes(query), self.row_hashes(reference))

    # -- spaces ------------------------------------------------------------------------------------

    def _timed(self, fn: Callable[[], np.ndarray]) -> np.ndarray:
        t0 = time.perf_counter()
        out = fn()
        self.encode_seconds += time.perf_counter() - t0
        return out

    def euclidean(self, role: str) -> np.ndarray:
        """One-hot + min-max encoding (float32), fitted on the real table."""
        if role not in self._euclid:
            self._euclid[role] = self._timed(lambda: self.encoder.euclidean(self.table(role)))
        return self._euclid[role]

    @property
    def projection(self) -> Projection:
        if self._projection is None:
            x = self.euclidean("real")
            t0 = time.perf_counter()
            self._projection = Projection.fit(x, variance=self.variance)
            self.encode_seconds += time.perf_counter() - t0
        return self._projection

    def projected(self, role: str) -> np.ndarray:
        """Φ^k of seed 000 eq. 25 (PCA of the euclidean encoding, fitted on the real table)."""
        if role not in self._projected:
            proj = self.projection
            self._projected[role] = self._timed(lambda: proj.transform(self.euclidean(role)))
        return self._projected[role]

    def codes(self, role: str) -> np.ndarray:
        """Integer code per column (int32), shared by all tables: equal values, equal codes."""
        if self._codes is None:
            roles = list(self.tables)
            t0 = time.perf_counter()
            mats = joint_codes([self.tables[r] for r in roles], self.schema)
            self.encode_seconds += time.perf_counter() - t0
            self._codes = dict(zip(roles, mats, strict=True))
        return self._codes[role]

    def _column_index(self, columns: Sequence[str] | None) -> list[int]:
        names = self.schema.names
        if columns is None:
            return list(range(len(names)))
        return [names.index(c) for c in columns]

    def mixed(self, space: str, role: str, columns: Sequence[str] | None = None) -> MixedRows:
        """Rows of the Hamming space (codes only) or the Gower space (min-max numbers + codes)."""
        cols = self._column_index(columns)
        codes = self.codes(role)
        if space == "hamming":
            return MixedRows(np.empty((codes.shape[0], 0), np.float32), codes[:, cols], 1.0)
        names = [self.schema.names[j] for j in cols]
        num = [j for j, n in zip(cols, names, strict=True) if self.schema.kind(n) == "numerical"]
        cat = [j for j, n in zip(cols, names, strict=True) if self.schema.kind(n) != "numerical"]
        m = float(len(cols))
        table = self.table(role)
        values = [self.encoder.scaled(table, self.schema.names[j]) for j in num]
        x = (
            (np.column_stack(values) / m).astype(np.float32)
            if values
            else np.empty((table.height, 0), np.float32)
        )
        return MixedRows(x, codes[:, cat], 1.0 / m)

    def _dims(self, columns: Sequence[str]) -> np.ndarray:
        labels = self.encoder.euclidean_labels()
        wanted = set(columns)
        return np.array([i for i, c in enumerate(labels) if c in wanted], dtype=np.int64)

    def encoded(self, space: str, role: str, columns: Sequence[str] | None = None) -> np.ndarray | MixedRows:
        if space == "euclidean":
            x = self.euclidean(role)
            return x if columns is None else np.ascontiguousarray(x[:, self._dims(columns)])
        if space == "projected":
            if columns is not None:
                raise ValueError("the projected space covers all columns")
            return self.projected(role)
        if space in ("hamming", "gower"):
            return self.mixed(space, role, columns)
        raise ValueError(f"unknown space {space!r}")

    # -- neighbour queries -------------------------------------------------------------------------

    def plan(self, queries: Sequence[tuple[str, str, str, int]]) -> None:
        """Announce queries (space, query, reference, k): each is then computed once, at the largest k
        announced, however small the first request (a k = 1 request after a k = 5 one costs nothing;
        the other way round it would cost a second query)."""
        for space, query, reference, k in queries:
            if self.has(query) and self.has(reference):
                key = (space, None, query, reference)
                self._plan[key] = max(self._plan.get(key, 0), int(k))

    def neighbors(
        self, space: Space, query: str, reference: str, k: int = 1, *, columns: Sequence[str] | None = None
    ) -> Neighbors:
        """The k nearest `reference` rows of every `query` row, computed once and cached."""
        cols = None if columns is None else tuple(columns)
        key = (space, cols, query, reference)
        cached = self._nn.get(key)
        if cached is not None and cached.k >= k:
            return cached.first(k)
        want = max(k, self._plan.get(key, 0))
        same = query == reference
        q = self.encoded(space, query, cols)
        r = q if same else self.encoded(space, reference, cols)
        if self._on_query:
            self._on_query(f"{space} {query}→{reference}")
        mirror = (space, cols, reference, query)
        if isinstance(q, MixedRows):
            assert isinstance(r, MixedRows)
            nn = knn_mixed(q, r, want, exclude_self=same, executor=self.executor)
        elif same:  # each pair once (pairs.py)
            nn = knn_self(q, want, executor=self.executor)
        elif mirror in self._plan and mirror not in self._nn:  # both directions from one product
            return self._paired(key, mirror, q, r, want)[0].first(k)  # type: ignore[arg-type]
        else:
            nn = knn_euclidean(
                q,
                r,  # type: ignore[arg-type]
                want,
                exclude_self=same,
                executor=self.executor,
                farthest=key in FARTHEST,
            )
        return self._keep(key, nn).first(k)

    def _paired(self, key: tuple, mirror: tuple, q: np.ndarray, r: np.ndarray, want: int) -> list[Neighbors]:
        """A query and its mirror (synthetic→real with real→synthetic) read off the same blocks; the
        side of a FARTHEST query goes first (its farthest is read along the rows)."""
        k_mirror = self._plan[mirror]
        if self._on_query:
            self._on_query(f"{mirror[0]} {mirror[2]}→{mirror[3]}")
        if mirror in FARTHEST:
            back, fore = knn_pair(r, q, k_mirror, want, executor=self.executor, farthest=True)
        else:
            fore, back = knn_pair(q, r, want, k_mirror, executor=self.executor, farthest=key in FARTHEST)
        seconds = max(fore.seconds, back.seconds)  # the pair's time, booked on the query asked for
        fore = Neighbors(fore.dist, fore.idx, seconds, fore.farthest, fore.rechecked)
        back = Neighbors(back.dist, back.idx, 0.0, back.farthest, back.rechecked)
        return [self._keep(key, fore), self._keep(mirror, back)]

    def _keep(self, key: tuple, nn: Neighbors) -> Neighbors:
        """Pin exact copies, cache, and book the query's time."""
        space, cols, query, reference = key
        if cols is None:
            nn = self._pin_copies(nn, query, reference)
        self._nn[key] = nn
        label = f"{space}{'' if cols is None else '[' + ','.join(cols) + ']'} {query}→{reference} k={nn.k}"
        self.query_seconds[label] = nn.seconds
        return nn

    def _pin_copies(self, nn: Neighbors, query: str, reference: str) -> Neighbors:
        """An identical row (decided on hashes) is the nearest neighbour at distance exactly 0.

        Float32 scores cannot tell an exact copy from a row a rounding error away; the hashes can.
        Rows already holding a copy at distance 0 are left as they are (ties: lowest index).
        """
        same = query == reference
        qh, rh = self.row_hashes(query), self.row_hashes(reference)
        order = np.argsort(rh, kind="stable")
        sorted_h = rh[order]
        lo = np.searchsorted(sorted_h, qh, side="left")
        hi = np.searchsorted(sorted_h, qh, side="right")
        count = hi - lo - (1 if same else 0)
        todo = np.nonzero((count > 0) & (nn.dist[:, 0] > 0))[0]
        if todo.size == 0:
            return nn
        dist, idx = nn.dist.copy(), nn.idx.copy()
        for i in todo:  # rare: only copies a float32 tie hid
            cands = order[lo[i] : hi[i]]
            match = int(cands[cands != i][0]) if same else int(cands[0])
            rest = [j for j in range(idx.shape[1]) if idx[i, j] != match][: idx.shape[1] - 1]
            idx[i] = [match, *idx[i, rest]]
            dist[i] = [0.0, *dist[i, rest]]
        return Neighbors(dist, idx, nn.seconds, nn.farthest, nn.rechecked)

    def release(self, *, spaces: bool, queries: set[tuple[str, str, str]]) -> None:
        """Free what no metric left to run reads (the evaluation calls this before each metric): the
        encoded spaces unless ``spaces``, and every cached query (space, query side, reference side) not
        in ``queries``. Asked for again after all, each is computed again, the same."""
        if not spaces:
            self._euclid.clear()
            self._projected.clear()
        for key in [key for key in self._nn if (key[0], key[2], key[3]) not in queries]:
            del self._nn[key]
        # nor planned: a query asked for after all runs alone, not paired with a mirror it would recompute
        for key in [key for key in self._plan if (key[0], key[2], key[3]) not in queries]:
            del self._plan[key]

    def holdout_as_release(self) -> EvaluationContext:
        """The same evaluation with the holdout in the synthetic table's place (unseen real rows as the
        release: what an advisory figure reads when nothing leaked), borrowing what is encoded and
        queried now under the new roles (the encoder is fitted on the same real table)."""
        mirror = EvaluationContext(
            self.table("real"),
            self.table("holdout"),
            schema=self.schema,
            key_columns=self.key_columns,
            sensitive_columns=self.sensitive_columns,
            seed=self.seed,
            variance=self.variance,
            executor=self.executor,
        )
        role = {"real": "real", "holdout": "synthetic"}
        mirror._euclid = {role[r]: x for r, x in self._euclid.items() if r in role}
        mirror._projection = self._projection
        mirror._projected = {role[r]: x for r, x in self._projected.items() if r in role}
        mirror._nn = {
            new: nn
            for key, nn in self._nn.items()
            if key[2] in role
            and key[3] in role
            and (new := (key[0], key[1], role[key[2]], role[key[3]])) not in FARTHEST  # not asked so
        }
        return mirror

    def shared(self, label: str, compute: Callable[[], T]) -> T:
        """A derived result several metrics use (an extreme pair, a weighted space and its queries),
        computed once per evaluation; its time is booked as shared work under ``label``."""
        if label not in self._shared:
            t0 = time.perf_counter()
            self._shared[label] = compute()
            self.query_seconds[label] = time.perf_counter() - t0
        return self._shared[label]

    @property
    def spent_seconds(self) -> float:
        """Seconds spent so far in shared work (encodings and neighbour queries)."""
        return self.encode_seconds + sum(self.query_seconds.values())
