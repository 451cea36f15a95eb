"""Sample statistics and the contest's stopping rule for timing loops (all times in ns)."""
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


@dataclass(frozen=True)
class StopRule:
    """Stop once there are min_runs samples and min_wall_ns spent, and either the relative error
    of the mean is below rel_err, the summed sample means pass max_time_ns, or max_wall_ns passed;
    never take more than max_runs samples."""

    max_runs: int = 100
    min_runs: int = 3
    min_wall_ns: float = 100e6
    rel_err: float = 0.001
    max_time_ns: float = 10e9
    max_wall_ns: float = 120e9

    def done(self, durations: list[float], wall_ns: float) -> bool:
        if len(durations) >= self.max_runs:
            return True
        if len(durations) < self.min_runs or wall_ns < self.min_wall_ns:
            return False
        s = calculate(durations)
        return (s.err / s.mean < self.rel_err if s.mean > 0 else True) or s.mean * s.runs > self.max_time_ns \
            or wall_ns > self.max_wall_ns


def geomean(values: list[float]) -> float:
    values = [v for v in values if v and v > 0]
    if not values:
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))
