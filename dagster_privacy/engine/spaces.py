"""Encoded spaces, fitted on the real table only and applied to every table.

- ``euclidean``: one-hot categorical/binary columns + min-max numerical columns (seed 000 §2.1.3, §2.2).
- ``projected``: the PCA projection Φ^k of the euclidean space (seed 000 eq. 25), k = the fewest
  components keeping ``variance`` (default 95 %) of the real table's variance.
- ``codes``: one integer code per column (exact and Hamming matching, seed 000 §2.1.2).
- ``gower``: min-max numerical values and integer codes, mixed by the Gower distance.

Missing values: a missing category is a category of its own; a missing number is placed at the real
median and, when the real column has missing values, a 0/1 "missing" dimension is added in the
euclidean space (docs/metrics.md, "Table model").
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..data.tables import HIGH_CARDINALITY, Schema
from ..errors import MetricError

#: scaled numbers are clipped to [−SCALED_MARGIN, 1 + SCALED_MARGIN]: a value more than one real range
#: outside the real range is far from every real row either way, and clipped it cannot swamp a mean of
#: distances (one synthetic age of 10,000 drove dcr_holdout_diff to 0.0) nor overflow float32
SCALED_MARGIN = 1.0
MISSING = "\x00missing"  # the category a null value becomes (never shown: reports carry no values)


@dataclass
class Encoder:
    """Per-column statistics of the real table: min, range, median, categories."""

    schema: Schema
    num_min: dict[str, float] = field(default_factory=dict)
    num_range: dict[str, float] = field(default_factory=dict)
    num_median: dict[str, float] = field(default_factory=dict)
    num_missing: dict[str, bool] = field(default_factory=dict)
    categories: dict[str, list[str]] = field(default_factory=dict)
    #: per categorical column: the one-hot dimension of each real category (identity, or for a
    #: high-cardinality column the frequency rank among the HIGH_CARDINALITY − 1 most frequent, the rest
    #: sharing the last dimension), and the block's width
    onehot: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def fit(cls, real: pl.DataFrame, schema: Schema) -> Encoder:
        enc = cls(schema)
        for c in schema.columns:
            s = real.get_column(c.name)
            if c.kind == "numerical":
                v = s.drop_nulls()
                lo = float(v.min()) if v.len() else 0.0  # type: ignore[arg-type]
                hi = float(v.max()) if v.len() else 0.0  # type: ignore[arg-type]
                enc.num_min[c.name] = lo
                enc.num_range[c.name] = hi - lo if hi > lo else 1.0  # a constant column: no scaling
                enc.num_median[c.name] = float(v.median()) if v.len() else 0.0  # type: ignore[arg-type]
                enc.num_missing[c.name] = s.null_count() > 0
            else:
                cats = s.fill_null(MISSING).unique().sort().to_list()
                enc.categories[c.name] = cats
                enc.onehot[c.name] = _onehot_dims(s.fill_null(MISSING), cats)
        return enc

    # -- per column pieces -------------------------------------------------------------------------

    def high_cardinality(self, name: str) -> bool:
        """A categorical column with more than HIGH_CARDINALITY real categories."""
        return len(self.categories.get(name, ())) > HIGH_CARDINALITY

    def scaled(self, df: pl.DataFrame, name: str) -> np.ndarray:
        """Min-max scaled values (real range), missing at the scaled real median; float64, clipped to one
        real range beyond either end (SCALED_MARGIN). A value that does not scale to a finite number is
        an error."""
        s = df.get_column(name).fill_null(self.num_median[name])
        with np.errstate(all="ignore"):  # an overflow is reported below, not as a warning on stderr
            x = (s.to_numpy().astype(np.float64) - self.num_min[name]) / self.num_range[name]
        if not np.isfinite(x).all():
            raise MetricError(f"column {name!r}: a value is too large to scale by the real table's range")
        return np.clip(x, -SCALED_MARGIN, 1.0 + SCALED_MARGIN)

    def category_codes(self, df: pl.DataFrame, name: str) -> np.ndarray:
        """Index of each value among the real categories; -1 for a category the real table lacks."""
        cats = self.categories[name]
        mapping = {v: i for i, v in enumerate(cats)}
        s = df.get_column(name).fill_null(MISSING)
        return s.replace_strict(mapping, default=-1, return_dtype=pl.Int64).to_numpy()

    def capped_codes(self, df: pl.DataFrame, name: str) -> np.ndarray:
        """The one-hot dimension of each value (a category the real table lacks: the last, "other")."""
        dims = self.onehot[name]
        codes = self.category_codes(df, name)
        return np.where(codes >= 0, dims[np.maximum(codes, 0)], int(dims.max()))

    # -- spaces --------------------------------------------------------------------------------------

    def euclidean(self, df: pl.DataFrame) -> np.ndarray:
        """One-hot + min-max encoding (float32). An unseen category is an all-zero block."""
        blocks: list[np.ndarray] = []
        n = df.height
        for c in self.schema.columns:
            if c.kind == "numerical":
                blocks.append(self.scaled(df, c.name)[:, None])
                if self.num_missing[c.name]:
                    blocks.append(df.get_column(c.name).is_null().to_numpy().astype(np.float64)[:, None])
            else:
                codes = self.category_codes(df, c.name)
                dims = self.onehot[c.name]
                block = np.zeros((n, int(dims.max()) + 1), dtype=np.float64)
                ok = codes >= 0
                block[np.nonzero(ok)[0], dims[codes[ok]]] = 1.0
                blocks.append(block)
        return np.ascontiguousarray(np.hstack(blocks), dtype=np.float32)

    def euclidean_labels(self) -> list[str]:
        """Column each euclidean dimension comes from (no category values: they may be real)."""
        out: list[str] = []
        for c in self.schema.columns:
            if c.kind == "numerical":
                out.append(c.name)
                if self.num_missing[c.name]:
                    out.append(c.name)
            else:
                out.extend([c.name] * (int(self.onehot[c.name].max()) + 1))
        return out


def _onehot_dims(values: pl.Series, cats: list[str]) -> np.ndarray:
    """One-hot dimension per category (in ``cats`` order): its own, or — past HIGH_CARDINALITY
    categories — its rank by real frequency (ties by value) among the HIGH_CARDINALITY − 1 most
    frequent, every other category sharing the last dimension: an account code of 50,000 values costs
    HIGH_CARDINALITY columns, not 50,000 (two rare codes are then equal in this space only; exact
    matching, Hamming and Gower distances keep every value apart)."""
    if len(cats) <= HIGH_CARDINALITY:
        return np.arange(len(cats))
    counts = values.value_counts(name="n").sort(["n", values.name], descending=[True, False])
    top = counts.get_column(values.name).head(HIGH_CARDINALITY - 1).to_list()
    rank = {v: i for i, v in enumerate(top)}
    return np.array([rank.get(v, HIGH_CARDINALITY - 1) for v in cats], dtype=np.int64)


@dataclass
class Projection:
    """Φ^k (seed 000 eq. 25): PCA fitted on the real table's euclidean encoding."""

    mean: np.ndarray
    components: np.ndarray  # k × d
    explained: float

    @classmethod
    def fit(cls, x_real: np.ndarray, *, variance: float = 0.95) -> Projection:
        """PCA by eigendecomposition of the covariance (numpy/LAPACK ``eigh``; d × d, cheap for
        d ≪ rows, and without scikit-learn's import cost); signs fixed so the largest loading of each
        component is positive, which makes the projection deterministic."""
        x = x_real.astype(np.float64)
        mean = x.mean(axis=0)
        xc = x - mean
        vals, vecs = _covariance_eigen(xc)
        order = np.argsort(vals)[::-1]
        vals, vecs = np.clip(vals[order], 0.0, None), vecs[:, order]
        signs = np.sign(vecs[np.argmax(np.abs(vecs), axis=0), np.arange(vecs.shape[1])])
        vecs = vecs * np.where(signs == 0, 1.0, signs)
        total = vals.sum()
        cum = np.cumsum(vals) / total if total > 0 else np.ones_like(vals)
        k = max(1, min(int(np.searchsorted(cum, variance - 1e-12) + 1), len(vals)))
        return cls(mean, vecs[:, :k].T.copy(), float(cum[k - 1]))

    @property
    def k(self) -> int:
        return int(self.components.shape[0])

    def transform(self, x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray((x.astype(np.float64) - self.mean) @ self.components.T, dtype=np.float32)


def _covariance_eigen(xc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues and unit eigenvectors (columns) of the covariance of centred rows ``xc`` (n × d).
    With more dimensions than rows (a wide table), from the n × n Gram matrix, which has the same
    nonzero eigenvalues: the d × d covariance of 5 rows × 10,000 columns alone was 800 MB. The
    eigenvectors of the Gram path are d × n; a direction of no variance, which the data cannot span,
    is a coordinate axis with eigenvalue 0 (a constant table projects as in the d × d path)."""
    n, d = xc.shape
    if d <= n:
        return np.linalg.eigh(xc.T @ xc / max(1, n - 1))
    vals, u = np.linalg.eigh(xc @ xc.T / max(1, n - 1))
    vecs = xc.T @ u
    norms = np.linalg.norm(vecs, axis=0)
    spans = norms > 1e-12 * float(norms.max(initial=0.0))  # relative: tiny but real spreads count
    vecs = vecs / np.where(spans, norms, np.inf)
    for j, i in enumerate(np.flatnonzero(~spans)):  # no variance to span: a coordinate axis, as eigh
        vecs[min(j, d - 1), i] = 1.0  # gives in the d × d path (a unit vector, eigenvalue 0)
    return np.where(spans, vals, 0.0), vecs


def joint_codes(frames: list[pl.DataFrame], schema: Schema) -> list[np.ndarray]:
    """Integer codes per column shared by every frame: equal values (nulls equal) get equal codes."""
    sizes = [f.height for f in frames]
    out = [np.empty((n, len(schema.columns)), dtype=np.int32) for n in sizes]
    for j, c in enumerate(schema.columns):
        joined = pl.concat([f.get_column(c.name) for f in frames])
        if c.kind == "numerical":
            codes = joined.rank("dense").fill_null(0).to_numpy()
        else:
            codes = joined.fill_null(MISSING).rank("dense").to_numpy()
        start = 0
        for i, n in enumerate(sizes):
            out[i][:, j] = codes[start : start + n]
            start += n
    return out
