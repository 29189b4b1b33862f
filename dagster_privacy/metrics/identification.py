"""Re-identification proxies of seed 000 §2.2 that weigh or map rows: identifiability (§2.2.5), hidden
rate (§2.2.12) and hitting rate (§2.2.13). The rest of §2.2 is in distance.py; choices the seed leaves
open are in docs/metrics.md.
"""

from __future__ import annotations

import numpy as np

from ..engine.context import EvaluationContext
from ..engine.neighbors import knn_euclidean
from ..engine.pairs import knn_self
from ..errors import NotApplicable
from ..results import Measurement, Risk
from .distance import _clip
from .registration import Expect, metric

# ------------------------------------------------------------------------------- Identifiability

#: ε of seed 000 eqs. 21–22
_ID_EPS = 1e-8
_ROWS = 1 << 16  # rows weighted at once
#: candidates per row and tile beyond k in the entropy-weighted space (neighbors.PAD elsewhere): rows
#: that share their categories differ there by less than a float32 score can tell, so a tile's few
#: candidates often leave it unsettled. At 128k Adult-shaped rows, (row, tile) pairs re-ranked against
#: their whole tile: real→real 135,608 with 2, 72,176 with 4 (9.9 → 8.7 s), real→synthetic 77,536 and
#: 37,877 (9.0 → 8.3 s); 6 saved 0.2 s more and would hold more candidates than 2 did (memory, at 256k)
_EW_PAD = 4


def _entropy_weighted(ctx: EvaluationContext, role: str) -> np.ndarray:
    """Ŷ (role "real") or Ẑ ("synthetic") of seed 000 eq. 22 in the one-hot + min-max space (float32).

    Per attribute a and value v: P(Y[a] = v) = the share of real rows holding exactly v (eq. 20's
    frequency; for a numerical attribute the exact value, decided on the shared integer codes, so a
    near-unique number has P ≈ 1/|Y|; a value absent from Y has P = 0 and H = 0); H = −P log P;
    w = 1/(H + ε) (eq. 21); every dimension of attribute a of a row is divided by w(a, v) + ε (eq. 22):
    a one-hot block's 1, a min-max number and its missing flag alike.
    """
    names = ctx.schema.names
    col_of_dim = np.array([names.index(c) for c in ctx.encoder.euclidean_labels()], dtype=np.int64)
    real_codes = ctx.codes("real")
    n_real = real_codes.shape[0]
    codes = ctx.codes(role)
    factor = np.empty(codes.shape, dtype=np.float64)
    for j in range(codes.shape[1]):
        width = int(max(real_codes[:, j].max(initial=0), codes[:, j].max(initial=0))) + 1
        p = np.bincount(real_codes[:, j], minlength=width)[codes[:, j]] / n_real
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.where(p > 0, -p * np.log(p), 0.0)
        w = 1.0 / (h + _ID_EPS)
        factor[:, j] = 1.0 / (w + _ID_EPS)
    x = ctx.euclidean(role)
    weighted = np.empty(x.shape, dtype=np.float32)
    for a in range(0, x.shape[0], _ROWS):  # elementwise, so in blocks: no float64 copy of the space
        weighted[a : a + _ROWS] = x[a : a + _ROWS] * factor[a : a + _ROWS][:, col_of_dim]
    return weighted


@metric(
    "identifiability",
    family="distance",
    source="seed 000 §2.2.5",
    risk=Risk.REIDENTIFICATION,
    default={"threshold": 0.4, "severity": "WARN"},  # 0.46 vs 0.32
    expect=Expect(copy_min=0.999, indep_max=0.3),
)
def identifiability(ctx: EvaluationContext) -> Measurement:
    """Identifiability score: share of real rows nearer to a synthetic row than to any other real row.

    Seed 000 §2.2.5, eqs. 20–23, in the entropy-weighted space Ŷ, Ẑ (``_entropy_weighted``): ID = the
    share of real rows with d(ŷ, ẑ) < d(ŷ, ŷ') (strict), ŷ' the nearest other real row, ẑ the nearest
    synthetic row. raw = value = eq. 23. Exact copies and duplicates are decided on row hashes (the
    weighted space has tiny coordinates, so float32 ties are common): a copy is at distance 0.
    """
    # the weighted tables live only while their queries are computed (the queries are shared; the
    # tables, ~95 MB at 128k rows, would otherwise stay resident for the rest of the evaluation), and Ẑ
    # only after the real→real query, whose candidates are the larger transient
    held: dict[str, np.ndarray] = {}

    def space(role: str) -> np.ndarray:
        if role not in held:
            held[role] = _entropy_weighted(ctx, role)
        return held[role]

    rr = ctx.shared(
        "entropy-weighted real→real k=1",
        lambda: knn_self(space("real"), 1, executor=ctx.executor, pad=_EW_PAD),
    )
    rs = ctx.shared(
        "entropy-weighted real→synthetic k=1",
        lambda: knn_euclidean(space("real"), space("synthetic"), 1, executor=ctx.executor, pad=_EW_PAD),
    )
    held.clear()
    d_rr, d_rs = rr.dist[:, 0].copy(), rs.dist[:, 0].copy()
    hashes = ctx.row_hashes("real")
    _, inv, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    d_rr[counts[inv.reshape(-1)] > 1] = 0.0  # a real duplicate is the nearest other real row
    d_rs[ctx.copies_of("real", "synthetic")] = 0.0  # a synthetic copy is the nearest synthetic row
    at_risk = d_rs < d_rr
    raw = float(at_risk.mean())
    return Measurement(
        value=_clip(raw), raw=raw, details={"identifiable_real_rows": int(at_risk.sum()), "epsilon": _ID_EPS}
    )


# ----------------------------------------------------------------------------------- Hidden rate


@metric(
    "hidden_rate",
    family="distance",
    source="seed 000 §2.2.12",
    risk=Risk.MEMBERSHIP,
    default={"threshold": 0.1, "severity": "WARN", "optional": True},  # needs the source-row mapping
    expect=Expect(copy_min=None, indep_max=None),
    queries=(("projected", "real", "synthetic", 1),),
)  # needs the source-row mapping g
def hidden_rate(ctx: EvaluationContext) -> Measurement:
    """Hidden rate: real rows whose nearest synthetic row is one generated from them, per synthetic row.

    Seed 000 §2.2.12, eq. 31, in Φ^k with d_M = the Minkowski distance of order 2. g comes from the
    synthetic table's source-index column (``source_index_column=``); without it the metric is
    ``not_applicable`` — row i is never assumed to come from real row i. A real row counts when one of
    the synthetic rows generated from it is at its minimum distance (ties included). The numerator
    counts distinct real rows, each with at least one synthetic row of its own, so eq. 31 ≤ 1.
    """
    g = ctx.source_index
    if g is None:
        raise NotApplicable(
            "needs the synthetic→real source-row mapping g: give source_index_column= "
            "(--source-index-column C)"
        )
    nn = ctx.neighbors("projected", "real", "synthetic", 1)
    x, z = ctx.projected("real"), ctx.projected("synthetic")
    diff = x[g].astype(np.float64) - z.astype(np.float64)
    d_own = np.sqrt(np.einsum("ij,ij->i", diff, diff))  # each synthetic row to its own source row
    own_best = np.full(ctx.n("real"), np.inf)
    np.minimum.at(own_best, g, d_own)
    # the same float64 arithmetic as the engine's recomputed distances: equal pairs give equal figures
    hidden = own_best <= nn.dist[:, 0] + 1e-12
    raw = float(hidden.sum()) / ctx.n("synthetic")
    flagged = np.nonzero(d_own <= nn.dist[g, 0] + 1e-12)[0]
    return Measurement(
        value=_clip(raw),
        raw=raw,
        flagged=flagged,
        details={
            "hidden_real_rows": int(hidden.sum()),
            "real_rows_with_synthetic": int(np.unique(g).size),
            "projection_k": ctx.projection.k,
        },
    )


# ---------------------------------------------------------------------------------- Hitting rate

#: (real, synthetic) candidate pairs checked at once
_HIT_BATCH = 1 << 22


def _hit_groups(ctx: EvaluationContext, cat: list[str], num: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """One id per row for its categorical values and its numerical columns' missing pattern."""
    names = ctx.schema.names
    parts = []
    for role in ("real", "synthetic"):
        codes = ctx.codes(role)[:, [names.index(c) for c in cat]].astype(np.int64)
        nulls = (
            np.column_stack([ctx.table(role).get_column(c).is_null().to_numpy() for c in num])
            if num
            else np.empty((codes.shape[0], 0), dtype=bool)
        )
        parts.append(np.hstack([codes, nulls.astype(np.int64)]))
    n_real = parts[0].shape[0]
    stacked = np.vstack(parts)
    if stacked.shape[1] == 0:
        return np.zeros(n_real, np.int64), np.zeros(stacked.shape[0] - n_real, np.int64)
    _, inv = np.unique(stacked, axis=0, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    return inv[:n_real], inv[n_real:]


@metric(
    "hitting_rate",
    family="distance",
    source="seed 000 §2.2.13",
    risk=Risk.MEMBERSHIP,
    default={"threshold": 0.2, "severity": "WARN"},  # 0.30 vs 0.11
    expect=Expect(copy_min=0.999, indep_max=0.05),
)  # a classifier cannot tell a copy from the real table (value 0 there); this test's independent
def hitting_rate(ctx: EvaluationContext) -> Measurement:
    """Hitting rate: real rows with a synthetic row equal on categories and within h(a) on numbers.

    Seed 000 §2.2.13, eqs. 32–33: a pair (y, z) hits when every categorical/binary value is equal and
    every numerical value is within h(a) = (max − min of the real column)/30 (a missing number hits only
    a missing number). raw = eq. 33 = |C_HitR| / |Y|, which counts pairs and can exceed 1; value = the
    share of real rows with at least one hit (≤ min(1, raw), equal to raw when no real row is hit twice).
    Exact: candidate pairs come from sorting (same categories, the most selective numerical column's
    window), then every numerical condition is checked on them, in bounded batches.
    """
    cat = ctx.schema.of_kind("categorical", "binary")
    num = ctx.schema.of_kind("numerical")
    g_real, g_syn = _hit_groups(ctx, cat, num)
    n_real = ctx.n("real")
    yv = {c: ctx.table("real").get_column(c).to_numpy().astype(np.float64) for c in num}
    zv = {c: ctx.table("synthetic").get_column(c).to_numpy().astype(np.float64) for c in num}
    h = {}
    for c in num:
        present = yv[c][~np.isnan(yv[c])]
        h[c] = float(present.max() - present.min()) / 30.0 if present.size else 0.0
        # a missing value sits in its own group (missing pattern): 0 on both sides compares equal
        yv[c], zv[c] = np.nan_to_num(yv[c], nan=0.0), np.nan_to_num(zv[c], nan=0.0)
    if not num:
        counts = np.bincount(g_syn, minlength=int(max(g_real.max(initial=0), g_syn.max(initial=0))) + 1)[
            g_real
        ]
        pairs, hit = int(counts.sum()), counts > 0
        hit_syn = np.nonzero(np.isin(g_syn, g_real[hit]))[0]
    else:
        # candidates: same group and the lead column within its window, by binary search on sorted keys
        lead = max(num, key=lambda c: np.unique(yv[c]).size)
        u = np.unique(zv[lead])
        rank_z = np.searchsorted(u, zv[lead])
        lo_rank = np.searchsorted(u, np.nextafter(yv[lead] - h[lead], -np.inf), side="left")
        hi_rank = np.searchsorted(u, np.nextafter(yv[lead] + h[lead], np.inf), side="right")
        width = np.int64(u.size + 1)
        key_z = g_syn * width + rank_z
        order = np.argsort(key_z, kind="stable")
        key_sorted = key_z[order]
        lo = np.searchsorted(key_sorted, g_real * width + lo_rank, side="left")
        hi = np.searchsorted(key_sorted, g_real * width + hi_rank, side="left")
        cnt = hi - lo
        ends = np.cumsum(cnt)
        hits_per_real = np.zeros(n_real, dtype=np.int64)
        syn_hit = np.zeros(ctx.n("synthetic"), dtype=bool)
        start = 0
        while start < n_real:
            base = int(ends[start - 1]) if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, base + _HIT_BATCH, side="right")))
            per = cnt[start:stop]
            total = int(per.sum())
            if total:
                rows = np.repeat(np.arange(start, stop), per)
                first = np.repeat(np.cumsum(per) - per, per)
                idx = order[np.repeat(lo[start:stop], per) + (np.arange(total) - first)]
                ok = np.ones(total, dtype=bool)
                for col in num:
                    ok &= np.abs(yv[col][rows] - zv[col][idx]) <= h[col]
                hits_per_real[start:stop] += np.bincount(rows[ok] - start, minlength=stop - start)
                syn_hit[idx[ok]] = True
            start = stop
        pairs, hit = int(hits_per_real.sum()), hits_per_real > 0
        hit_syn = np.nonzero(syn_hit)[0]
    raw = pairs / n_real
    value = float(hit.mean())
    return Measurement(
        value=_clip(value),
        raw=raw,
        flagged=hit_syn,
        details={
            "hit_pairs": pairs,
            "real_rows_hit": int(hit.sum()),
            "raw_capped": min(1.0, raw),
            "synthetic_rows_hitting": int(hit_syn.size),
            "thresholds_over_range": 1.0 / 30.0,
        },
    )
