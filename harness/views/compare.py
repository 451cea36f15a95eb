"""Is version B really faster than A? Ratios of times with paired 95% confidence intervals, over
fresh interleaved measurements (harness.evaluator.session.measure_interleaved: A B C C B A ...) so that drift of the machine hits every version
alike. Samples within one run are correlated (clocks, caches, a busy host), so the unit is a round:
in round r every version ran back to back (each in its own worker, all started up front), and the ratio A_r / B_r cancels what
changed between rounds. The interval is Student's t (scipy.stats) on the mean of the per-round log
ratios, taken back with exp: an interval for the geometric mean ratio."""
import math
from typing import NamedTuple

import numpy as np
from scipy import stats

from ..stats import geomean

LEVEL = 0.95


class Interval(NamedTuple):
    """A ratio (>1: the second version is faster) and its confidence interval."""

    point: float
    low: float
    high: float


def log_interval(log_ratios) -> Interval:
    """exp of the mean of paired log ratios and of its Student-t interval; with one round there is
    no interval (0 to infinity)."""
    logs = np.asarray(log_ratios, dtype=float)
    center = float(logs.mean())
    point = math.exp(center)
    if len(logs) < 2:
        return Interval(point, 0.0, math.inf)
    sem = float(stats.sem(logs))
    if sem == 0.0:
        return Interval(point, point, point)
    low, high = stats.t.interval(LEVEL, len(logs) - 1, loc=center, scale=sem)
    return Interval(point, math.exp(low), math.exp(high))


def ratio_ci(base: list, other: list) -> Interval:
    """base / other (>1: other is faster), paired by round: base[r] and other[r] were measured in
    the same round."""
    if len(base) != len(other):
        raise ValueError(f"paired rounds: {len(base)} times against {len(other)}")
    return log_interval(np.log(base) - np.log(other))


def geomean_ratio_ci(base: list[list], other: list[list]) -> Interval:
    """Across shapes: per round, the geomean over shapes of base/other; the interval is over rounds."""
    for b, o in zip(base, other):
        if len(b) != len(o):
            raise ValueError(f"paired rounds: {len(b)} times against {len(o)}")
    per_round = np.mean([np.log(b) - np.log(o) for b, o in zip(base, other)], axis=0)
    return log_interval(per_round)


def verdict(point: float, low: float, high: float) -> str:
    if math.isinf(high):
        return "one round: no interval"
    if low <= 1.0 <= high:
        return "no significant difference"
    return f"{point:.3f}x {'faster' if point > 1 else 'slower'}"


def paired_comparison(pooled: dict[str, dict[int, list[float]]], labels: list[str]) -> dict:
    """diff --measure's numbers (docs/json.md) from {version: {shape index: [mean ns per round]}}: per shape, each
    version's mean over rounds and, for every version after the first (the base), its speedup (the base's time over
    its own, >1: faster) with the paired interval and a verdict; under `geomean` the same across shapes."""
    names = list(pooled)
    base = names[0]
    indices = sorted(pooled[base])

    def entry(name: str, mean_ns: float, interval: Interval | None) -> dict:
        point, low, high = interval or (None, None, None)
        return {"version": name, "mean_ns": mean_ns, "speedup_vs_base": point, "speedup_low": low,
                "speedup_high": high, "verdict": verdict(*interval) if interval else None}
    rows = [{"index": i, "shape": labels[i],
             "versions": [entry(n, float(np.mean(pooled[n][i])),
                                None if n == base else ratio_ci(pooled[base][i], pooled[n][i])) for n in names]}
            for i in indices]
    across = [entry(n, geomean([float(np.mean(pooled[n][i])) for i in indices]),
                    None if n == base else geomean_ratio_ci([pooled[base][i] for i in indices],
                                                            [pooled[n][i] for i in indices])) for n in names]
    return {"base": base, "rows": rows, "geomean": across}
