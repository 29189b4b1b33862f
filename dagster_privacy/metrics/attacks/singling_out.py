"""Singling-out attacks (seed 004 §4.3.1, §6.2.2): predicates from the synthetic table that isolate one record.

A predicate is a conjunction of conditions, each ``code_j ∈ [lo, hi]`` (possibly negated) on the integer
codes the context shares across tables (numerical codes are dense value ranks, so ``x ≤ v`` is an
interval of codes; a missing number has code 0). Counting how many records of a table satisfy many
predicates is vectorised: the most selective condition of each predicate gives its candidate rows
(a contiguous run of that column's sorted order), the other conditions filter the candidates, and a
bincount gives the counts. Nothing is evaluated row by row in Python.

Training and control are compared on equal footing with an exact size correction (docs/metrics.md,
"Attacks"): each side's success is the probability that the predicate isolates exactly one record of a
uniformly random subset of m = min(|train|, |control|) records of that side (hypergeometric), so on a
clean release both sides have the same expectation whatever their sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import gammaln

from ...context import EvaluationContext
from ...registry import metric
from ...results import MetricResult
from ._common import Side, canonical_columns, family_confidence, rate, salt, worst_of

BIG = np.int32(2**31 - 1)
PAIR_BUDGET = 1 << 22  # candidate (predicate, row) pairs held at once
INDEX_BUDGET = 64 * 2**20  # bytes of one column's bitset index


# ------------------------------------------------------------------------------------ the engine


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
        stacked = np.stack([np.take_along_axis(a.astype(np.int64), order, 1)
                            for a in (self.col, self.lo, self.hi, self.neg)], axis=2)
        return [row.tobytes() for row in np.ascontiguousarray(stacked)]


class CodeTable:
    """Integer codes of one table with, per column, its rows sorted by code (for interval look-ups)."""

    def __init__(self, codes: np.ndarray) -> None:
        self.codes = np.ascontiguousarray(codes, dtype=np.int32)
        self.n, self.d = self.codes.shape
        self.order = np.argsort(self.codes, axis=0, kind="stable").T.copy()  # (d, n)
        self.sorted = np.take_along_axis(self.codes.T, self.order, axis=1)  # (d, n)
        self._flat_codes = self.codes.ravel()
        self._flat_order = self.order.ravel()

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
        # batches of predicates holding at most PAIR_BUDGET candidate pairs
        cum = np.cumsum(seed_n)
        conds = [(np.ascontiguousarray(p.col[:, k]), np.ascontiguousarray(p.lo[:, k]),
                  np.ascontiguousarray(p.hi[:, k]), np.ascontiguousarray(p.neg[:, k])) for k in range(K)]
        # check the most selective conditions first so the candidates shrink fastest
        order_k = np.argsort(np.where(p.neg, self.n, b - a).mean(axis=0), kind="stable")
        start = 0
        while start < P:
            base = cum[start - 1] if start else 0
            stop = max(int(np.searchsorted(cum, base + PAIR_BUDGET, side="right")), start + 1)
            self._count_batch(start, stop, [conds[k] for k in order_k], seed_col, seed_a, seed_n, counts, one)
            start = stop
        return counts, one, exact

    def _count_batch(self, start: int, stop: int, conds: list[tuple[np.ndarray, ...]], seed_col: np.ndarray,
                     seed_a: np.ndarray, seed_n: np.ndarray, counts: np.ndarray, one: np.ndarray) -> None:
        sizes = seed_n[start:stop]
        total = int(sizes.sum())
        if total == 0:
            return
        pred = np.repeat(np.arange(start, stop, dtype=np.int64), sizes)
        pos = np.arange(total, dtype=np.int64)
        pos -= np.repeat(np.cumsum(sizes) - sizes - seed_a[start:stop], sizes)
        rows = self._flat_order[seed_col[pred] * self.n + pos]
        for col, lo, hi, neg in conds:
            v = self._flat_codes[rows * self.d + col[pred]]
            ok = (v >= lo[pred]) & (v <= hi[pred])
            ok ^= neg[pred]
            pred, rows = pred[ok], rows[ok]
            if pred.size == 0:
                return
        counts += np.bincount(pred, minlength=counts.size)
        one[pred] = rows

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

    def __init__(self, codes: np.ndarray, rng: np.random.Generator, *, budget: int = INDEX_BUDGET,
                 prefix_words: tuple[int, ...] = (2, 16)) -> None:
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

    def count(self, p: Predicates, *, prefix: int | None = None, batch: int = 8192) -> np.ndarray:
        """Exact counts (or, with prefix i, counts among the sampled first rows) of indexed predicates."""
        hi_row, lo_row = self._rows(p)
        table = self.cum if prefix is None else self.prefixes[prefix]
        every = self.all[: table.shape[1]]
        out = np.zeros(p.n, dtype=np.int64)
        for s in range(0, p.n, batch):
            e = min(s + batch, p.n)
            acc = None
            for k in range(p.col.shape[1]):
                bits = table[hi_row[s:e, k]] & ~table[lo_row[s:e, k]]
                neg = p.neg[s:e, k]
                if neg.any():
                    bits[neg] = ~bits[neg] & every
                acc = bits if acc is None else np.bitwise_and(acc, bits, out=acc)
            assert acc is not None
            out[s:e] = np.bitwise_count(acc).sum(axis=1, dtype=np.int64)
        return out


class Target:
    """A table predicates are counted on: bitset index where it fits, candidate rows otherwise."""

    def __init__(self, codes: np.ndarray, rng: np.random.Generator) -> None:
        self.rows = CodeTable(codes)
        self._rng = rng
        self._bits: BitIndex | None = None
        self.n = self.rows.n
        self.d = self.rows.d

    @property
    def bits(self) -> BitIndex:
        """Built on first use (single-condition predicates never need it)."""
        if self._bits is None:
            self._bits = BitIndex(self.rows.codes, self._rng)
        return self._bits

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


# ------------------------------------------------------------------------------ the attack pieces


@dataclass
class Prepared:
    """Synthetic distinct rows in a canonical order, and the tables the predicates are checked on."""

    cols: list[int]  # schema indices in column-name order (random column choices draw from this)
    numerical: np.ndarray  # (d,) bool per schema column
    syn: Target  # distinct synthetic rows, sorted (canonical, order-free)
    syn_rows: np.ndarray  # for each distinct row, the synthetic rows equal to it (inverse map)
    syn_values: np.ndarray  # (n_distinct, d) float values of numerical columns (nan elsewhere)
    train: Target
    control: Target


def _prepare(ctx: EvaluationContext) -> Prepared:
    names = ctx.schema.names
    cols = [names.index(c) for c in canonical_columns(ctx)]
    numerical = np.array([ctx.schema.kind(c) == "numerical" for c in names])
    codes = ctx.codes("synthetic")
    # distinct rows (an attacker reads a duplicated synthetic record as one profile), sorted
    # lexicographically in column-name order: the canonical, row-order-free list records are drawn from
    uniq, first, inverse = np.unique(codes[:, cols], axis=0, return_index=True, return_inverse=True)
    back = np.empty(len(cols), dtype=np.int64)
    back[cols] = np.arange(len(cols))
    syn_u = uniq[:, back]
    values = np.full(syn_u.shape, np.nan)
    table = ctx.table("synthetic")
    for j, name in enumerate(names):
        if numerical[j]:
            values[:, j] = table.get_column(name).to_numpy().astype(np.float64)[first]
    seed = int(salt(ctx, "singling_out:bits")) % (2**32)
    return Prepared(cols, numerical, Target(syn_u, np.random.default_rng([seed, 0])), inverse.ravel(), values,
                    Target(ctx.codes("real"), np.random.default_rng([seed, 1])),
                    Target(ctx.codes("holdout"), np.random.default_rng([seed, 2])))


def _univariate_candidates(pr: Prepared) -> Predicates:
    """Rare-attribute predicates (anonymeter's univariate attack): per column, a missing value that
    occurs once, ``x ≤ min`` and ``x ≥ max`` of numerical columns, and every value that occurs once."""
    out: list[np.ndarray] = []
    syn = pr.syn
    for j in pr.cols:
        values, counts = np.unique(syn.codes[:, j], return_counts=True)
        rare = values[counts == 1].astype(np.int64)
        if pr.numerical[j]:
            present = values[values > 0]
            if present.size:
                out.append(np.array([[j, 1, int(present.min())], [j, int(present.max()), int(BIG)]]))
        out.append(np.column_stack([np.full(rare.size, j, np.int64), rare, rare]))
    arr = np.concatenate(out).astype(np.int64) if out else np.zeros((0, 3), np.int64)
    if arr.shape[0] == 0:
        return _empty(1)
    arr = np.unique(arr, axis=0)  # de-duplicated, canonical order
    P = arr.shape[0]
    return Predicates(arr[:, :1], arr[:, 1:2].astype(np.int32), arr[:, 2:3].astype(np.int32),
                      np.zeros((P, 1), dtype=bool))


def _empty(k: int) -> Predicates:
    return Predicates(np.zeros((0, k), np.int64), np.zeros((0, k), np.int32), np.zeros((0, k), np.int32),
                      np.zeros((0, k), bool))


def _from_records(pr: Prepared, rows: np.ndarray, chosen: np.ndarray, medians: np.ndarray) -> Predicates:
    """anonymeter's multivariate predicate of a record on chosen columns: ``==`` for a categorical value,
    ``≥ v`` for a number above the synthetic median and ``≤ v`` otherwise, ``is missing`` for a null."""
    codes = pr.syn.codes[rows[:, None], chosen]
    num = pr.numerical[chosen]
    vals = pr.syn_values[rows[:, None], chosen]
    up = num & (codes > 0) & (vals > medians[chosen])
    down = num & (codes > 0) & ~up
    lo = np.where(down, 1, codes).astype(np.int32)
    hi = np.where(up, BIG, codes).astype(np.int32)
    return Predicates(chosen.astype(np.int64), lo, hi, np.zeros(chosen.shape, dtype=bool))


def _choose_columns(pr: Prepared, rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """k distinct columns per predicate, uniformly, drawn in column-name order."""
    pick = np.argsort(rng.random((n, len(pr.cols))), axis=1)[:, :k]
    return np.asarray(pr.cols, dtype=np.int64)[pick]


def _multivariate_candidates(pr: Prepared, rng: np.random.Generator, n_attacks: int, k: int,
                             max_attempts: int) -> tuple[Predicates, np.ndarray, int]:
    """Distinct predicates that single out one distinct synthetic row: (predicates, source row, attempts)."""
    medians = np.full(pr.syn.d, np.inf)  # anonymeter: > median → "≥ v", else "≤ v"
    for j in np.nonzero(pr.numerical)[0]:
        v = pr.syn_values[:, j]
        if (~np.isnan(v)).any():
            medians[j] = np.nanmedian(v)
    seen: set[bytes] = set()
    kept: list[Predicates] = []
    sources: list[np.ndarray] = []
    found, attempts = 0, 0
    while found < n_attacks and attempts < max_attempts:
        batch = int(min(max_attempts - attempts, max(2000, 4 * (n_attacks - found))))
        rows = rng.integers(0, pr.syn.n, batch)
        chosen = _choose_columns(pr, rng, batch, k)
        cand = _from_records(pr, rows, chosen, medians)
        attempts += batch
        hit = np.nonzero(pr.syn.singles_out(cand))[0]
        if hit.size == 0:
            continue
        keys = cand.take(hit).keys()
        take = []
        for i, key in zip(hit, keys, strict=True):
            if key not in seen:
                seen.add(key)
                take.append(i)
                if found + len(take) >= n_attacks:
                    break
        if take:
            t = np.array(take)
            kept.append(cand.take(t))
            sources.append(rows[t])
            found += len(take)
    if not kept:
        return _empty(k), np.zeros(0, np.int64), attempts
    return (Predicates(*(np.concatenate([getattr(p, f) for p in kept]) for f in ("col", "lo", "hi", "neg"))),
            np.concatenate(sources), attempts)


def _random_predicates(pr: Prepared, rng: np.random.Generator, n: int, k: int) -> Predicates:
    """The naive attacker (anonymeter's baseline): a random synthetic value per column and a random
    operator (``==``/``!=`` for categories; ``==, !=, >, <, ≥, ≤`` for numbers), not informed by rarity."""
    chosen = _choose_columns(pr, rng, n, k)
    codes = pr.syn.codes[rng.integers(0, pr.syn.n, (n, k)), chosen]  # a value seen in the synthetic table
    num = pr.numerical[chosen]
    op = np.where(num, rng.integers(0, 6, (n, k)), rng.integers(0, 2, (n, k)))
    present = codes > 0
    lo = codes.copy()
    hi = codes.copy()
    # 2: >, 3: <, 4: ≥, 5: ≤ on codes of non-missing numbers (code 0 = missing)
    lo = np.where(op == 2, codes + 1, np.where(op == 3, 1, np.where(op == 5, 1, lo)))
    hi = np.where(op == 2, BIG, np.where(op == 3, codes - 1, np.where(op == 4, BIG, hi)))
    lo = np.where((op >= 2) & ~present, 1, lo)  # anonymeter: a comparison with a missing value
    hi = np.where((op >= 2) & ~present, BIG, hi)  # becomes "is not missing"
    return Predicates(chosen, lo.astype(np.int32), hi.astype(np.int32), op == 1)


def _equal_footing(counts: np.ndarray, n_side: int, m: int) -> np.ndarray:
    """P(the predicate isolates exactly one record of a random m-subset of the side's n_side records)."""
    if m >= n_side:
        return (counts == 1).astype(np.float64)
    c = counts.astype(np.float64)
    ok = (c >= 1) & (n_side - c >= m - 1)
    cc = np.where(ok, c, 1.0)
    # c · C(N − c, m − 1) / C(N, m), in logs
    log_h = (np.log(cc) + gammaln(n_side - cc + 1) - gammaln(m) - gammaln(n_side - cc - m + 2)
             - gammaln(n_side + 1) + gammaln(m + 1) + gammaln(n_side - m + 1))
    return np.where(ok, np.exp(log_h), 0.0)


def _score(pr: Prepared, preds: Predicates, naive: Predicates, confidence: float) -> dict[str, Any]:
    """Success on training, control and (naive predicates) training records; E of eq. 8."""
    n = preds.n
    c_train, _ = pr.train.count_exact(preds)
    c_control, _ = pr.control.count_exact(preds)
    c_naive, _ = pr.train.count_exact(naive)
    n_t, n_c = pr.train.n, pr.control.n
    m = min(n_t, n_c)
    h_t = _equal_footing(c_train, n_t, m)
    h_c = _equal_footing(c_control, n_c, m)
    e_star = m / n_t
    side = Side(rate(float(h_t.sum()), n, confidence), rate(float(h_c.sum()), n, confidence),
                e_star=e_star, train_successes=float(h_t.sum()), control_successes=float(h_c.sum()))
    E, ci = side.risk()
    plain_t, plain_c = int((c_train == 1).sum()), int((c_control == 1).sum())
    return {
        # plain success on the whole tables (what anonymeter reports as attack / control rate)
        "e_train": _rd(rate(plain_t, n, confidence)),
        "e_control": _rd(rate(plain_c, n, confidence)),
        "e_naive": _rd(rate(int((c_naive == 1).sum()), max(1, naive.n), confidence)),
        # the size-corrected rates E is computed from
        "equal_footing": {"m": m, "e_train": _rd(side.train, float(h_t.sum())),
                          "e_control": _rd(side.control, float(h_c.sum())), "e_star": e_star},
        "risk": E, "risk_ci": list(ci), "n_attacks": n,
        "_success": c_train == 1,
    }


def _rd(r, successes: float | None = None) -> dict[str, Any]:
    from ._common import rate_dict

    return rate_dict(r, successes)


def _check(ctx: EvaluationContext) -> str | None:
    if ctx.n("holdout") < 1 or ctx.n("real") < 1:
        return "needs training and control records"
    return None


# ------------------------------------------------------------------------------------ the metrics


@metric("singling_out_univariate", family="attacks", source="seed 004 §4.3.1, §5.3.2, §6.2.2",
        risk="singling out", needs=("real", "synthetic", "holdout"))
def singling_out_univariate(ctx: EvaluationContext, *, n_attacks: int = 2000) -> MetricResult:
    """Univariate singling out (seed 004 §4.3.1, §6.2.2): rare single-attribute predicates, E of eq. 8.

    Predicates come from the synthetic table's distinct rows (a value occurring once, a missing value
    occurring once, ``≤ min`` / ``≥ max`` of a numerical column), each kept if it isolates exactly one
    synthetic record; n_attacks of them are drawn at random (fewer only when fewer exist: reported).
    Success = the predicate isolates exactly one record. E (eq. 8) compares training and control on
    equal footing (exact hypergeometric size correction, e* = m/|train|); details carry the plain rates.
    """
    why = _check(ctx)
    if why:
        return MetricResult.not_applicable("singling_out_univariate", why)
    pr = ctx.shared("singling-out predicate tables", lambda: _prepare(ctx))
    cand = _univariate_candidates(pr)
    counts, _ = pr.syn.count_exact(cand)
    cand = cand.take(np.nonzero(counts == 1)[0])
    available = cand.n
    rng = np.random.default_rng([int(salt(ctx, "singling_out_univariate")) % (2**32), 0])
    sizes = {"real": ctx.n("real"), "synthetic": ctx.n("synthetic"), "holdout": ctx.n("holdout")}
    if available == 0:
        return MetricResult.not_applicable(
            "singling_out_univariate", "no single-attribute predicate isolates a synthetic record", sizes=sizes,
            details={"n_requested": n_attacks, "n_available": 0})
    preds = cand.take(np.sort(rng.permutation(available)[: max(1, min(n_attacks, available))]))
    naive = _random_predicates(pr, rng, preds.n, 1)
    s = _score(pr, preds, naive, family_confidence(1))
    success = s.pop("_success")
    _, src = pr.syn.count_exact(preds.take(np.nonzero(success)[0]))
    flagged = np.nonzero(np.isin(pr.syn_rows, src))[0]
    return MetricResult(
        id="singling_out_univariate", value=s["risk"], ci=(s["risk_ci"][0], s["risk_ci"][1]),
        raw=s["e_train"]["rate"], baseline=s["e_control"]["rate"], flagged=flagged,
        sizes={**sizes, "queries": preds.n},
        details={**s, "n_requested": n_attacks, "n_available": available})


@metric("singling_out_multivariate", family="attacks", source="seed 004 §4.3.1, §5.3.2, §6.2.2",
        risk="singling out", needs=("real", "synthetic", "holdout"))
def singling_out_multivariate(ctx: EvaluationContext, *, n_attacks: int = 2000, min_cols: int = 3,
                              max_cols: int = 12, max_attempts: int = 500_000) -> MetricResult:
    """Multivariate singling out (seed 004 §4.3.1, §6.2.2): conjunctions over 3–12 attributes, worst E.

    For each predicate size k in [min_cols, max_cols] (capped at the number of columns): predicates
    built from random distinct synthetic records on k random columns (anonymeter's construction),
    kept when they isolate exactly one synthetic record and are new, until n_attacks (or max_attempts
    candidates: the number found is reported). E per k as in the univariate attack; value = the
    largest E over k (the seed reports the highest risk), its interval Bonferroni-adjusted over the sizes.
    """
    why = _check(ctx)
    if why:
        return MetricResult.not_applicable("singling_out_multivariate", why)
    pr = ctx.shared("singling-out predicate tables", lambda: _prepare(ctx))
    d = len(pr.cols)
    ks = list(range(max(1, min_cols), min(max_cols, d) + 1))
    sizes = {"real": ctx.n("real"), "synthetic": ctx.n("synthetic"), "holdout": ctx.n("holdout")}
    if not ks:
        return MetricResult.not_applicable("singling_out_multivariate",
                                           f"needs at least {min_cols} columns (has {d})", sizes=sizes)
    conf = family_confidence(len(ks))
    parts: dict[str, dict[str, Any]] = {}
    flagged_rows: list[np.ndarray] = []
    base = int(salt(ctx, "singling_out_multivariate")) % (2**32)
    for k in ks:
        rng = np.random.default_rng([base, k])
        preds, src, attempts = _multivariate_candidates(pr, rng, n_attacks, k, max_attempts)
        info: dict[str, Any] = {"n_requested": n_attacks, "n_found": preds.n, "attempts": attempts}
        if preds.n == 0:
            parts[str(k)] = {**info, "risk": None, "reason": "no predicate isolates a synthetic record"}
            continue
        naive = _random_predicates(pr, rng, preds.n, k)
        s = _score(pr, preds, naive, conf)
        flagged_rows.append(src[s.pop("_success")])
        parts[str(k)] = {**s, **info}
    flagged = np.nonzero(np.isin(pr.syn_rows, np.concatenate(flagged_rows)))[0] if flagged_rows else None
    result = worst_of("singling_out_multivariate", parts, label="n_cols", sizes=sizes, flagged=flagged,
                      extra={"n_requested": n_attacks})
    if result.value is not None:
        w = parts[str(result.details["n_cols"])]
        result.details["equal_footing"] = w["equal_footing"]
        result.details["n_found"] = w["n_found"]
        result.sizes = {**sizes, "queries": int(w["n_attacks"])}
    return result
