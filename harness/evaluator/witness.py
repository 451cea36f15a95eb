"""The evaluator's own clock around each sample, against the time the worker reports.

No correct output can exist before the evaluator starts writing a sample's inputs (they did not exist
before), and every output is copied into the evaluator's memory before its clock stops, so all real work of
the sample lies inside the witness W. What W holds beside the reported calls is the protocol's own overhead:
the evaluator's writes and L2 flush, the release, the messages and the copies of the outputs (the worker's,
where a kernel returned a tensor other than c, and the evaluator's). That overhead is calibrated in the worker
before any submission code is imported ("null samples": the same protocol with no call, for a small and a large
slot and for many outputs), as a + b x bytes written + c x output tensors (c counted twice: both copies). A sample whose W exceeds the reported calls plus that
overhead by more than the margin is flagged; three flagged samples in a row, or a median excess over the
margin, are a verdict. The margin is what a forged time or hidden work must exceed to be caught.

W leaves out the time the evaluator's thread and the worker's main thread spent waiting for a CPU while
runnable (Linux schedstat's run delay): load from other processes on a busy machine is not hidden work. That
leaves one way around the witness, which makes it a speed bump rather than a wall where CPUs are scarce: a
submission that keeps the machine's CPUs busy with threads of its own, so that its main thread waits, hides
that wait. The walls are elsewhere: inputs drawn fresh for every sample and every output checked.
"""
import statistics
from dataclasses import dataclass, field

MIN_MARGIN_NS = 100_000.0  # host scheduling noise of the two processes' clocks and messages
SPREAD_MULTIPLE = 4.0  # times the calibration's largest deviation from its fit
OVERHEAD_FRACTION = 0.25  # of the expected overhead: the evaluator's writes vary with the GPU's time-slicing
IN_A_ROW = 3


def run_delay_ns(pid: int | None = None) -> int:
    """How long a thread has waited on a run queue, in ns: this thread's, or process pid's main thread's.
    0 where the kernel does not keep schedstat."""
    path = "/proc/thread-self/schedstat" if pid is None else f"/proc/{pid}/schedstat"
    try:
        with open(path) as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


@dataclass
class Calibration:
    """Null-sample overheads: [(bytes written, output tensors, W - region in ns), ...] for three configurations:
    (small, 1 output), (large, 1 output), (small, many outputs)."""

    points: list

    def fit(self) -> tuple[float, float, float, float]:
        """(a, b, c, spread): overhead = a + b * bytes + c * outputs; spread = the largest deviation of a null
        sample from its configuration's median."""
        runs = {}
        for nbytes, outputs, ns in self.points:
            runs.setdefault((nbytes, outputs), []).append(ns)
        (s, one), (big, _), (_, many) = sorted(runs, key=lambda k: (k[1], k[0]))[0], \
            max(runs, key=lambda k: k[0]), max(runs, key=lambda k: k[1])
        m1, m2, m3 = (statistics.median(runs[k]) for k in ((s, one), (big, one), (s, many)))
        b = max(0.0, (m2 - m1) / (big - s)) if big > s else 0.0
        c = 2 * max(0.0, (m3 - m1) / (many - one)) if many > one else 0.0
        a = m1 - b * s - c / 2 * one
        spread = max(abs(ns - statistics.median(runs[(n, o)])) for n, o, ns in self.points)
        return a, b, c, spread


@dataclass
class Witness:
    calibration: Calibration
    flagged_in_a_row: int = 0
    excess_ns: list = field(default_factory=list)

    outputs: int = 1  # output tensors per sample

    def __post_init__(self):
        self.a, self.b, self.c, self.spread = self.calibration.fit()

    def expected_ns(self, nbytes: float) -> float:
        return self.a + self.b * nbytes + self.c * self.outputs

    def margin_ns(self, nbytes: float) -> float:
        return max(MIN_MARGIN_NS, SPREAD_MULTIPLE * self.spread) + OVERHEAD_FRACTION * self.expected_ns(nbytes)

    def judge(self, witness_ns: float, waited_ns: float, region_total_ns: float, nbytes: float) -> str:
        """'' or why the sample's report cannot be true; a verdict after IN_A_ROW flagged samples. waited_ns:
        the part of witness_ns the two threads spent waiting for a CPU (left out of the excess only: a wait
        inside the calls is in the reported time too)."""
        excess = witness_ns - waited_ns - region_total_ns - self.expected_ns(nbytes)
        self.excess_ns.append(excess)
        if region_total_ns > witness_ns:
            return (f"the worker reported {region_total_ns / 1e3:.1f} µs of calls inside a sample the evaluator's "
                    f"clock saw last {witness_ns / 1e3:.1f} µs")
        if excess <= self.margin_ns(nbytes):
            self.flagged_in_a_row = 0
            return ""
        self.flagged_in_a_row += 1
        if self.flagged_in_a_row < IN_A_ROW:
            return ""
        return self.message(excess, nbytes, f"{IN_A_ROW} samples in a row")

    def judge_all(self, nbytes: float) -> str:
        if len(self.excess_ns) >= IN_A_ROW and statistics.median(self.excess_ns) > self.margin_ns(nbytes):
            return self.message(statistics.median(self.excess_ns), nbytes, "median over the samples")
        return ""

    def message(self, excess: float, nbytes: float, how: str) -> str:
        return (f"the evaluator's clock saw {excess / 1e3:.0f} µs per sample that the worker's reported calls do "
                f"not account for ({how}; allowed {self.margin_ns(nbytes) / 1e3:.0f} µs): work outside the timed "
                f"region, or a forged time")

    def summary(self, nbytes: float) -> dict:
        return {"witness_excess_median_ns": statistics.median(self.excess_ns) if self.excess_ns else None,
                "witness_margin_ns": self.margin_ns(nbytes), "witness_expected_ns": self.expected_ns(nbytes),
                "witness_fit": {"a_ns": self.a, "b_ns_per_byte": self.b, "c_ns_per_output": self.c,
                                "spread_ns": self.spread}}
