"""Is version B really faster than A? Ratios of mean times with bootstrap 95% confidence
intervals over interleaved measurements (harness.session.measure_interleaved: A B C C B A ...), so
that drift of the machine hits every version alike. Samples within one run are correlated (clocks,
caches, a busy host), so each round's mean is one unit, and with few units the interval uses
Student's t on the bootstrap standard error."""
import math
import random
import statistics

from .stats import geomean

RESAMPLES = 2000
# Two-sided 97.5% Student-t quantiles by degrees of freedom; 1.96 beyond the table.
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 12: 2.18,
        15: 2.13, 20: 2.09, 30: 2.04}


def _mean(xs):
    return sum(xs) / len(xs)


def t975(df: int) -> float:
    if df <= 0:
        return math.inf
    keys = [k for k in sorted(T975) if k <= df]
    return T975[keys[-1]] if df <= 30 else 1.96


def _interval(point: float, log_draws: list, units: int) -> tuple[float, float, float]:
    """Bootstrap standard error of the log ratio, widened by Student's t for few units (a plain
    percentile interval is too narrow when there are only a handful of runs)."""
    spread = statistics.stdev(log_draws) * t975(units - 1)
    return point, point * math.exp(-spread), point * math.exp(spread)


def ratio_ci(base: list, other: list, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float, float]:
    """mean(base) / mean(other) (>1: other is faster) and its bootstrap 95% interval."""
    rng = random.Random(seed)
    draws = [math.log(_mean(rng.choices(base, k=len(base))) / _mean(rng.choices(other, k=len(other))))
             for _ in range(resamples)]
    return _interval(_mean(base) / _mean(other), draws, min(len(base), len(other)))


def geomean_ratio_ci(base: list[list], other: list[list], resamples: int = RESAMPLES, seed: int = 0):
    """Across shapes: geomean of per-shape ratios and its bootstrap 95% interval."""
    rng = random.Random(seed)
    point = geomean([_mean(b) / _mean(o) for b, o in zip(base, other)])
    draws = [math.log(geomean([_mean(rng.choices(b, k=len(b))) / _mean(rng.choices(o, k=len(o)))
                               for b, o in zip(base, other)])) for _ in range(resamples)]
    return _interval(point, draws, min(min(len(b), len(o)) for b, o in zip(base, other)))


def verdict(point: float, low: float, high: float) -> str:
    if low <= 1.0 <= high:
        return "no significant difference"
    return f"{point:.3f}x {'faster' if point > 1 else 'slower'}"
