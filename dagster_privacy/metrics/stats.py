"""Intervals: Wilson score, seeded bootstrap, and the control-baseline risk E of seed 004 eq. 8."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..errors import MetricError


@dataclass(frozen=True)
class Rate:
    """A success rate with its Wilson interval (the figure always travels with its interval)."""

    successes: int
    n: int
    value: float  # the plain rate successes / n
    center: float  # the Wilson centre
    low: float
    high: float

    @property
    def error(self) -> float:
        return (self.high - self.low) / 2.0

    def to_dict(self) -> dict[str, float | int | list[float]]:
        return {"rate": self.value, "ci": [self.low, self.high], "successes": self.successes, "n": self.n}


def z_score(confidence: float = 0.95) -> float:
    """Two-sided standard normal quantile (1.96 at 95 %); the standard library's, which spares every
    run scipy.stats' one-second import."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson(successes: int, n: int, confidence: float = 0.95) -> Rate:
    """Wilson score interval of a binomial rate."""
    if n <= 0:
        raise MetricError("a rate needs at least one trial")
    z = z_score(confidence)
    p = successes / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return Rate(int(successes), int(n), p, center, max(0.0, center - half), min(1.0, center + half))


def control_risk(train: Rate, control: Rate, e_star: float = 1.0) -> tuple[float, tuple[float, float]]:
    """E = (e_train − e_control)/(e* − e_control) (seed 004 eq. 8), clipped to [0, 1].

    The interval propagates the two Wilson half-widths to first order, as anonymeter does:
    dE = sqrt((dE/de_t · σ_t)² + (dE/de_c · σ_c)²) around the Wilson centres.
    """
    t, c = train.center, control.center
    denom = e_star - c
    if denom <= 0:
        return 0.0, (0.0, 1.0)  # the control already reaches the maximum: nothing left to detect
    e = (t - c) / denom
    d_t = 1.0 / abs(denom)
    d_c = abs((t - e_star) / denom**2)
    err = math.sqrt((train.error * d_t) ** 2 + (control.error * d_c) ** 2)
    return _unit(e), (_unit(e - err), _unit(e + err))


def _unit(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


@dataclass(frozen=True)
class Excess:
    """What a gate decided on: the estimate of its excess risk E over the control and one-sided bounds,
    ``lower`` at the fail level and ``upper`` at the pass level (both simultaneous over ``parts``)."""

    estimate: float
    lower: float
    upper: float
    parts: int


def _one_sided_wilson(successes: float, n: int, level: float) -> tuple[float, float]:
    """Wilson bounds whose each side holds with probability 1 − level (two-sided 1 − 2·level)."""
    if n <= 0:
        return 0.0, 1.0
    r = wilson(min(max(successes, 0.0), n), n, 1.0 - 2.0 * level)  # type: ignore[arg-type]
    return r.low, r.high


def excess_part(
    k_t: float, n_t: int, k_c: float, n_c: int, e_star: float, fail_level: float, pass_level: float
) -> tuple[float, float, float]:
    """(excess, lower, upper) of the excess success (p_t − p_c)/e*: a training and a control success
    rate's difference, bounded by Newcombe's hybrid score method (Wilson bounds of each rate combined in
    quadrature: sound at 0 or a few successes, where the normal approximation is not), per unit of the
    attack's maximum success e*. Not eq. 8's (p_t − p_c)/(e* − p_c): dividing by what the control
    leaves blows the noise up where the control already succeeds often (a column guessed right 90 % of
    the time with no leak at all), so a gate on it could decide nothing (docs/metrics.md).
    ``n_c = 0``: no control: the training rate cannot be told from what the population itself gives
    (natural twins), so the lower bound is 0 (never evidence of risk) and the upper bound is the
    training rate's own. ``lower`` holds with probability 1 − fail_level, ``upper`` with
    1 − pass_level."""
    p_t = k_t / n_t if n_t > 0 else 0.0
    p_c = k_c / n_c if n_c > 0 else 0.0
    denom = e_star
    if n_t <= 0 or denom <= 1e-12:
        return 0.0, 0.0, 1.0
    lt, _ = _one_sided_wilson(k_t, n_t, fail_level)
    _, uc = _one_sided_wilson(k_c, n_c, fail_level) if n_c > 0 else (p_c, p_c)
    _, ut = _one_sided_wilson(k_t, n_t, pass_level)
    lc, _ = _one_sided_wilson(k_c, n_c, pass_level) if n_c > 0 else (p_c, p_c)
    d = p_t - p_c
    low = d - math.sqrt((p_t - lt) ** 2 + (uc - p_c) ** 2) if n_c > 0 else 0.0
    high = d + math.sqrt((ut - p_t) ** 2 + (p_c - lc) ** 2)
    return _unit(d / denom), _unit(low / denom), _unit(high / denom)


def part_figures(
    parts: list[dict[str, float]], fail_level: float, pass_level: float
) -> list[tuple[float, float, float]]:
    """(excess, lower, upper) of each part alone (``excess_part``), its lower bound at ``fail_level``."""
    return [
        excess_part(
            float(p["k_t"]),
            int(p["n_t"]),
            float(p["k_c"]),
            int(p["n_c"]),
            float(p.get("e_star", 1.0)),
            fail_level,
            pass_level,
        )
        for p in parts
    ]


def excess(parts: list[dict[str, float]], *, fail_level: float, pass_level: float) -> Excess:
    """The gate's E over one or more parts (columns, predicate sizes, attacks): the largest. Its lower
    bound is taken at the fail level divided by the number of parts (Bonferroni), so the maximum over
    noisy parts does not read as risk by selection alone; its upper bound, the largest part's upper
    bound, needs no division: a pass asks every part to be within the threshold, an intersection-union
    test whose error is at most each part's (a second reading of the rule: dividing only cost power).
    Each part: ``k_t, n_t, k_c, n_c`` and ``e_star``."""
    if not parts:
        raise MetricError("no evidence to decide on")
    j = len(parts)
    figs = part_figures(parts, fail_level / j, pass_level)
    return Excess(max(f[0] for f in figs), max(f[1] for f in figs), max(f[2] for f in figs), j)


def clustered_se(*parts: tuple[np.ndarray, np.ndarray]) -> float:
    """Standard error of a sum of means Σ mean(x_k), each ``(x_k, keys_k)`` a per-row figure and its
    row's content key, with rows of equal content, on any side, one cluster (cluster-robust, with the
    small-sample factor G / (G − 1) over G clusters; inf under 2 clusters): twins share their nearest
    neighbours, so on a table of many twins the rows are not independent draws and a binomial error on
    the row count is too small (issue 46: a clean Arrests release's ``nnaa`` stood 3.5 binomial widths
    above unseen rows; over 30 clean splits the z-score's sd was 1.5)."""
    if any(len(x) == 0 for x, _ in parts):
        return math.inf
    keys = np.concatenate([np.asarray(k) for _, k in parts])
    contrib = np.concatenate([(np.asarray(x, dtype=np.float64) - np.mean(x)) / len(x) for x, _ in parts])
    _, inverse = np.unique(keys, return_inverse=True)
    u = np.bincount(inverse.ravel(), weights=contrib)
    g = u.size
    if g < 2:
        return math.inf
    return float(math.sqrt(float(np.sum(u * u)) * g / (g - 1)))


#: an order statistic of per-record distances is reported only over at least this many records
MIN_SURROUND = 20


def reported_order_statistic(x: np.ndarray, q: float = 0.5) -> float | None:
    """A quantile of per-record figures for ``details`` (it reaches Dagster metadata and reports):
    withheld under MIN_SURROUND records and rounded to 3 significant digits, because on a degenerate
    table a median distance is one record's own scaled value (issue 31 case 12). Never used to decide."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < MIN_SURROUND:
        return None
    return float(f"{float(np.quantile(x, q)):.3g}")


def bootstrap_ci(
    statistic: Callable[[np.ndarray], float],
    n: int,
    rng: np.random.Generator,
    *,
    resamples: int = 200,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap over n query rows: ``statistic`` receives resampled row indices."""
    values = np.array([statistic(rng.integers(0, n, n)) for _ in range(resamples)], dtype=np.float64)
    lo, hi = np.quantile(values, [(1 - confidence) / 2, 1 - (1 - confidence) / 2])
    return float(lo), float(hi)


def bonferroni(confidence: float, m: int) -> float:
    """Per-test confidence for m simultaneous intervals at the family level `confidence`."""
    return 1.0 - (1.0 - confidence) / max(1, m)


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper–Pearson) binomial interval: where a low rate needs its interval to be exact,
    not Wilson's approximation (membership inference at 0.1 % false positives)."""
    from scipy.stats import beta  # here: scipy.stats costs a second to import

    a = 1.0 - confidence
    lo = 0.0 if successes == 0 else float(beta.ppf(a / 2, successes, n - successes + 1))
    hi = 1.0 if successes == n else float(beta.ppf(1 - a / 2, successes + 1, n - successes))
    return lo, hi
