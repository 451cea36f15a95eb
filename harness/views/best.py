"""Which try `submit --best` submits. Stored runs only nominate candidates (lineage versions and a participant's own
tries); the candidates are then measured again, interleaved (each in a worker of its own), and the fastest wins only
where its paired interval says so. Candidates whose interval against the fastest contains 1 are tied with it, and of
a tie the oldest is picked (a lineage version, the simplest with the fewest ideas stacked, before a participant's
try; tries by their first stored run). A candidate that failed a round is left out, and
the decision says why; so is a winner that then fails leaderboard mode, and the next candidate is submitted."""
from dataclasses import dataclass, field

import numpy as np

from .compare import Interval, geomean_ratio_ci
from ..submission import version_key
from ..stats import geomean


@dataclass(frozen=True)
class Standing:
    """One candidate in the fresh measurement: its geomean over shapes of the mean over rounds, and
    its time over the fastest's (>1: the fastest is faster) with the interval."""

    version: str
    geomean_ns: float
    vs_fastest: Interval
    tied: bool

    @property
    def verdict(self) -> str:
        if self.tied:
            return "fastest" if self.vs_fastest.point == 1.0 else "tied with the fastest"
        return f"slower: {self.vs_fastest.point:.3f}x the fastest's time"


@dataclass(frozen=True)
class Decision:
    winner: str
    fastest: str
    rounds: int
    standings: list[Standing]
    excluded: dict[str, str] = field(default_factory=dict)  # candidate left out -> its verdict
    pooled: dict = field(default_factory=dict, repr=False)  # the measurement decided on (decide's argument)
    oldest_first: list[str] | None = field(default=None, repr=False)  # decide's argument

    @property
    def tied(self) -> list[str]:
        return [s.version for s in self.standings if s.tied]

    def as_json(self) -> dict:
        """submit --best's decision for --json (docs/json.md); slowdown_vs_fastest is the candidate's time over the
        fastest's, with its paired interval."""
        return {"winner": self.winner, "fastest": self.fastest, "rounds": self.rounds, "tied": self.tied,
                "standings": [{"version": s.version, "geomean_ns": s.geomean_ns,
                               "slowdown_vs_fastest": s.vs_fastest.point, "slowdown_low": s.vs_fastest.low,
                               "slowdown_high": s.vs_fastest.high, "tied": s.tied, "verdict": s.verdict}
                              for s in self.standings],
                "excluded": [{"version": v, "verdict": why} for v, why in self.excluded.items()]}

    def without(self, version: str, why: str) -> "Decision | None":
        """The decision made again on the same measurement once `version` (submitted, then failing leaderboard mode)
        is left out too; None when no candidate is left."""
        if version not in self.pooled:
            raise ValueError(f"{version} is not a candidate of this decision")
        left = {v: times for v, times in self.pooled.items() if v != version}
        return decide(left, {**self.excluded, version: why}, self.oldest_first) if left else None

    def explain(self) -> str:
        left_out = "".join(f"\n{v} left out: it {why}" for v, why in self.excluded.items())
        if len(self.standings) == 1:
            return f"{self.winner} is the only candidate that passed every round{left_out}"
        if len(self.tied) == 1:
            return (f"{self.winner} is faster than every other candidate (paired 95% intervals, {self.rounds} rounds)"
                    f"{left_out}")
        return (f"{', '.join(self.tied)} are tied (each interval against {self.fastest} contains 1, "
                f"{self.rounds} rounds): picking the oldest, {self.winner}{left_out}")


def decide(pooled: dict[str, dict[int, list[float]]], excluded: dict[str, str] | None = None,
           oldest_first: list[str] | None = None) -> Decision:
    """pooled: {version: {shape index: [mean ns per round]}} from one interleaved measurement; excluded: the
    candidates left out of it, with their verdicts; oldest_first: the candidates by age (default: lineage order,
    version_key)."""
    indices = sorted(next(iter(pooled.values())))
    per_version = {v: [pooled[v][i] for i in indices] for v in pooled}
    order = {v: (i, version_key(v)) for i, v in enumerate(oldest_first)} if oldest_first else {}

    def age(v):
        return order.get(v, (len(order), version_key(v)))

    def log_time(v):  # mean over rounds and shapes of log time: the order the paired ratios agree with
        return float(np.mean([np.log(times) for times in per_version[v]]))
    fastest = min(per_version, key=lambda v: (log_time(v), age(v)))
    standings = []
    for v, times in per_version.items():
        interval = geomean_ratio_ci(times, per_version[fastest])
        standings.append(Standing(v, geomean([float(np.mean(t)) for t in times]), interval,
                                  v == fastest or interval.low <= 1.0))
    standings.sort(key=lambda s: (s.vs_fastest.point, age(s.version)))
    winner = min((s.version for s in standings if s.tied), key=age)
    rounds = len(per_version[fastest][0])
    return Decision(winner, fastest, rounds, standings, dict(excluded or {}), pooled, oldest_first)
