"""Intervals: Wilson score, seeded bootstrap, and the control-baseline risk E of seed 004 eq. 8."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .errors import MetricError


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

    def to_dict(self) -> dict[str, float | int]:
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
