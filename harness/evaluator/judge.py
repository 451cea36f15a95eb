"""A benchmark's timed loop after each sample: the sample judged, its time kept or not, and whether the job is done.

The loop is draw -> sample -> check -> judge -> tally -> finished? (harness.evaluator.evaluation runs the first
three, which need the worker and the references); what this module holds needs neither, so a test drives each step
with numbers alone. Two judges, one per kind of clock:

- `ClockJudge`, on a GPU under arena timing: the evaluator's own clock (harness.evaluator.clock) is the number; the
  worker's events are kept beside it as a cross-check. A worker that reports more time than the clock's window held,
  or whose outputs changed after it said "done", is `tampered`. A hand-over between the contexts is now and then 15
  to 90 µs slower than its calibrated cost (4 of about 700 probe samples on an H200): a sample whose clock reads more
  than SLOW_HANDOVER_NS over the worker's events is not kept as its own, nor one whose writes another context
  interrupted, while such samples are no more than MAX_DISCARDED_SHARE of those judged; past that, every sample
  counts as its own clock's time. A file that under-reports some samples to have them discarded can so replace its
  slowest quarter by its slowest kept one, as with the witness (scripts/witness_trim_sim.py), and gains nothing on
  the rest. The job's quickest writes are the worker's to set (a turn of its context inside every sample's writes
  lengthens them all alike), so each sample's writes are also set against the calibration's `WritesModel`: writes
  more than INTERRUPTED_NS over it held another context's turn, two hand-overs at least (no share of the
  expectation widens that: behind the clock's gate a turn can only come in writes longer than a time slice, where a
  share would let it hide). Such a sample is discarded as the others are while the budget lasts; past it, it counts
  as its clock's time plus the whole overrun, the time in which the worker may have computed outputs before "go"
  (tests/redteam/write_gaps.py). A worker that turns every sample so gains nothing: its kept samples carry their
  overrun, and its discarded ones count as at least the slowest of those.
- `WitnessJudge`, on a CPU and under contest timing: the worker's reported time is the number, bounded by the
  evaluator's host clock around it (harness.evaluator.witness).

Each judge says per sample what to keep; `Tally` keeps it: a sample not kept as its own (discarded) counts as the
slower of its own time and the slowest sample kept so far, or not at all before one is kept, so that a forged or
disturbed time in it gains nothing.
"""
import statistics
from dataclasses import dataclass, field

from ..stats import calculate
from .clock import PREEMPTED_NS, ClockCalibration, ClockReading
from .witness import DISCARDED, WARM_UP, Witness

CLOCK_TOLERANCE_NS = 2_000.0  # how much longer the worker's events may read than the clock's window (resolution)
SLOW_HANDOVER_NS = 10_000.0  # the clock's time over the worker's events beyond which a hand-over was slow (at least)
SLOW_HANDOVER_SPREADS = 8.0  # or this many calibration spreads, where that is more
MAX_DISCARDED_SHARE = 0.25  # of the judged samples, at most this share may be not kept as their own
INTERRUPTED_NS = 250_000.0  # writes this much over the calibrated expectation held another context's turn: one turn
# costs two hand-overs (about 290 µs on an H200, results/h200/clock_2026-11-28/NOTES.md) before any work in it


@dataclass
class Judgement:
    """What one sample came to: a verdict that ends the job, or the times to keep (per call, ns)."""

    verdict: str = ""
    per_call_ns: float | None = None  # None: not kept (a job's first sample warms its slots up)
    worker_per_call_ns: float | None = None
    discarded: bool = False  # kept only as at least the slowest kept sample


class ClockJudge:
    """The evaluator's clock as the number (GPU, arena timing)."""

    def __init__(self, calibration: ClockCalibration, calls: int):
        self.calibration = calibration
        self.calls = calls
        self.seen = 0
        self.quickest_writes_ns = float("inf")
        self.preempted = 0
        self.slow_handovers = 0
        self.discarded = 0
        self.interrupted = 0
        self.charged_ns = 0.0  # overruns of interrupted samples added to their time
        self.windows_ns = []
        self.slow_ns = max(SLOW_HANDOVER_NS, SLOW_HANDOVER_SPREADS * calibration.spread_ns)

    def judge(self, reading: ClockReading, region_ns: float, early_call: int | None) -> Judgement:
        if early_call is not None:
            return Judgement(f"the worker's stream said \"done\" before its outputs were written (call {early_call}'s "
                             f"output changed after the evaluator's clock closed)")
        if region_ns > reading.window_ns + CLOCK_TOLERANCE_NS:
            return Judgement(f"the worker reported {region_ns / 1e3:.1f} µs of calls inside a window the evaluator's "
                             f"clock saw last {reading.window_ns / 1e3:.1f} µs")
        self.seen += 1
        self.quickest_writes_ns = min(self.quickest_writes_ns, reading.writes_ns)
        if self.seen == 1:
            return Judgement()
        calls_ns = reading.calls_ns(self.calibration)
        preempted = reading.writes_ns > self.quickest_writes_ns + PREEMPTED_NS
        overrun = self.overrun_ns(reading)
        interrupted = overrun > 0
        slow = calls_ns - region_ns > self.slow_ns
        self.preempted += preempted
        self.interrupted += interrupted
        self.slow_handovers += slow
        self.windows_ns.append(reading.window_ns)
        discarded = (preempted or slow or interrupted) and len(self.windows_ns) > 1 and \
            self.discarded + 1 <= max(1.0, MAX_DISCARDED_SHARE * len(self.windows_ns))  # not the first judged:
        # with nothing kept before it, a discarded sample would count for nothing (Tally.add)
        self.discarded += discarded
        if interrupted and not discarded:  # past the budget: the turn inside the writes counts as the worker's
            calls_ns += overrun
            self.charged_ns += overrun
        return Judgement(per_call_ns=calls_ns / self.calls, worker_per_call_ns=region_ns / self.calls,
                         discarded=discarded)

    def overrun_ns(self, reading: ClockReading) -> float:
        """How far the sample's writes ran over the calibration's expectation, where that far shows another context's
        turn inside them; else 0 (also where the calibration has no model of the writes)."""
        model = self.calibration.writes
        if model is None:
            return 0.0
        expected = model.expected_ns(reading.bytes, reading.copies)
        overrun = reading.writes_ns - expected
        return overrun if overrun > INTERRUPTED_NS else 0.0

    def settled(self) -> bool:
        return True

    def judge_all(self) -> str:
        return ""

    def summary(self) -> dict:
        """The clock's calibration, one sample's uncertainty (the calibration's spread) per call and as a share of
        the median sample, how many samples another context's turn disturbed (over the job's quickest writes, or
        over the calibrated ones: `interrupted`) or a slow hand-over lengthened, how many of them were not kept as
        their own, and how much overrun of interrupted writes was added to kept samples."""
        sample_ns = statistics.median(self.windows_ns) - self.calibration.fixed_ns if self.windows_ns else None
        return {**self.calibration.as_dict(), "uncertainty_ns": self.calibration.spread_ns / self.calls,
                "uncertainty_share": self.calibration.spread_ns / sample_ns if sample_ns and sample_ns > 0 else None,
                "preempted": self.preempted, "interrupted": self.interrupted, "charged_ns": self.charged_ns,
                "slow_handovers": self.slow_handovers, "discarded": self.discarded}


class WitnessJudge:
    """The worker's reported time as the number, bounded by the evaluator's host clock (CPU, contest timing)."""

    def __init__(self, witness: Witness, calls: int):
        self.witness = witness
        self.calls = calls

    def judge(self, witness_ns: float, waited_ns: float, region_ns: float, own_ns: float,
              copy_ns: float) -> Judgement:
        contradiction = self.witness.judge(witness_ns, waited_ns, region_ns, own_ns, copy_ns)
        if contradiction:
            return Judgement(contradiction)
        if self.witness.last == WARM_UP:
            return Judgement()
        return Judgement(per_call_ns=region_ns / self.calls, worker_per_call_ns=region_ns / self.calls,
                         discarded=self.witness.last == DISCARDED)

    def settled(self) -> bool:
        return self.witness.settled()

    def judge_all(self) -> str:
        return self.witness.judge_all()

    def summary(self) -> dict:
        return self.witness.summary()


@dataclass
class Tally:
    """The kept samples of one job, per call (ns), and what the record reports beside them."""

    durations: list = field(default_factory=list)  # the number's samples
    worker_ns: list = field(default_factory=list)  # the worker's own events for the same samples
    host_ns: list = field(default_factory=list)
    pending_ns: list = field(default_factory=list)
    queued_late: int = 0  # samples whose calls were not all queued when the evaluator said go
    discarded_ns: float = 0.0  # wall time of discarded samples, left out of the stopping rule's clock

    def add(self, judgement: Judgement, host_ns: float, pending_ns: float, queued_late: bool,
            iteration_ns: float) -> bool:
        """Keep a judged sample; whether anything was kept."""
        per_call = judgement.per_call_ns
        if judgement.discarded:
            self.discarded_ns += iteration_ns
            per_call = max([per_call, *self.durations]) if self.durations else None
        if per_call is None:
            return False
        self.durations.append(per_call)
        self.worker_ns.append(judgement.worker_per_call_ns)
        self.host_ns.append(host_ns)
        self.pending_ns.append(pending_ns)
        self.queued_late += queued_late
        return True

    def finished(self, rule, loop_ns: float, judge) -> bool:
        """The contest's stopping rule on the kept samples, its clock less the discarded samples' time, and the
        judge's own say (a witness that needs more samples to decide)."""
        return rule.done(self.durations, loop_ns - self.discarded_ns) and judge.settled()

    def worker_stats(self) -> dict | None:
        return calculate(self.worker_ns).as_dict() if self.worker_ns else None
