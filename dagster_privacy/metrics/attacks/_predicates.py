"""The predicate engine of the singling-out attacks (seed 004 §4.3.1): predicates as arrays of
conditions ``code_j ∈ [lo, hi]`` (possibly negated) on the integer codes the context shares across
tables, and vectorised counting of how many records of a table satisfy each predicate — the most
selective condition gives the candidate rows (a contiguous run of that column's sorted order), the
others filter them, and a bincount gives the counts. Nothing is evaluated row by row in Python."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine.compiled import kernel

BIG = np.int32(2**31 - 1)
INDEX_BUDGET = 64 * 2**20  # bytes of one column's bitset index


@dataclass
class Predicates:
    """P predicates of K conditions each: column (schema index), code interval, negation."""

    col: np.ndarray  # (P, K) int64
    lo: np.ndarray  # (P, K) int32
    hi: np.ndarray  # (P, K) int32
    neg: np.ndarray  # (P, K) bool

    @property
    def n(self) -> int:
        return int(self.col.shape[0])

    def take(self, idx: np.ndarray) -> Predicates:
        return Predicates(self.col[idx], self.lo[idx], self.hi[idx], self.neg[idx])

    def keys(self) -> list[bytes]:
        """A key per predicate independent of the order of its conditions (for de-duplication)."""
        order = np.lexsort((self.hi, self.lo, self.col), axis=1)
        stacked = np.stack(
            [
                np.take_along_axis(a.astype(np.int64), order, 1)
                for a in (self.col, self.lo, self.hi, self.neg)
            ],
            axis=2,
        )
        return [row.tobytes() for row in np.ascontiguousarray(stacked)]


@kernel
def _count_candidates(order, codes, seed_col, seed_a, seed_n, col, lo, hi, neg, counts, one) -> None:  # noqa: ANN001, PLR0913
    """Per predicate p, its candidate rows — ``order[seed_col[p], seed_a[p] : seed_a[p] + seed_n[p]]`` —
    checked against every condition (``lo ≤ code ≤ hi``, negated where ``neg``): counts[p] matching
    rows, one[p] the last of them in candidate order."""
    for p in range(seed_col.shape[0]):
        for t in range(seed_n[p]):
            row = order[seed_col[p], seed_a[p] + t]
            ok = True
            for k in range(col.shape[1]):
                v = codes[row, col[p, k]]
                if ((v >= lo[p, k]) and (v <= hi[p, k])) == neg[p, k]:
                    ok = False
                    break
            if ok:
                counts[p] += 1
                one[p] = row


class CodeTable:
    """Integer codes of one table with, per column, its rows sorted by code (for interval look-ups)."""

    def __init__(self, codes: np.ndarray) -> None:
        self.codes = np.ascontiguousarray(codes, dtype=np.int32)
        self.n, self.d = self.codes.shape
        self.order = np.argsort(self.codes, axis=0, kind="stable").T.copy()  # (d, n)
        self.sorted = np.take_along_axis(self.codes.T, self.order, axis=1)  # (d, n)

    def count(self, p: Predicates, *, limit: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Records matching each predicate, one matching row (−1 if none), and whether the count is exact.

        With ``limit``, only the first ``limit`` candidate rows of each predicate are checked: the count
        is then a lower bound (exact where the candidates were fewer), enough to reject a predicate that
        matches two records without looking at all of them.
        """
        P, K = p.col.shape
        counts = np.zeros(P, dtype=np.int64)
        one = np.full(P, -1, dtype=np.int64)
        if P == 0 or self.n == 0:
            return counts, one, np.ones(P, dtype=bool)
        # size of each condition's match set (a contiguous run of the column's sorted codes)
        a = np.zeros((P, K), dtype=np.int64)
        b = np.zeros((P, K), dtype=np.int64)
        for j in np.unique(p.col):
            m = p.col == j
            a[m] = np.searchsorted(self.sorted[j], p.lo[m], side="left")
            b[m] = np.searchsorted(self.sorted[j], np.maximum(p.hi[m], p.lo[m] - 1), side="right")
        b = np.maximum(a, b)
        if K == 1:  # a single condition: its run is the answer (negated: the rest of the table)
            counts[:] = np.where(p.neg[:, 0], self.n - (b - a)[:, 0], (b - a)[:, 0])
            single = ~p.neg[:, 0] & (counts == 1)
            one[single] = self.order[p.col[single, 0], a[single, 0]]
            return counts, one, np.ones(P, dtype=bool)
        # the most selective positive condition seeds the candidates; a negated one cannot
        size = np.where(p.neg, self.n + 1, b - a)
        best = size.argmin(axis=1)
        rows_ = np.arange(P)
        all_neg = p.neg[rows_, best]
        seed_col = p.col[rows_, best]
        seed_a = np.where(all_neg, 0, a[rows_, best])
        seed_n = np.where(all_neg, self.n, size[rows_, best])
        exact = np.ones(P, dtype=bool)
        if limit is not None:
            exact = seed_n <= limit
            seed_n = np.minimum(seed_n, limit)
        # check the most selective conditions first so the candidates are rejected soonest
        order_k = np.argsort(np.where(p.neg, self.n, b - a).mean(axis=0), kind="stable")
        _count_candidates(
            self.order,
            self.codes,
            seed_col,
            seed_a,
            seed_n,
            *(np.ascontiguousarray(x[:, order_k]) for x in (p.col, p.lo, p.hi, p.neg)),
            counts,
            one,
        )
        return counts, one, exact

    def count_exact(self, p: Predicates) -> tuple[np.ndarray, np.ndarray]:
        c, one, _ = self.count(p)
        return c, one

    def singles_out(self, p: Predicates) -> np.ndarray:
        """Whether each predicate matches exactly one record, rejecting crowded ones early."""
        ok = np.ones(p.n, dtype=bool)
        todo = np.arange(p.n)
        for limit in (32, 1024, None):
            if todo.size == 0:
                break
            c, _, exact = self.count(p.take(todo), limit=limit)
            ok[todo[c >= 2]] = False  # two matches among the first candidates: decided
            ok[todo[exact & (c == 0)]] = False
            todo = todo[(c < 2) & ~exact]
        return ok


class BitIndex:
    """Per column, cumulative row bitsets over the sorted distinct codes: rows with code ≤ c, packed.

    A condition ``lo ≤ code ≤ hi`` is then ``C[≤hi] & ~C[≤lo−1]``, a predicate the AND of its
    conditions and its count a popcount: 64 rows per machine word. Bit positions follow a seeded
    permutation of the rows, so the first words are a random sample of rows: a predicate matching
    two records there is rejected without reading the rest. A column whose index would exceed the
    budget is not indexed; predicates touching it are counted by CodeTable (candidate rows).
    """

    def __init__(
        self,
        codes: np.ndarray,
        rng: np.random.Generator,
        *,
        budget: int = INDEX_BUDGET,
        prefix_words: tuple[int, ...] = (2, 16),
        skip: frozenset[int] = frozenset(),
    ) -> None:
        n, d = codes.shape
        self.n, self.d = n, d
        self.W = max(1, (n + 63) // 64)
        pos = rng.permutation(n)
        word = pos >> 6
        bit = np.left_shift(np.uint64(1), (pos & 63).astype(np.uint64))
        self.distinct: list[np.ndarray | None] = []
        offsets, blocks = [], []
        total = 0
        for j in range(d):
            if j in skip:  # a column no predicate uses (high-cardinality): no index to build
                self.distinct.append(None)
                offsets.append(-1)
                continue
            values, rank = np.unique(codes[:, j], return_inverse=True)
            if (values.size + 1) * self.W * 8 > budget:
                self.distinct.append(None)
                offsets.append(-1)
                continue
            cum = np.zeros((values.size + 1, self.W), dtype=np.uint64)
            np.bitwise_or.at(cum, (rank.ravel() + 1, word), bit)
            np.bitwise_or.accumulate(cum, axis=0, out=cum)
            self.distinct.append(values)
            offsets.append(total)
            blocks.append(cum)
            total += cum.shape[0]
        self.offsets = np.array(offsets, dtype=np.int64)
        # per indexed column, row of ``cum`` for "code ≤ c", c = −1 … max code (a look-up table)
        luts, lut_offsets, max_code = [], [], []
        at = 0
        for j, v in enumerate(self.distinct):
            top = int(codes[:, j].max(initial=0)) if v is not None else 0
            max_code.append(top)
            lut_offsets.append(at)
            if v is None:
                luts.append(np.zeros(top + 2, dtype=np.int64))
            else:
                luts.append(offsets[j] + np.searchsorted(v, np.arange(-1, top + 1), side="right"))
            at += top + 2
        self.lut = np.concatenate(luts)
        self.lut_offsets = np.array(lut_offsets, dtype=np.int64)
        self.max_code = np.array(max_code, dtype=np.int64)
        self.cum = np.concatenate(blocks) if blocks else np.zeros((0, self.W), np.uint64)
        self.prefixes = [np.ascontiguousarray(self.cum[:, :w]) for w in prefix_words if w < self.W]
        self.all = np.zeros(self.W, dtype=np.uint64)
        np.bitwise_or.at(self.all, word, bit)

    def indexed(self, p: Predicates) -> np.ndarray:
        """Predicates whose every column is indexed."""
        return (self.offsets[p.col] >= 0).all(axis=1)

    def _rows(self, p: Predicates) -> tuple[np.ndarray, np.ndarray]:
        """Rows of ``cum`` for ≤ hi and ≤ lo − 1 of every condition, by table look-up (no search)."""
        base = self.lut_offsets[p.col]
        top = self.max_code[p.col]
        hi_row = self.lut[base + np.minimum(p.hi.astype(np.int64), top) + 1]
        lo_row = self.lut[base + np.clip(p.lo.astype(np.int64) - 1, -1, top) + 1]
        return hi_row, np.minimum(lo_row, hi_row)

    def count(self, p: Predicates, *, prefix: int | None = None) -> np.ndarray:
        """Exact counts (or, with prefix i, counts among the sampled first rows) of indexed predicates."""
        hi_row, lo_row = self._rows(p)
        table = self.cum if prefix is None else self.prefixes[prefix]
        return _count_bits(table, self.all[: table.shape[1]], hi_row, lo_row, p.neg)


@kernel
def _popcount(x: np.uint64) -> np.int64:
    # bit counts per 2, 4, 8 bits, then the bytes summed by shifts (no multiply that wraps around)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    x = x + (x >> np.uint64(8))
    x = x + (x >> np.uint64(16))
    x = x + (x >> np.uint64(32))
    return np.int64(x & np.uint64(0x7F))


@kernel
def _count_bits(table, every, hi_row, lo_row, neg) -> np.ndarray:  # noqa: ANN001
    """Per predicate p: the rows in every condition's bitset — ``table[hi_row] & ~table[lo_row]``
    (code in [lo, hi]; the complement within ``every`` where negated) — ANDed word by word, counted.
    No predicate's bitset is ever held whole."""
    out = np.zeros(hi_row.shape[0], dtype=np.int64)
    for p in range(hi_row.shape[0]):
        total = 0
        for w in range(table.shape[1]):
            acc = every[w]
            for k in range(hi_row.shape[1]):
                bits = table[hi_row[p, k], w] & ~table[lo_row[p, k], w]
                acc &= (~bits & every[w]) if neg[p, k] else bits
            total += _popcount(acc)
        out[p] = total
    return out


class Target:
    """A table predicates are counted on: bitset index where it fits, candidate rows otherwise."""

    def __init__(
        self, codes: np.ndarray, rng: np.random.Generator, *, skip: frozenset[int] = frozenset()
    ) -> None:
        self.rows = CodeTable(codes)
        self._rng = rng
        self._skip = skip
        self._bits: BitIndex | None = None
        self.n = self.rows.n
        self.d = self.rows.d

    @property
    def bits(self) -> BitIndex:
        """Built on first use (single-condition predicates never need it)."""
        if self._bits is None:
            self._bits = BitIndex(self.rows.codes, self._rng, skip=self._skip)
        return self._bits

    def build_index(self) -> None:
        """Build the bitset index now (before jobs that share this table run side by side)."""
        _ = self.bits

    @property
    def codes(self) -> np.ndarray:
        return self.rows.codes

    def count_exact(self, p: Predicates) -> tuple[np.ndarray, np.ndarray]:
        if p.col.shape[1] == 1:
            return self.rows.count_exact(p)
        out = np.zeros(p.n, dtype=np.int64)
        fast = self.bits.indexed(p)
        if fast.any():
            out[fast] = self.bits.count(p.take(np.nonzero(fast)[0]))
        if not fast.all():
            slow = np.nonzero(~fast)[0]
            out[slow] = self.rows.count_exact(p.take(slow))[0]
        return out, np.full(p.n, -1, dtype=np.int64)

    def singles_out(self, p: Predicates) -> np.ndarray:
        """Whether each predicate matches exactly one record; crowded predicates are rejected on the
        sampled first rows of the bitsets before any full count."""
        ok = np.zeros(p.n, dtype=bool)
        fast = self.bits.indexed(p)
        idx = np.nonzero(fast)[0]
        if idx.size:
            for level in range(len(self.bits.prefixes)):
                pre = self.bits.count(p.take(idx), prefix=level)
                idx = idx[pre < 2]  # two matches among the sampled rows: crowded, rejected
            if idx.size:
                ok[idx] = self.bits.count(p.take(idx)) == 1
        if not fast.all():
            slow = np.nonzero(~fast)[0]
            ok[slow] = self.rows.singles_out(p.take(slow))
        return ok
