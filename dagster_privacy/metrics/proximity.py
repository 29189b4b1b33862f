"""Seed 003's privacy score (``proximity_ratio_score``): train-to-train against train-to-synthetic
proximity ratios over random halves of the training table. A holdout-style indicator whose reference is
a second half of the training table; its helpers (rounding, tail quantiles) are the holdout module's.
Choices the seed leaves open are in docs/metrics.md, "Holdout-referenced indicators".
"""

from __future__ import annotations

import numpy as np

from ..data import tables as tb
from ..engine.context import EvaluationContext
from ..engine.neighbors import Neighbors, knn_euclidean
from ..errors import MetricError
from ..results import Measurement, Risk
from .holdout import RESAMPLES, SHARED_K, SPACE, _clip, _round, _share, _tail
from .registration import Expect, metric
from .stats import bootstrap_ci

# -------------------------------------------------------------------------------------- seed 003

#: neighbours of the shared real→real query the splits read their two nearest distances from: a row
#: whose SPLIT_K nearest all fall in one half (probability 2^−SPLIT_K per row) gets its own exact query
SPLIT_K = 8


def _split_keys(ctx: EvaluationContext, salt: int) -> np.ndarray:
    """A seeded sort key per real row that depends on its values only (not on row or column order).

    Content hash (columns sorted by name) xor a seeded salt, through the splitmix64 finaliser.
    Identical rows get distinct keys through their occurrence number, so duplicates are split at
    random like any other rows (identical rows are interchangeable: which copy goes where does not
    change a distance).
    """
    real = ctx.table("real")
    h = real.select(sorted(real.columns)).hash_rows(seed=0).to_numpy().astype(np.uint64)
    return tb.salted_keys(h, np.uint64(salt))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num/den; 0 when num = 0 (the row's own values are in the reference), ∞ when only den = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(num <= 0.0, 0.0, np.where(den > 0.0, num / np.where(den > 0.0, den, 1.0), np.inf))
    return _round(r)


def _split_distances(
    ctx: EvaluationContext, x: np.ndarray, rr: Neighbors, r1: np.ndarray, r2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For every row of R1: the distance to its nearest row of R2 and of R1 other than itself, read
    off the shared real→real neighbours; rows without one among them get an exact query of their own."""
    in_r2 = np.zeros(x.shape[0], dtype=bool)
    in_r2[r2] = True
    idx, dist = rr.idx[r1], rr.dist[r1]
    out = []
    for side in (in_r2[idx], ~in_r2[idx]):  # (in R2, in R1 ∖ r): the list never holds the row itself
        has = side.any(axis=1)
        d = np.where(has, dist[np.arange(r1.size), side.argmax(axis=1)], np.nan)
        out.append((d, np.nonzero(~has)[0]))
    (d12, miss2), (d11, miss1) = out
    if miss2.size:
        q = np.ascontiguousarray(x[r1[miss2]])
        d12[miss2] = knn_euclidean(q, np.ascontiguousarray(x[r2]), 1, executor=ctx.executor).dist[:, 0]
    if miss1.size:  # two nearest of R1: the row itself (or an identical row) first, then the next
        q = np.ascontiguousarray(x[r1[miss1]])
        nn = knn_euclidean(q, np.ascontiguousarray(x[r1]), min(2, r1.size), executor=ctx.executor)
        own = nn.idx == miss1[:, None]
        d11[miss1] = np.where(own[:, 0], nn.dist[:, -1], nn.dist[:, 0])
    return d12, d11


@metric(
    "proximity_ratio_score",
    family="holdout",
    source="seed 003",
    risk=Risk.REIDENTIFICATION,
    queries=((SPACE, "real", "synthetic", SHARED_K), (SPACE, "real", "real", SPLIT_K)),
    default={"threshold": 0.5, "severity": "WARN"},  # seed 003 score < 50
    expect=Expect(copy_min=0.89, indep_max=0.2),
)  # at most 1 − α = 0.9
def proximity_ratio_score(ctx: EvaluationContext, *, alpha: float = 0.1, splits: int = 5) -> Measurement:
    """Privacy score of seed 003 from Train-to-Train and Train-to-Synthetic proximity ratios.

    Split the training table R into halves R1, R2 (seeded). For r ∈ R1: TTPR = d(r, R2)/d(r, R1∖r),
    TSPR = d(r, S)/d(r, R1∖r). thr = α-quantile of TTPR (α = 0.1); a = share of TTPR below thr (α by
    construction, exact ties weighted), b = the same share for TSPR. raw = score = 100·min(1, a/b):
    100 when synthetic rows are no closer to R1 than R2 is. Pooled over `splits` seeded splits (a, b
    averaged). value = 1 − score/100 (at most 1 − α: every record copied gives b = 1); baseline = α;
    CI = the spread of a single split's score (split drawn and R1 rows resampled), the variance seed
    003 warns about. flagged = the nearest synthetic row of each R1 record below thr.
    """
    if not 0.0 < alpha < 1.0:
        raise MetricError("alpha must be in (0, 1)")
    n = ctx.n("real")
    if n < 4:
        raise MetricError("the proximity ratio needs at least 4 training rows (two halves of 2)")
    splits = max(1, int(splits))
    rng = ctx.rng("proximity_ratio_score")
    salts = rng.integers(0, 2**63, size=splits)
    x, hashes = ctx.euclidean("real"), ctx.row_hashes("real")
    # one shared real→real query serves every split: a row's nearest in R2 and in R1∖r are the first
    # of its nearest neighbours in each half (the same exact distances the half-size queries find)
    rr = ctx.neighbors(SPACE, "real", "real", SPLIT_K)
    to_syn = ctx.neighbors(SPACE, "real", "synthetic", SHARED_K)  # shared with the other indicators
    d_syn = _round(to_syn.dist[:, 0])
    ttpr_all, tspr_all, a_s, b_s = [], [], [], []
    flagged: set[int] = set()
    for salt in salts:
        r1, ttpr, tspr = _ratios(ctx, (x, rr, hashes, d_syn), int(salt))
        thr, t = _tail(ttpr, alpha)
        a_s.append(_share(ttpr, thr, t))
        b_s.append(_share(tspr, thr, t))
        ttpr_all.append(ttpr)
        tspr_all.append(tspr)
        close = (tspr < thr) | (tspr <= 0.0)
        flagged.update(int(v) for v in np.unique(to_syn.idx[r1[close], 0]))

    def score(a: float, b: float) -> float:
        return 100.0 if b <= 0.0 else 100.0 * min(1.0, a / b)

    a, b = float(np.mean(a_s)), float(np.mean(b_s))
    raw = score(a, b)
    value = _clip(1.0 - raw / 100.0)
    pick = rng.integers(0, splits, RESAMPLES)
    counter = iter(range(RESAMPLES))

    def single(idx: np.ndarray) -> float:
        s = int(pick[next(counter)])
        tt, ts = ttpr_all[s][idx], tspr_all[s][idx]
        thr, t = _tail(tt, alpha)
        return 1.0 - score(_share(tt, thr, t), _share(ts, thr, t)) / 100.0

    lo, hi = bootstrap_ci(single, n // 2, rng, resamples=RESAMPLES)
    ci = (_clip(min(lo, value)), _clip(max(hi, value)))
    return Measurement(
        value=value,
        raw=raw,
        baseline=alpha,
        ci=ci,
        flagged=np.array(sorted(flagged), dtype=np.int64),
        sizes={"real": n, "synthetic": ctx.n("synthetic"), "r1": n // 2, "r2": n - n // 2, "queries": n // 2},
        details={
            "alpha": alpha,
            "splits": splits,
            "space": SPACE,
            "ttpr_share": a,
            "tspr_share": b,
            "ratio": a / b if b > 0 else None,
            "per_split_score": [score(p, q) for p, q in zip(a_s, b_s, strict=True)],
            "privacy_score": raw,
            "ratio_direction": "TTPR share / TSPR share",
        },
    )


def _ratios(
    ctx: EvaluationContext, shared: tuple[np.ndarray, Neighbors, np.ndarray, np.ndarray], salt: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One seeded split: (R1's rows, their TTPR, their TSPR); ``shared``: the euclidean rows, the shared
    real→real query, the row hashes and each real row's rounded distance to the synthetic table."""
    x, rr, hashes, d_syn = shared
    n = ctx.n("real")
    order = np.argsort(_split_keys(ctx, salt), kind="stable")
    r1, r2 = order[: n // 2], order[n // 2 :]
    d12, d11 = _split_distances(ctx, x, rr, r1, r2)
    # exact copies on hashes, never on a float distance (a float32 tie may hide the copy)
    h1 = hashes[r1]
    d12 = np.where(np.isin(h1, hashes[r2]), 0.0, d12)
    _, inv, cnt = np.unique(h1, return_inverse=True, return_counts=True)
    den = _round(np.where(cnt[inv] > 1, 0.0, d11))
    return r1, _ratio(_round(d12), den), _ratio(d_syn[r1], den)
