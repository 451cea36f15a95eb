"""The evaluator's own clock around each sample, against the time the worker reports.

No correct output can exist before the evaluator starts writing a sample's inputs (they did not exist
before), and every output is copied into the evaluator's memory before its clock stops, so all real work of
the sample lies inside the witness W. Beside the reported calls, W holds the evaluator's own work, which it
times itself (writing the inputs, with the L2 flush on a GPU; copying the outputs back), and the protocol's
remainder: the release or "go", the messages, and the worker's copies of returned outputs into c (about what
the evaluator's copies of them cost). That remainder is calibrated in the worker before any submission code is
imported ("null samples": the same protocol with no call, for one small slot, one large slot and many small
slots): its median and its largest deviation (the spread).

A sample's excess is W less the reported calls, the evaluator's timed work, the worker's copies and the
calibrated remainder. Its margin: SPREAD_MULTIPLE spreads (at least MIN_MARGIN_NS, per device kind), plus
OVERHEAD_FRACTION of the timed work and copies, whose own noise grows with them. Over the margin a sample is
flagged, and a flagged sample's time is discarded: the job counts it as the slower of its own time and the
slowest sample it kept so far, or not at all before it kept one, so a forged time in it gains nothing. The first
sample of a job is neither judged (fresh slots fault their pages in) nor kept: it warms the slots up.
Honest runs see stalls that no wait explains, in bursts: an H200 once saw 6 ms in one sample, an H100 2-5 ms in
three samples in a row (results/h100/evaluator_2026-11-26d/NOTES.md). So a verdict takes what a stall does not
do: IN_A_ROW flagged samples in a row, or, once at least MIN_JUDGED samples are judged, more than
MAX_FLAGGED_SHARE of them flagged or a median excess over the median margin. A job whose samples so far would
meet one of those two takes more samples first (`settled`), up to MIN_JUDGED: a short job's one burst is not a
share of it. A forger can still shade every kept sample by up to one margin, and, by forging the samples it
finds slow, choose which get flagged: its slowest samples, up to a quarter of them, then count as the slowest one
kept (scripts/witness_trim_sim.py: at most 0.09% of the mean for 1% noise, 0.56% where 5% of the samples are
10% slow).

W leaves out the time the evaluator's thread spent waiting for a CPU while runnable (Linux schedstat's run
delay) between its writes and its copies (its waits inside them are in its timed work already), and the worker
main thread's waits less what the worker's other threads ran meanwhile (WorkerCpu.credit_ns): load from other
processes on a busy machine is not hidden work, but a wait the worker causes itself may be (a main thread put
to SCHED_IDLE behind threads of its own waits as long as they work). Threads that start and end inside one
sample are seen only through the process's CPU ticks, to within two ticks (20 ms at 100 Hz). A wait inside the
worker's calls is in its reported time, so on a crowded machine a worker can report its calls less their waits
and pass; and on a GPU, work a submission starts on another stream while the evaluator writes and flushes
lengthens the evaluator's timed work instead of the excess. The witness is a speed bump, not a wall.
"""
import os
import statistics
from dataclasses import dataclass, field

from .supervisor import cpu_ticks, stat_fields

MIN_MARGIN_NS = {"cuda": 100_000.0, "cpu": 1_000_000.0}  # host noise of two processes' clocks and messages; on a
# CPU the calls share the cores with everything else, and a verdict against an honest file costs more than a
# forgery under a millisecond there (CPU times rank nothing)
SPREAD_MULTIPLE = 4.0  # times the calibration's largest deviation from its median
OVERHEAD_FRACTION = 0.25  # of the evaluator's timed work and the worker's copies in a sample
IN_A_ROW = 10  # flagged samples in a row that are a verdict: honest stalls came in bursts of up to three
MIN_JUDGED = 20  # judged samples before the share and median rules decide
KEPT, WARM_UP, DISCARDED = "kept", "warm-up", "discarded"  # what a job does with a judged sample's time
MAX_FLAGGED_SHARE = 0.25  # of the judged samples, flagged ones beyond this share are a verdict


def run_delay_ns() -> int:
    """How long this thread has waited on a run queue, in ns; 0 where the kernel does not keep schedstat."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")  # the unit of a process's CPU time in /proc/<pid>/stat


@dataclass(frozen=True)
class WorkerCpu:
    """A worker's CPU accounting at one moment (Linux /proc, cgroup v2): its main thread's wait for a CPU and its
    time on one, in ns; every other live thread's time on a CPU, by thread id; the CPU time of every process the
    worker has run, those that have ended included, reaped or not: its cgroup's usage in ns where it has a cgroup
    (`usage_ns`), else clock ticks summed over its processes, zombies and the children each reaped included
    (`ticks`); and whether its main thread runs at the default scheduling (SCHED_OTHER at nice 0 or better), as an
    honest one does."""

    main_wait_ns: int = 0
    main_run_ns: int = 0
    others_ns: dict = field(default_factory=dict)
    ticks: int = 0
    usage_ns: int | None = None
    default_priority: bool = True

    @classmethod
    def read(cls, pid: int, worker=None) -> "WorkerCpu":
        """The accounting of process `pid`, the worker's main process. worker: the harness.evaluator.supervisor
        WorkerProcess whose every process to count (without it, `pid` alone and the children it reaped). The whole
        worker's CPU time is read before its threads', so that work still running between the reads counts for its
        threads, never for the rest."""
        usage = worker.cpu_usage_ns() if worker else None
        ticks = 0 if usage is not None else worker.cpu_ticks() if worker else cpu_ticks(pid)

        def schedstat(tid) -> tuple[int, int]:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    run, wait = f.read().split()[:2]
                return int(run), int(wait)
            except (OSError, ValueError):
                return 0, 0
        main = stat_fields(pid, pid)
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            default = int(main[38]) == 0 and int(main[16]) <= 0  # policy SCHED_OTHER, nice
        except (OSError, ValueError, IndexError, TypeError):  # the worker gone (its stat files None)
            return cls()
        main_run, main_wait = schedstat(pid)
        return cls(main_wait, main_run, {tid: schedstat(tid)[0] for tid in tids if tid != pid}, ticks, usage, default)

    def credit_ns(self, before: "WorkerCpu") -> float:
        """How much of the main thread's wait for a CPU since `before` to leave out of the witness: the part the
        rest of the worker does not explain. The rest ran this long on a CPU meanwhile: the live threads exactly,
        everything else (ended threads, children and their children, zombies) from the cgroup's usage, or from the
        processes' ticks less two ticks of rounding. None where the main thread did not run at the default
        scheduling at both ends (SCHED_IDLE or a positive nice makes it wait), or where the two readings are not
        of the same kind (the cgroup's usage could not be read at one of them)."""
        if not (self.default_priority and before.default_priority) or \
                (self.usage_ns is None) != (before.usage_ns is None):
            return 0.0
        others = sum(ns - before.others_ns.get(tid, 0) for tid, ns in self.others_ns.items())
        main_run = self.main_run_ns - before.main_run_ns
        if self.usage_ns is not None:
            ended = self.usage_ns - before.usage_ns - main_run - others
        else:
            ended = (self.ticks - before.ticks - 2) * TICK_NS - main_run - others
        return max(0.0, self.main_wait_ns - before.main_wait_ns - others - max(0.0, ended))


@dataclass
class Calibration:
    """Null-sample remainders in ns (W less the evaluator's timed work and the waits), for the three slot
    configurations together."""

    remainders_ns: list

    def fit(self) -> tuple[float, float]:
        """(the median remainder, the largest deviation of a null sample from it)."""
        median = statistics.median(self.remainders_ns)
        return median, max(abs(ns - median) for ns in self.remainders_ns)


@dataclass
class Witness:
    calibration: Calibration
    device: str = "cuda"  # or "cpu": which MIN_MARGIN_NS applies
    flagged_in_a_row: int = 0
    flagged: int = 0  # samples over the margin: each one's time the job discards
    seen: int = 0
    last: str = KEPT  # what to do with the last judged sample's time: KEPT, WARM_UP or DISCARDED
    excess_ns: list = field(default_factory=list)
    margins_ns: list = field(default_factory=list)

    def __post_init__(self):
        self.remainder_ns, self.spread_ns = self.calibration.fit()
        self.floor_ns = max(MIN_MARGIN_NS[self.device], SPREAD_MULTIPLE * self.spread_ns)

    def margin_ns(self, own_ns: float = 0.0, copies_ns: float = 0.0) -> float:
        return self.floor_ns + OVERHEAD_FRACTION * (own_ns + copies_ns)

    def judge(self, witness_ns: float, waited_ns: float, region_total_ns: float, own_ns: float,
              copies_ns: float) -> str:
        """'' or why the sample's report cannot be true. waited_ns: the part of witness_ns the evaluator's thread
        spent waiting for a CPU outside its own timed work; own_ns: the evaluator's timed work; copies_ns: what the
        worker's copies of returned outputs may take."""
        if region_total_ns > witness_ns:
            return (f"the worker reported {region_total_ns / 1e3:.1f} µs of calls inside a sample the evaluator's "
                    f"clock saw last {witness_ns / 1e3:.1f} µs")
        self.seen += 1
        self.last = KEPT
        if self.seen == 1:
            self.last = WARM_UP
            return ""
        excess = witness_ns - waited_ns - region_total_ns - own_ns - copies_ns - self.remainder_ns
        margin = self.margin_ns(own_ns, copies_ns)
        self.excess_ns.append(excess)
        self.margins_ns.append(margin)
        if excess <= margin:
            self.flagged_in_a_row = 0
            return ""
        self.flagged += 1
        self.flagged_in_a_row += 1
        self.last = DISCARDED
        if self.flagged_in_a_row < IN_A_ROW:
            return ""
        return self.message(excess, margin, f"{IN_A_ROW} samples in a row")

    def judge_all(self) -> str:
        """'' or the share or median rule's verdict over the samples judged so far."""
        if not self.excess_ns:
            return ""
        margin = statistics.median(self.margins_ns)
        if statistics.median(self.excess_ns) > margin:
            return self.message(statistics.median(self.excess_ns), margin, "median over the samples")
        if self.flagged > MAX_FLAGGED_SHARE * len(self.excess_ns):
            flagged = sorted(self.excess_ns)[-self.flagged:]
            return self.message(statistics.median(flagged), margin,
                                f"{self.flagged} of {len(self.excess_ns)} samples flagged")
        return ""

    def settled(self) -> bool:
        """Whether the job may stop here: judge_all() passes, or MIN_JUDGED samples are judged, so that it decides."""
        return len(self.excess_ns) >= MIN_JUDGED or not self.judge_all()

    def message(self, excess: float, margin: float, how: str) -> str:
        return (f"the evaluator's clock saw {excess / 1e3:.0f} µs per sample that the worker's reported calls do "
                f"not account for ({how}; allowed {margin / 1e3:.0f} µs): work outside the timed region, or a "
                f"forged time")

    def summary(self) -> dict:
        """The median and largest excess (how close honest samples come to the margin: the data to set it by),
        the median margin, the calibrated remainder and its spread, and how many samples were discarded."""
        return {"witness_excess_median_ns": statistics.median(self.excess_ns) if self.excess_ns else None,
                "witness_excess_max_ns": max(self.excess_ns) if self.excess_ns else None,
                "witness_margin_ns": statistics.median(self.margins_ns) if self.margins_ns else self.floor_ns,
                "witness_remainder_ns": self.remainder_ns, "witness_spread_ns": self.spread_ns,
                "witness_discarded": self.flagged}
