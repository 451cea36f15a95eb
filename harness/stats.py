"""Sample statistics as the contest reports them, plus the median and the geometric mean (times in ns)."""
import math
import statistics
from dataclasses import asdict, dataclass


@dataclass
class Stats:
    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float
    median: float

    def as_dict(self) -> dict:
        return asdict(self)


def calculate(durations: list[float]) -> Stats:
    """Contest statistics (std with n-1, err = std/sqrt(n)) plus the median."""
    runs = len(durations)
    if runs == 0:
        raise ValueError("no samples")
    mean = sum(durations) / runs
    std = math.sqrt(sum((x - mean) ** 2 for x in durations) / (runs - 1)) if runs > 1 else 0.0
    return Stats(runs, mean, std, std / math.sqrt(runs), float(min(durations)), float(max(durations)),
                 float(statistics.median(durations)))


def geomean(values: list[float]) -> float:
    """The geometric mean of the times given (missing ones, None or NaN, left out); NaN where a time is zero or
    below, which no run can take and which would otherwise drop out of the mean (an underflow that hid a shape)."""
    known = [v for v in values if v is not None and not math.isnan(v)]
    if not known or any(v <= 0 for v in known):
        return float("nan")
    return math.exp(sum(math.log(v) for v in known) / len(known))
