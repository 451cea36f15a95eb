"""The evaluator's clock on a GPU: the time that ranks, taken in the evaluator's own CUDA context.

Per timed sample the worker's stream queues a wait for "go", its calls between its own events, the copies of any
returned output into its slot's c, and a write of "done" (harness.stream_words); the evaluator's stream then waits
for a gate of its own, records `started`, writes the sample's inputs and flushes the L2, records `opened`, writes
"go", waits for "done" and records `closed`; its host queues all of that and only then lets the gate go (from a
second stream of its own). The window opened -> closed holds every call, with nothing of the evaluator's inside it,
and comes from events of the evaluator's own context, which the worker cannot reach. Three facts about two CUDA
contexts on one GPU make it hold (measured on an H200, scripts/clock_probe.py, results/h200/clock_2026-11-28/NOTES.md):

- Contexts take the GPU in turns. While the evaluator's context has work (its writes, its flush), the worker's
  kernels do not run: a kernel of the worker's spinning across the evaluator's writes was off the GPU from the
  evaluator's first write until after "go". The worker's context gets the GPU when the evaluator's stream blocks on
  "done", and the evaluator's gets it back only when the worker's context has nothing left to run or its time
  slice (about 2.1 ms) ends. So work the worker left on any stream after writing "done" is inside the window
  (a second stream's 500 µs tail moved `closed` by 500 µs), unless it outlasts a time slice.
- What outlasts a time slice is caught by the spot check: right after `closed`, in the same turn of the
  evaluator's context, it copies random elements of the outputs of random calls (the last one always) into its own
  memory; every one must equal what the outputs hold once the sample is over, else "done" came before the work.
  Before "go" nothing of the worker's ran on the GPU, so no output could exist then.
- Each hand-over between the contexts costs about 150 µs, far more than a call; the calibration measures it. Before
  any code of the file is imported, null samples run the same protocol with a read of twice the L2 between the
  worker's events (a call's footprint: the hand-over back to the evaluator takes about 5 µs longer after the worker
  touched memory than after it touched none); the fixed cost is the median of their windows less the worker's
  events, and its spread the scaled median absolute deviation. A sample's time is its window less that fixed cost.

The gate is what makes the first fact hold for a worker that keeps work ready to run (a stream that does not wait
for "go"). Without it the host queued each copy while the earlier ones ran, the stream ran dry between them, and
such a worker could take a turn in every gap and compute there the outputs of the slots already written
(tests/redteam/write_gaps.py; on an H200 the host took about 9 µs to queue a copy that the GPU ran in 2). Behind the gate the writes run back to back, so the
only turn left inside them is at the end of a time slice, and that costs two hand-overs. Samples whose writes took
more than PREEMPTED_NS longer than the job's quickest had such a turn; and since a worker that turns inside every
sample sets the job's quickest itself, the null samples also fit how long the writes take with no turn inside them
(`WritesModel`: a fixed part, a part per copy and one per byte), and the judge sets each sample's writes against it
as well (harness.evaluator.judge). The gate's word lives in memory of the evaluator's that no worker maps.
"""
import random
import statistics
import time
from dataclasses import asdict, dataclass

import torch

from ..stream_words import COUNT, DONE, GO, StreamWords
from .slots import ipc_handle, segment_bytes

PREEMPTED_NS = 1_000_000  # writes and flush this much slower than the job's quickest: another context took a turn
SPOT_CALLS = 8  # calls of a sample spot-checked after "done" (the last one always)
SPOT_ELEMENTS = 64  # elements of each of their output buffers
POLL_S = 50e-6  # the host's poll of the closing event while it waits


def medians_by_configuration(samples) -> dict:
    """{(bytes, copies): median value} of null samples given as ((bytes, copies), value) pairs."""
    groups = {}
    for (nbytes, copies), value in samples:
        groups.setdefault((int(nbytes), int(copies)), []).append(float(value))
    return {key: statistics.median(values) for key, values in sorted(groups.items())}


@dataclass(frozen=True)
class WritesModel:
    """How long a sample's writes and flush take on this GPU with no other context's turn inside them (ns): a fixed
    part (the flush, the events), a part per copy and a part per byte. Behind the clock's gate the copies run one
    after another on the evaluator's stream, so the parts add up. Fitted on the median of each null-sample
    configuration, before any code of the file is imported: a small slot and a large one (one copy each) give the
    part per byte, many small slots the part per copy, and the rest is the fixed part."""

    base_ns: float
    per_copy_ns: float
    per_byte_ns: float

    @classmethod
    def fit(cls, points: list) -> "WritesModel | None":
        """points: (bytes, copies, writes_ns) of null samples. None where they do not determine the three parts (fewer
        than three configurations, the two one-copy ones of one size, no configuration of more copies, or a part
        that comes out negative)."""
        medians = medians_by_configuration(((nbytes, copies), writes_ns) for nbytes, copies, writes_ns in points)
        singles = sorted(key for key in medians if key[1] == 1)
        many = max(medians, key=lambda key: key[1], default=None)
        if len(singles) < 2 or many is None or many[1] < 2 or singles[0][0] == singles[-1][0]:
            return None
        small, large = singles[0], singles[-1]
        per_byte = (medians[large] - medians[small]) / (large[0] - small[0])
        per_copy = (medians[many] - medians[small] - per_byte * (many[0] - small[0])) / (many[1] - 1)
        base = medians[small] - per_copy - per_byte * small[0]
        if min(base, per_copy, per_byte) < 0:
            return None
        return cls(base, per_copy, per_byte)

    def expected_ns(self, nbytes: int, copies: int) -> float:
        return self.base_ns + self.per_copy_ns * copies + self.per_byte_ns * nbytes


@dataclass(frozen=True)
class ClockCalibration:
    """The fixed cost of a sample under the evaluator's clock on this GPU, from null samples (ns)."""

    fixed_ns: float  # median of (window less the worker's events)
    spread_ns: float  # 1.4826 x the median absolute deviation from it: one sample's uncertainty
    samples: int
    writes: WritesModel | None = None  # how long the writes take with no other context inside them
    fixed_by_configuration: tuple = ()  # (bytes, copies, median window less the worker's events) per null-sample
    # configuration: the slots' size should not move the fixed cost (the writes end before `opened`); a record shows it

    @classmethod
    def fit(cls, windows_less_worker_ns: list, writes: list = ()) -> "ClockCalibration":
        """writes: (bytes, copies, writes_ns) of the same null samples, in the same order (WritesModel.fit)."""
        fixed = statistics.median(windows_less_worker_ns)
        spread = 1.4826 * statistics.median(abs(v - fixed) for v in windows_less_worker_ns)
        medians = medians_by_configuration(((nbytes, copies), value)
                                           for value, (nbytes, copies, _) in zip(windows_less_worker_ns, writes))
        by_configuration = tuple((nbytes, copies, median) for (nbytes, copies), median in medians.items())
        return cls(fixed, spread, len(windows_less_worker_ns), WritesModel.fit(list(writes)), by_configuration)

    def unusable(self) -> str:
        """Why the clock cannot judge with this calibration, or '': without a writes model, a turn of another
        context inside the writes would be set against the job's quickest writes alone, which the worker sets."""
        if self.writes is None:
            return ("the evaluator's clock could not fit how long its writes take from its null samples (a part came "
                    "out negative: was another process busy on this GPU?)")
        return ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ClockReading:
    """One sample under the evaluator's clock (ns)."""

    window_ns: float  # opened -> closed
    writes_ns: float  # the evaluator's writes and flush before "go", from its gate's release
    bytes: int = 0  # what those writes copied into the slots' CUDA buffers
    copies: int = 0  # in how many copies

    def calls_ns(self, calibration: ClockCalibration) -> float:
        """The sample's calls, as the evaluator's clock saw them."""
        return self.window_ns - calibration.fixed_ns


class SpotCheck:
    """Random elements of random calls' outputs, gathered by the evaluator's stream right after `closed` into its own
    memory, and compared with the outputs once the sample is over. Index tensors and results are allocated when the
    job starts: nothing may allocate or load a module while the evaluator's stream waits for the worker."""

    def __init__(self, slots: list):
        self.rng = random.SystemRandom()
        self.regions = []  # per slot: its output buffers, each viewed as int16 elements of its span
        for slot in slots:
            spans = [slot.layout.tensors[i] for i in slot.layout.outputs]
            self.regions.append([slot.buffers["cuda"][s["offset"]:s["offset"] + s["bytes"] // 2 * 2].view(torch.int16)
                                 for s in spans])
        width = min(SPOT_CALLS, len(slots)) * max(len(r) for r in self.regions)
        self.index = torch.zeros(width, SPOT_ELEMENTS, dtype=torch.int64, device="cuda")
        self.seen = torch.zeros(width, SPOT_ELEMENTS, dtype=torch.int16, device="cuda")
        self.picked = []
        self.pick()
        self.gather()  # loads the gather's kernel before any stream waits
        torch.cuda.synchronize()

    def pick(self):
        """This sample's calls and elements, chosen by the evaluator (the worker sees none of its memory)."""
        last = len(self.regions) - 1
        calls = [last] + self.rng.sample(range(last), min(SPOT_CALLS, len(self.regions)) - 1)
        self.picked = [(call, region) for call in calls for region in self.regions[call]]
        rows = [[self.rng.randrange(region.numel()) for _ in range(SPOT_ELEMENTS)] for _, region in self.picked]
        self.index[:len(rows)].copy_(torch.tensor(rows, dtype=torch.int64))

    def gather(self):
        for row, (_, region) in enumerate(self.picked):
            torch.index_select(region, 0, self.index[row], out=self.seen[row])

    def changed_call(self) -> int | None:
        """The first spot-checked call whose output changed after `closed`, or None (synchronizes)."""
        for row, (call, region) in enumerate(self.picked):
            if not torch.equal(region.index_select(0, self.index[row]), self.seen[row]):
                return call
        return None


class EvaluatorClock:
    """The words, events and spot check of the evaluator's end of the clock, for one worker."""

    def __init__(self):
        self.pool = torch.cuda.MemPool()  # a segment of its own: the worker maps nothing else with the words
        with torch.cuda.use_mem_pool(self.pool):
            self.buffer = torch.zeros(segment_bytes(4 * COUNT), dtype=torch.uint8, device="cuda")
        self.words = StreamWords(self.buffer.data_ptr())
        self.gate = torch.zeros(1, dtype=torch.int32, device="cuda")  # private: in no segment a worker maps
        self.gate_word = StreamWords(self.gate.data_ptr())
        self.aside = torch.cuda.Stream()  # lets the gate go; writes "done" where the worker never does
        self.opened, self.closed = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.started = torch.cuda.Event(enable_timing=True)
        self.sequence = 0
        self.spot = None

    def handle(self) -> str:
        return ipc_handle(self.buffer)

    def watch(self, slots: list):
        """A new set of slots: the spot check's views of their outputs."""
        self.spot = SpotCheck(slots) if slots else None

    def prepare_sample(self) -> int:
        """The next sample's number, and the spot check's picks for it (before the worker is armed)."""
        self.sequence += 1
        if self.spot is not None:
            self.spot.pick()
        return self.sequence

    def begin(self, sequence: int):
        """Before the evaluator queues the sample's writes: its stream waits for the gate, then records `started`."""
        self.gate_word.wait(torch.cuda.current_stream().cuda_stream, 0, sequence)
        self.started.record()

    def release(self, sequence: int):
        """Once the sample's writes, "go" and the wait for "done" are queued: the gate lets them run back to back."""
        self.gate_word.write(self.aside.cuda_stream, 0, sequence)

    def open(self, sequence: int):
        """After the writes and flush: opened, go, wait for done, closed, then the spot check's gather."""
        stream = torch.cuda.current_stream().cuda_stream
        self.opened.record()
        self.words.write(stream, GO, sequence)
        self.words.wait(stream, DONE, sequence)
        self.closed.record()
        if self.spot is not None:
            self.spot.gather()

    def wait(self, deadline: float) -> bool:
        """Whether the sample closed before the deadline (time.monotonic()); the host polls, so that a worker that
        never writes "done" cannot hold it."""
        while not self.closed.query():
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_S)
        return True

    def rescue(self, sequence: int):
        """Let the gate go and write "done" from a stream of the evaluator's own, so that its stream goes on whatever
        happened (the worker never wrote "done": a crash, a hang, a verdict; or the host left between its gate and
        its release). Either word written twice is harmless: the waits are for "at least this sample"."""
        self.release(sequence)
        self.words.write(self.aside.cuda_stream, DONE, sequence)

    def reading(self) -> ClockReading:
        return ClockReading(self.opened.elapsed_time(self.closed) * 1e6, self.started.elapsed_time(self.opened) * 1e6)

    def early_done(self) -> int | None:
        """The first spot-checked call whose output was not yet final when the sample closed."""
        return self.spot.changed_call() if self.spot is not None else None

