"""Always-valid (anytime) 95% intervals for A/B metrics: confidence sequences.

A fixed-sample interval is valid for one look at one sample size; people look at an
experiment every day, and with a fixed-sample interval each look is another chance of a
false "significant". A confidence sequence holds for every sample size at once: with
probability at least 1 - alpha it contains the true value at all times, so looking as
often as one likes does not inflate the error rate.

The method is the asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy
and Ramdas, "Time-uniform central limit theory and asymptotic confidence sequences"
(Annals of Statistics 52(6), 2024; arXiv:2103.06476), Theorem 2.2: for an asymptotically
linear estimator over t observations with influence-function standard deviation sigma,

    estimate +- sigma * sqrt( 2 (t rho^2 + 1) / (t^2 rho^2) * log( sqrt(t rho^2 + 1) / alpha ) )

which is the two-sided normal-mixture boundary of Howard, Ramdas, McAuliffe and Sekhon,
"Time-uniform, nonparametric, nonasymptotic confidence sequences" (Annals of Statistics
49(2), 2021; arXiv:1810.08240), eq. (14), with the variance estimated from the data.
``rho`` tunes where the sequence is tightest (``rho_for``). For the difference of two arms'
means (the difference-in-means estimator, an arm-versus-baseline comparison) sigma^2 / t
is s_a^2 / n_a + s_b^2 / n_b, the familiar two-sample variance.

Pure Python (the platform has no numpy): aggregates are sums, so this is cheap to
recompute on every request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

ALPHA = 0.05
# The number of observations at which the sequence is tuned to be tightest: an
# experiment is usually read at tens to hundreds of sessions per arm.
TUNED_FOR = 100
# Fewer observations than this (per arm) give no interval. The sequence is valid as the
# sample grows; with a handful of sessions the variance estimate is too noisy, and in
# simulation (sessions_app/tests/records/test_ab_sequential.py) looking from the second
# session on gives 5-7% false positives where looking from the tenth gives 2.5-4.5%.
MIN_N = 10


def rho_for(n: int, alpha: float = ALPHA) -> float:
    """The mixture parameter that makes the boundary tightest at ``n`` observations
    (Waudby-Smith et al. 2024, eq. (2.6))."""
    log_term = -2 * math.log(alpha)
    return math.sqrt((log_term + math.log(log_term + 1)) / n)


def half_width(sigma: float, t: int, alpha: float = ALPHA, rho: float | None = None) -> float:
    """The boundary above, for ``t`` observations with standard deviation ``sigma``."""
    rho = rho_for(TUNED_FOR, alpha) if rho is None else rho
    r2 = rho * rho
    return sigma * math.sqrt(2 * (t * r2 + 1) / (t * t * r2) * math.log(math.sqrt(t * r2 + 1) / alpha))


@dataclass(frozen=True)
class Summary:
    """Count, mean and sample variance (n - 1 in the denominator) of a set of values."""

    n: int
    mean: float
    variance: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Summary:
        items = [float(v) for v in values]
        count = len(items)
        if not count:
            return cls(0, 0.0, 0.0)
        total = math.fsum(items)
        mean = total / count
        variance = math.fsum((v - mean) ** 2 for v in items) / (count - 1) if count > 1 else 0.0
        return cls(int(count), mean, variance)


def mean_interval(s: Summary, alpha: float = ALPHA) -> tuple[float, float] | None:
    """An always-valid interval for the mean; None below ``MIN_N`` observations."""
    if s.n < MIN_N:
        return None
    w = half_width(math.sqrt(s.variance), s.n, alpha)
    return (s.mean - w, s.mean + w)


def difference_interval(arm: Summary, baseline: Summary, alpha: float = ALPHA) -> tuple[float, float] | None:
    """An always-valid interval for ``mean(arm) - mean(baseline)``; None until both arms
    have ``MIN_N`` observations."""
    if arm.n < MIN_N or baseline.n < MIN_N:
        return None
    t = arm.n + baseline.n
    # In the theorem's form: sigma^2 / t = s_a^2 / n_a + s_b^2 / n_b.
    sigma = math.sqrt(t * (arm.variance / arm.n + baseline.variance / baseline.n))
    w = half_width(sigma, t, alpha)
    d = arm.mean - baseline.mean
    return (d - w, d + w)
