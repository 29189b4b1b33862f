"""How visible are noisy copies at all? (issue 45: the noisy f = 0.2 case of bench_validity.py)

    python benchmarks/bench_noisy_visibility.py [--tables a,b] [--seeds 5]

A noisy copy (``noisy_split``: every numerical cell of a training record moved by 0.05 sd) exposes its
record only when it lies nearer to it than the record's own nearest other training record: otherwise
it is just another point of the population. Per table and split seed, in the product's euclidean space
(one-hot + min-max, fitted on the training table, as the distance gates see it), this prints:

  leaked   the share of copied training records whose nearest synthetic row is nearer than their own
           nearest other training record (strictly; records with a twin left out)
  others   the same share for the training records that were not copied (the release's chance rate)
  gap      leaked − others: what any per-record test can see of the copies
  ratio    median distance from a copied record to its nearest synthetic row / median distance to its
           nearest other training record: ≥ 1 means the noise is at the table's own resolution

  auc      the best membership attack of a family the product does not run, to show what is there to
           find: per record, the distance to its k-th nearest synthetic row over the distance to its k-th
           nearest other real record (training and holdout together, leave one out; a density ratio,
           DOMIAS-like), k in 1, 3, 10, 30, the best k chosen after the fact (optimistic); the AUC of
           copied training records against holdout records (what an attacker gets on a copied person),
           of all training records against holdout records (what a gate on the release can see), and the
           latter on the clean release of the same split (chance, with its selection of k)

  floor    the floor in people for noisy copies: the smallest number K of rare training records copied
           with this noise that the gate's nearer part (its rule, its exact test, its share of the
           standard policy's level) fails with 95 % probability, at the clean release's chance rate and
           the exposure gain a copy gives (the gate's rule, on the 20 % leak: exposed copied records
           minus exposed others), simulated; "none" when even every rare training record would not
  leak     the rare training records the 20 % leak copies (compare with the floor)

A gap near 0 (ratio near or above 1, auc near 0.5) means the copies are indistinguishable from fresh
records of the population: no test with a bounded false-alarm rate can block them, and they single no
one out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


KS = (1, 3, 10, 30)


def _auc(members: np.ndarray, others: np.ndarray) -> float:
    """P(a member's statistic < a non-member's), ties halved (Mann–Whitney); non-finite values left out."""
    from scipy.stats import mannwhitneyu

    x, y = members[np.isfinite(members)], others[np.isfinite(others)]
    return float(1 - mannwhitneyu(x, y).statistic / (x.size * y.size)) if x.size and y.size else 0.5


def _ratio_auc(ctx, members: np.ndarray) -> tuple[float, float]:
    """The best k's AUC of the density-ratio statistic (smaller: more member-like): of the training
    records in ``members`` against every holdout record, and of all training records against them."""
    k_max = max(KS)
    d = {(q, r): ctx.neighbors("euclidean", q, r, k_max).dist for q in ("real", "holdout")
         for r in ("real", "holdout", "synthetic")}  # fmt: skip
    # same-table queries leave the record itself out, so the k-th other record is column k - 1
    own_t = np.sort(np.hstack([d["real", "real"], d["real", "holdout"]]), axis=1)
    own_h = np.sort(np.hstack([d["holdout", "real"], d["holdout", "holdout"]]), axis=1)
    share = ctx.n("synthetic") / (ctx.n("real") + ctx.n("holdout") - 1)
    best = (0.5, 0.5)
    for k in KS:
        ks = max(1, round(k * share))  # the synthetic neighbour that matches k real ones in density
        t = d["real", "synthetic"][:, ks - 1] / np.where(own_t[:, k - 1] > 0, own_t[:, k - 1], np.nan)
        h = d["holdout", "synthetic"][:, ks - 1] / np.where(own_h[:, k - 1] > 0, own_h[:, k - 1], np.nan)
        pair = (_auc(t[members], h), _auc(t, h))
        best = pair if pair[1] > best[1] else best
    return best


def _nearer(ctx):
    """The gate's own nearer part (engine.exposure.nearer) on this evaluation's shared queries."""
    from dagster_privacy.engine.exposure import nearer

    d = {(q, r): ctx.neighbors("euclidean", q, r, 1).dist[:, 0] for q in ("real", "holdout")
         for r in ("real", "holdout", "synthetic")}  # fmt: skip
    own_t = np.minimum(d["real", "real"], d["real", "holdout"])
    own_h = np.minimum(d["holdout", "real"], d["holdout", "holdout"])
    return nearer(own_t, own_h, d["real", "synthetic"], d["holdout", "synthetic"], ctx.n("synthetic"))


def noisy_floor(n_t: int, n_c: int, chance: float, gain: float, level: float, sims: int = 4000) -> float:
    """The smallest K with P(the nearer part's exact test rejects at ``level``) ≥ 0.95 when K rare
    training records are copied, each exposed with probability chance + gain, the others and the holdout
    records with probability chance (binomial draws, seeded); inf when K = n_t does not."""
    from scipy.stats import hypergeom

    rng = np.random.default_rng(45)
    p_copy = min(1.0, chance + max(gain, 0.0))

    def power(k: int) -> float:
        x_t = rng.binomial(n_t - k, chance, sims) + rng.binomial(k, p_copy, sims)
        x_c = rng.binomial(n_c, chance, sims)
        p = hypergeom.sf(x_t - 1, n_t + n_c, n_t, x_t + x_c)
        return float(np.mean((p <= level) & (x_t > 0)))

    if n_t == 0 or n_c == 0:
        return float("inf")
    lo, hi = 0, 1
    while power(hi) < 0.95:  # upward by doubling, as exposure_count.floor; none past every rare record
        if hi >= n_t:
            return float("inf")
        lo, hi = hi, min(2 * hi, n_t)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(mid) >= 0.95 else (mid, hi)
    return float(hi)


def _nearer_level() -> float:
    """The nearer part's level in the standard policy: the gate's fail level × its weight."""
    from dagster_privacy.decision import policy as pol
    from dagster_privacy.metrics.exposure import WEIGHTS

    return pol.resolve("standard").fail_level_of("exposed_records") * WEIGHTS["nearer"]


def visibility(table: str, seed: int) -> dict[str, float]:
    import validity_data

    from dagster_privacy.calibration import noisy_split
    from dagster_privacy.evaluate import prepare

    split = noisy_split(validity_data.load(table), 0.2, seed=seed)
    ctx, _ = prepare(split.train, split.synthetic, split.control, seed=seed)
    # the attack's k nearest first: the context serves every nearest-one query below from them
    ctx.plan(
        [("euclidean", q, r, max(KS)) for q in ("real", "holdout") for r in ("real", "holdout", "synthetic")]
    )
    position = np.empty_like(ctx.input_rows["real"])
    position[ctx.input_rows["real"]] = np.arange(position.size)  # input row → canonical position
    own = ctx.neighbors("euclidean", "real", "real", 1).dist[:, 0]
    syn = ctx.neighbors("euclidean", "real", "synthetic", 1).dist[:, 0]
    leaked = np.zeros(own.size, dtype=bool)
    leaked[position[split.leaked]] = True
    counted = own > 0  # a record with a twin is exposed by no copy
    nearer = syn < own
    a, b = leaked & counted, ~leaked & counted
    share = {
        k: float(nearer[m].mean()) if m.any() else float("nan") for k, m in (("leaked", a), ("others", b))
    }
    ratio = (
        float(np.median(syn[a]) / np.median(own[a])) if a.any() and np.median(own[a]) > 0 else float("nan")
    )
    copied_auc, all_auc = _ratio_auc(ctx, leaked)
    clean = noisy_split(validity_data.load(table), 0.0, seed=seed)
    clean_ctx, _ = prepare(clean.train, clean.synthetic, clean.control, seed=seed)
    _, clean_auc = _ratio_auc(clean_ctx, np.ones(clean_ctx.n("real"), dtype=bool))
    part = _nearer(ctx)  # the gate's rule on the 20 % leak
    rare_t, exposed_t = part.rare_train, part.exposed_train
    gain = float(exposed_t[leaked & rare_t].mean() - exposed_t[~leaked & rare_t].mean())
    chance_part = _nearer(clean_ctx)  # its chance on the clean release
    n_t, n_c = int(chance_part.rare_train.sum()), int(chance_part.rare_holdout.sum())
    exposed = int(chance_part.exposed_train.sum() + chance_part.exposed_holdout.sum())
    chance = exposed / max(1, n_t + n_c)
    return {
        **share, "gap": share["leaked"] - share["others"], "ratio": ratio,
        "auc copied": copied_auc, "auc all": all_auc, "auc clean": clean_auc,
        "floor": noisy_floor(n_t, n_c, chance, gain, _nearer_level()), "leak": float((leaked & rare_t).sum()),
    }  # fmt: skip


def main() -> int:
    import validity_data

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    tables = [t for t in args.tables.split(",") if t] or list(validity_data.TABLES)
    cols = ("leaked", "others", "gap", "ratio", "auc copied", "auc all", "auc clean", "floor", "leak")
    print(f"{'table':<28}" + "".join(f"{c:>11}" for c in cols) + f"   (medians over {args.seeds} seeds)")
    for table in tables:
        rows = [visibility(table, seed) for seed in range(args.seeds)]
        med = {k: float(np.nanmedian([r[k] for r in rows])) for k in cols}
        cells = [f"{med[c]:>11.3f}" for c in cols[:-2]]
        cells += [f"{'none' if not np.isfinite(med[c]) else f'{med[c]:.0f}':>11}" for c in cols[-2:]]
        print(f"{table:<28}" + "".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
