"""Is version B really faster than A? Ratios of mean times with bootstrap 95% confidence
intervals, and fresh interleaved measurements (A B C A B C ...) so that drift of the machine hits
every version alike. Samples within one run are correlated (clocks, caches, a busy host), so
--measure bootstraps over runs: each round's mean is one unit."""
import random

from .stats import geomean

RESAMPLES = 2000


def _mean(xs):
    return sum(xs) / len(xs)


def ratio_ci(base: list, other: list, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float, float]:
    """mean(base) / mean(other) (>1: other is faster) and its bootstrap 95% interval."""
    rng = random.Random(seed)
    stats = sorted(_mean(rng.choices(base, k=len(base))) / _mean(rng.choices(other, k=len(other)))
                   for _ in range(resamples))
    return _mean(base) / _mean(other), stats[int(0.025 * resamples)], stats[int(0.975 * resamples) - 1]


def geomean_ratio_ci(base: list[list], other: list[list], resamples: int = RESAMPLES, seed: int = 0):
    """Across shapes: geomean of per-shape ratios and its bootstrap 95% interval."""
    rng = random.Random(seed)
    point = geomean([_mean(b) / _mean(o) for b, o in zip(base, other)])
    stats = sorted(geomean([_mean(rng.choices(b, k=len(b))) / _mean(rng.choices(o, k=len(o)))
                            for b, o in zip(base, other)]) for _ in range(resamples))
    return point, stats[int(0.025 * resamples)], stats[int(0.975 * resamples) - 1]


def verdict(point: float, low: float, high: float) -> str:
    if low <= 1.0 <= high:
        return "no significant difference"
    return f"{point:.3f}x {'faster' if point > 1 else 'slower'}"


def measure_interleaved(subs: list, shapes: str, rounds: int, on_round=None) -> dict:
    """Benchmark every version `rounds` times in turn (A B C A B C ...); per version and shape
    index, the mean of each round: {version: {index: [ns, ...]}}. Records are not written."""
    from .session import execute
    pooled = {s.version: {} for s in subs}
    for r in range(rounds):
        for sub in subs:
            summary = execute(sub, "benchmark", shapes)
            if not summary.passed:
                raise RuntimeError(f"{sub.version} did not pass benchmark mode in round {r + 1}")
            for rec in summary.records:
                pooled[sub.version].setdefault(rec["index"], []).append(rec["stats"]["mean"])
            if on_round:
                on_round(r + 1, sub.version)
    return pooled
