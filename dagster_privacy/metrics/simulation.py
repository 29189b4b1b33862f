"""Simulation-based metrics of seed 000 §2.1: an adversary guesses, an oracle scores the guesses."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.compiled import kernel
from ..engine.context import EvaluationContext
from ..engine.nearest_sets import nearest_sets
from ..errors import MetricError
from ..results import Measurement, Risk
from .registration import Expect, metric


@metric(
    "crp",
    family="simulation",
    source="seed 000 §2.1.4",
    risk=Risk.REIDENTIFICATION,
    # excess share; a 5 % copy leak: +0.09 (docs). Informs: a share of rows, where exposed_records
    # counts the people copied against chance (issue 45)
    default={"threshold": 0.05, "severity": "WARN"},
    expect=Expect(copy_min=0.999, indep_max=0.02),
)
def crp(ctx: EvaluationContext) -> Measurement:
    """Common Rows Proportion: synthetic rows identical to a real row, per real row (seed 000 §2.1.4).

    CRP = |C_CRP| / (|Y| + 1e-8) (eq. 12) with C_CRP the synthetic rows found in Y, decided on row
    hashes of all used columns. A synthetic table larger than Y can push the formula past 1:
    ``value`` = min(1, CRP), ``raw`` keeps eq. 12.
    """
    copies = ctx.copies_of("synthetic", "real")
    c = int(copies.sum())
    raw = c / (ctx.n("real") + 1e-8)
    # the gate (policy.judge): the share of synthetic rows identical to a training row against the share
    # of holdout rows identical to one (natural duplicates: a table of few distinct records repeats)
    natural = int(ctx.copies_of("holdout", "real").sum()) if ctx.has("holdout") else 0
    n_hold = ctx.n("holdout") if ctx.has("holdout") else 0
    return Measurement(
        value=min(1.0, raw),
        raw=raw,
        baseline=natural / n_hold if n_hold else None,
        flagged=np.nonzero(copies)[0],
        details={
            "common_rows": c,
            "synthetic_share": c / max(1, ctx.n("synthetic")),
            "holdout_common": natural,
        },
        evidence=({"k_t": c, "n_t": ctx.n("synthetic"), "k_c": natural, "n_c": n_hold},),
    )


# ------------------------------------------------------------------ threat model and shared helpers


def threat_columns(ctx: EvaluationContext) -> tuple[list[str], list[str]]:
    """(key columns A_K, sensitive columns A_S) of seed 000 §2.1, with the documented defaults.

    Defaults (docs/metrics.md, "Threat model defaults"), free of the input's column order: no sensitive
    column given → the non-key categorical/binary column with the fewest distinct real values (ties:
    the first name in name order; no such column: any non-key column by the same rule); no key column
    given → every used column that is not sensitive.
    """
    names = ctx.schema.names
    keys, sens = ctx.key_columns, ctx.sensitive_columns
    if not sens:
        rest = [c for c in names if c not in set(keys or ())] or list(names)
        labels = [c for c in rest if ctx.schema.kind(c) != "numerical"] or rest
        real = ctx.table("real")
        sens = [min(labels, key=lambda c: (real.get_column(c).n_unique(), c))]
    if not keys:
        keys = [c for c in names if c not in set(sens)]
    return list(keys), list(sens)


def _keys_for(keys: list[str], sensitive: str) -> tuple[str, ...]:
    """A_K ⊆ A \\ {a_S}: a key column that is also the sensitive one is dropped for that column."""
    k = tuple(c for c in keys if c != sensitive)
    if not k:
        raise MetricError(f"no key column left to infer the sensitive column {sensitive!r}")
    return k


def _by_keys(keys: list[str], sensitive: list[str]) -> dict[tuple[str, ...], list[str]]:
    """Sensitive columns grouped by their key set, so each key space is searched once."""
    out: dict[tuple[str, ...], list[str]] = {}
    for s in sensitive:
        out.setdefault(_keys_for(keys, s), []).append(s)
    return out


def _col(ctx: EvaluationContext, name: str) -> int:
    return ctx.schema.names.index(name)


def _group_ids(ctx: EvaluationContext, columns: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """One integer per row for its combination of values in `columns`, shared by real and synthetic."""
    cols = [_col(ctx, c) for c in columns]
    r, s = ctx.codes("real")[:, cols], ctx.codes("synthetic")[:, cols]
    _, inv = np.unique(np.vstack([r, s]), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    return inv[: r.shape[0]], inv[r.shape[0] :]


def _count_in(sorted_keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """How many entries of the sorted array equal each query value."""
    return np.searchsorted(sorted_keys, query, side="right") - np.searchsorted(
        sorted_keys, query, side="left"
    )


def _sensitive_kind(ctx: EvaluationContext, name: str) -> str:
    return "numerical" if ctx.schema.kind(name) == "numerical" else "categorical"


def _worst(per_column: dict[str, dict], field: str = "value") -> tuple[float, str]:
    col = max(per_column, key=lambda c: per_column[c][field])
    return float(per_column[col][field]), col


# ----------------------------------------------------------------------------------------- ZCAP


@metric(
    "zcap",
    family="simulation",
    source="seed 000 §2.1.1",
    risk=Risk.INFERENCE,
    default={"threshold": 0.05, "severity": "WARN"},  # 0.20 vs 0.0003
    expect=Expect(copy_min=0.8, indep_max=0.4),
)  # 0.84 / 0.32 measured
def zcap(ctx: EvaluationContext) -> Measurement:
    """Categorical Zero CAP: share of key-matching synthetic rows that also hold the real sensitive value.

    Seed 000 §2.1.1, eqs. 3–4: zcap(y) = |C_y| / max(1, |G_y|) with G_y the synthetic rows whose key
    values equal y's exactly and C_y those of them that also share y's sensitive value; ZCAP = mean over
    the real rows. Matching is decided on integer codes (a missing value equals only a missing value).
    Every sensitive column is scored with its own key set A_K \\ {a_S}; value = the worst column.
    A numerical sensitive column is scored on exact equality of its values (each value a category).
    """
    keys, sens = threat_columns(ctx)
    per: dict[str, dict] = {}
    for kcols, group in _by_keys(keys, sens).items():
        g_real, g_syn = _group_ids(ctx, kcols)
        n_groups = int(max(g_real.max(initial=0), g_syn.max(initial=0))) + 1
        matches = np.bincount(g_syn, minlength=n_groups)[g_real]  # |G_y|
        for s in group:
            v_real, v_syn = ctx.codes("real")[:, _col(ctx, s)], ctx.codes("synthetic")[:, _col(ctx, s)]
            width = np.int64(max(v_real.max(initial=0), v_syn.max(initial=0))) + 1
            pair_syn = np.sort(g_syn.astype(np.int64) * width + v_syn)
            correct = _count_in(pair_syn, g_real.astype(np.int64) * width + v_real)  # |C_y|
            score = correct / np.maximum(1, matches)
            per[s] = {
                "value": float(score.mean()),
                "kind": _sensitive_kind(ctx, s),
                "real_rows_matched": int((matches > 0).sum()),
                "key_columns": list(kcols),
            }
    value, col = _worst(per)
    return Measurement(
        value=value, raw=value, details={"worst_column": col, "per_column": per, "sensitive_columns": sens}
    )


# ----------------------------------------------------------------------------------------- GCAP


#: real rows per GCAP job (a function of the sizes only, so every executor runs the same jobs)
_GCAP_ROWS = 1024


@dataclass(frozen=True)
class _Hamming:
    """What every GCAP job reads (put once in the executor's store): the key codes of both sides (the
    synthetic side column-major), split by width (_by_width), and per sensitive column the codes of both
    sides."""

    q: tuple[np.ndarray, ...]  # (real rows, keys): the byte keys (uint8), the wide ones
    r_t: tuple[np.ndarray, ...]  # (keys, synthetic rows): the same keys, the same types
    v_real: np.ndarray  # (sensitive, real rows), in the narrowest type that holds both sides' codes
    v_syn: np.ndarray  # (sensitive, synthetic rows)


def _by_width(q: np.ndarray, r: np.ndarray) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The key codes of the real (q) and synthetic (r) rows, the columns whose codes fit a byte in uint8
    and the others in the narrowest type that holds them: the kernel compares 64 byte codes per vector,
    and a synthetic side of a dozen byte keys stays in a core's L2 cache where int32 codes streamed from
    L3 for every real row. Returns (q's byte keys, q's wide keys), the same of r transposed."""
    low = np.minimum(q.min(axis=0, initial=0), r.min(axis=0, initial=0))
    high = np.maximum(q.max(axis=0, initial=0), r.max(axis=0, initial=0))
    byte = (low >= 0) & (high <= 255)
    wide = _holding(int(low[~byte].min(initial=0)), int(high[~byte].max(initial=0)))
    cols = (np.nonzero(byte)[0], np.uint8), (np.nonzero(~byte)[0], wide)
    q_parts = tuple(np.ascontiguousarray(q[:, c], dtype=t) for c, t in cols)
    r_parts = tuple(np.ascontiguousarray(r[:, c].T, dtype=t) for c, t in cols)
    return q_parts, r_parts


def _holding(low: int, high: int) -> type[np.integer]:
    """The narrowest integer type that holds every value in [low, high]."""
    types = (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32)
    return next((t for t in types if np.iinfo(t).min <= low and high <= np.iinfo(t).max), np.int64)


def _narrow(*codes: np.ndarray) -> tuple[np.ndarray, ...]:
    """The same integer codes in the narrowest type that holds them all."""
    dtype = _holding(min(int(c.min(initial=0)) for c in codes), max(int(c.max(initial=0)) for c in codes))
    return tuple(np.ascontiguousarray(c, dtype=dtype) for c in codes)


#: references whose distances to one real row are counted at once: they stay in the L1 cache
_RUN = 2048


def _gcap_rows(job: _Hamming, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s, e = rows
    (qn, qw), (rn, rw) = job.q, job.r_t
    dist = np.empty(min(rn.shape[1], _RUN), dtype=_holding(0, qn.shape[1] + qw.shape[1]))  # ≤ the keys
    v = np.ascontiguousarray(job.v_real[:, s:e])
    return _hamming_ties(qn[s:e], rn, qw[s:e], rw, v, job.v_syn, dist)


@kernel
def _mismatches(d: np.ndarray, codes: np.ndarray, r_t: np.ndarray, j0: int) -> None:
    """d[j] += how many of the keys differ between ``codes`` and reference row j0 + j."""
    for c in range(codes.shape[0]):
        code, col = codes[c], r_t[c, j0 : j0 + d.shape[0]]
        for j in range(d.shape[0]):
            d[j] += col[j] != code


@kernel
def _hamming_ties(q, r_t, q_wide, r_wide, v_query, v_ref, dist):  # noqa: ANN001, ANN201
    """Per query row i: the minimum Hamming distance to the reference rows (differing codes of the byte
    keys ``q`` / ``r_t`` and the wide ones), how many reference rows are at it, and per sensitive column s
    how many of those hold the row's code (``v_query[s, i] == v_ref[s, j]``). Integer counts: exact; one
    row's distances a run of _RUN references at a time (``dist``: scratch of that length, a type that holds
    the number of keys)."""
    n_rows, n_keys = q.shape[0], q.shape[1] + q_wide.shape[1]
    width = r_t.shape[1]
    low = np.empty(n_rows, dtype=np.int64)
    n_ties = np.zeros(n_rows, dtype=np.int64)
    correct = np.zeros((v_query.shape[0], n_rows), dtype=np.int64)
    for i in range(n_rows):
        m = np.int64(n_keys)  # the running minimum; the counts are of the rows at it so far
        for j0 in range(0, width, _RUN):  # a run of distances stays in the L1 cache throughout
            d = dist[: min(_RUN, width - j0)]
            d[:] = 0
            _mismatches(d, q[i], r_t, j0)
            _mismatches(d, q_wide[i], r_wide, j0)
            low_here = np.int64(n_keys)
            for j in range(d.shape[0]):
                low_here = min(low_here, np.int64(d[j]))
            if low_here > m:
                continue
            if low_here < m:  # a nearer distance: the rows counted so far are not at the minimum
                m = low_here
                n_ties[i] = 0
                correct[:, i] = 0
            t = 0
            for j in range(d.shape[0]):
                t += d[j] == m
            n_ties[i] += t
            for c in range(v_query.shape[0]):
                v, target = v_ref[c, j0 : j0 + d.shape[0]], v_query[c, i]
                hit = 0
                for j in range(d.shape[0]):
                    hit += (d[j] == m) & (v[j] == target)
                correct[c, i] += hit
        low[i] = m
    return low, n_ties, correct


@metric(
    "gcap",
    family="simulation",
    source="seed 000 §2.1.2",
    risk=Risk.INFERENCE,
    default={"threshold": 0.9, "severity": "WARN"},  # 0.83 vs 0.79
    expect=Expect(copy_min=0.8, indep_max=0.7),
)  # 0.84 / 0.61: GCAP always guesses
def gcap(ctx: EvaluationContext) -> Measurement:
    """Categorical Generalized CAP: the nearest synthetic rows by Hamming distance on the keys vote.

    Seed 000 §2.1.2, eqs. 5–6: for each real row y, G_y = every synthetic row at the minimum Hamming
    distance d_H(y[A_K], z[A_K]) (all ties: eq. 5 counts sets), C_y = those sharing y's sensitive
    value; gcap(y) = |C_y| / |G_y|, GCAP = the mean over real rows. Distances are counts of differing
    shared integer codes, one real row against every synthetic row at a time in a compiled kernel
    (exact integers, so ties are exact), jobs of real rows on the executor. Every sensitive column is
    scored; value = the worst. A numerical sensitive column is scored on exact equality of values.
    """
    keys, sens = threat_columns(ctx)
    per: dict[str, dict] = {}
    for kcols, group in _by_keys(keys, sens).items():
        q, r = ctx.mixed("hamming", "real", kcols).cat, ctx.mixed("hamming", "synthetic", kcols).cat
        cols = [_col(ctx, s) for s in group]
        v_real = np.ascontiguousarray(ctx.codes("real")[:, cols].T.astype(np.int64))  # (sensitive, rows)
        v_syn = np.ascontiguousarray(ctx.codes("synthetic")[:, cols].T.astype(np.int64))
        job = _Hamming(*_by_width(q, r), *_narrow(v_real, v_syn))
        n = q.shape[0]
        parts = ctx.executor.map(
            _gcap_rows, job, [(a, min(a + _GCAP_ROWS, n)) for a in range(0, n, _GCAP_ROWS)]
        )
        d_min = np.concatenate([p[0] for p in parts]).astype(np.float64)
        n_ties = np.concatenate([p[1] for p in parts])
        correct = np.concatenate([p[2] for p in parts], axis=1)
        for c, s in enumerate(group):
            score = correct[c] / n_ties
            per[s] = {
                "value": float(score.mean()),
                "kind": _sensitive_kind(ctx, s),
                "mean_tied_rows": float(n_ties.mean()),
                "mean_hamming_distance": float(d_min.mean()),
                "key_columns": list(kcols),
            }
    value, col = _worst(per)
    return Measurement(
        value=value, raw=value, details={"worst_column": col, "per_column": per, "sensitive_columns": sens}
    )


# ------------------------------------------------------------------------------------------ AIR


def _air_counts(extra: tuple, ids: np.ndarray, rows: np.ndarray, refs: np.ndarray) -> dict[str, np.ndarray]:
    """Per real row ``ids``: its tied synthetic rows, and per sensitive column the correct ones."""
    y_val, z_val, numeric = extra
    n = ids.size
    out = {"ties": np.bincount(rows, minlength=n)[:n]}
    for s in y_val:
        ys, zs = y_val[s][ids[rows]], z_val[s][refs]
        ok = _close10(ys, zs) if numeric[s] else ys == zs
        out["tp:" + s] = np.bincount(rows[ok], minlength=n)[:n]
    return out


def _close10(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Eq. 7's match of a continuous value: |y − z| ≤ 0.1·|z| (two missing values match)."""
    with np.errstate(invalid="ignore"):
        return (np.abs(y - z) <= 0.1 * np.abs(z)) | (np.isnan(y) & np.isnan(z))


def _n_close10(y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Per y: #{z ∈ Z : |y − z| ≤ 0.1·|z|}, by binary search on the sorted z.

    For y > 0 the set is z ∈ [y/1.1, y/0.9], for y < 0 z ∈ [y/0.9, y/1.1], for y = 0 only z = 0
    (the bounds are computed in floating point: a z exactly on a bound may fall either side).
    """
    present = np.sort(z[~np.isnan(z)])
    lo = np.minimum(y / 1.1, y / 0.9)
    hi = np.maximum(y / 1.1, y / 0.9)
    out = np.searchsorted(present, hi, side="right") - np.searchsorted(present, lo, side="left")
    return np.where(np.isnan(y), int(np.isnan(z).sum()), out)


def _pattern_weights(ctx: EvaluationContext) -> tuple[np.ndarray, float]:
    """Per real row, w(y) / (copies of y's pattern) with w of eqs. 10–11.

    P(y) = frequency of y's whole row (all used columns, decided on row hashes) in Y; H(Y) =
    −Σ_patterns P log P. Summing eq. 9 over the distinct patterns of Y, each pattern's weight is shared
    by its copies: −P log P / H / (P·|Y|) = −log P / (|Y|·H). The weights of all rows add up to 1.
    """
    _, inv, counts = np.unique(ctx.row_hashes("real"), return_inverse=True, return_counts=True)
    n = ctx.n("real")
    p = counts / n
    h = float(-(p * np.log(p)).sum())
    if h <= 0.0:  # one pattern only: every row carries the same weight
        return np.full(n, 1.0 / n), 0.0
    return -np.log(p[inv.reshape(-1)]) / (n * h), h


@metric(
    "air",
    family="simulation",
    source="seed 000 §2.1.3",
    risk=Risk.INFERENCE,
    default={"threshold": 0.9, "severity": "WARN"},  # 0.83 vs 0.79
    expect=Expect(copy_min=0.6, indep_max=0.55),
)  # 0.65 / 0.48: a mixed tie scores F1 ≈ 0
def air(ctx: EvaluationContext) -> Measurement:
    """Attribute Inference Risk: the nearest synthetic rows (Euclidean, keys) guess the sensitive value.

    Seed 000 §2.1.3, eqs. 7–11. Keys in the one-hot + min-max space fitted on the real table; G_y = all
    synthetic rows at the minimum distance (ties counted as a set, as in GCAP). A pair is correct when
    the sensitive values are equal (categorical) or |y − z| ≤ 0.1·|z| (numerical, eq. 7). F1 is read per
    real record, F1(y[a], Z) of eq. 9: TP = correct tied pairs, FP = wrong tied pairs, FN = |M_y| =
    every synthetic row matching y's sensitive value when y has a wrong pair (else 0);
    F1 = 2TP / (2TP + FP + FN). AIR_a = Σ_y w(y)·F1(y[a], Z) with the entropy weights of eqs. 10–11
    (they add up to 1). Every sensitive column is scored; value = the worst. docs/metrics.md.
    """
    keys, sens = threat_columns(ctx)
    weights, entropy = _pattern_weights(ctx)
    per: dict[str, dict] = {}
    for kcols, group in _by_keys(keys, sens).items():
        q = ctx.encoded("euclidean", "real", kcols)
        r = ctx.encoded("euclidean", "synthetic", kcols)
        assert isinstance(q, np.ndarray) and isinstance(r, np.ndarray)
        numeric = {s: _sensitive_kind(ctx, s) == "numerical" for s in group}
        y_val, z_val = {}, {}
        for s in group:
            if numeric[s]:
                y_val[s] = ctx.table("real").get_column(s).to_numpy().astype(np.float64)
                z_val[s] = ctx.table("synthetic").get_column(s).to_numpy().astype(np.float64)
            else:
                y_val[s] = ctx.codes("real")[:, _col(ctx, s)].astype(np.int64)
                z_val[s] = ctx.codes("synthetic")[:, _col(ctx, s)].astype(np.int64)
        counts = nearest_sets(q, r, _air_counts, (y_val, z_val, numeric), ctx.executor)
        n_ties = counts["ties"]
        tp = {s: counts["tp:" + s] for s in group}
        for s in group:
            if numeric[s]:
                n_match = _n_close10(y_val[s], z_val[s])
            else:
                width = int(max(y_val[s].max(initial=0), z_val[s].max(initial=0))) + 1
                n_match = np.bincount(z_val[s], minlength=width)[y_val[s]]
            t = tp[s]
            fp = n_ties - t
            fn = np.where(fp > 0, n_match, 0)  # |M_y|: only a wrongly matched y has false negatives
            f1 = np.where(t > 0, 2.0 * t / np.maximum(1, 2 * t + fp + fn), 0.0)
            tp_all, fp_all, fn_all = int(t.sum()), int(fp.sum()), int(fn.sum())
            per[s] = {
                "value": float(np.dot(weights, f1)),
                "kind": _sensitive_kind(ctx, s),
                "unweighted_mean_f1": float(f1.mean()),
                "real_rows_all_tied_correct": int((fp == 0).sum()),
                "pooled_f1": 2.0 * tp_all / max(1, 2 * tp_all + fp_all + fn_all),
                "mean_tied_rows": float(n_ties.mean()),
                "key_columns": list(kcols),
            }
    value, col = _worst(per)
    return Measurement(
        value=min(1.0, value),
        raw=value,
        details={"worst_column": col, "per_column": per, "sensitive_columns": sens, "row_entropy": entropy},
    )
