"""One worker and everything the evaluator keeps beside it: the jobs of a run, judged here.

Per job the evaluator generates the inputs itself (the contest's generate_input; public seeds for the test cases and
a benchmark's correctness pass, a keyed seed for every sample of a recorded job, each call's input its own
(reference.draws); an unrecorded warm-up times one draw throughout, as the contest's loop times one set of inputs),
keeps a private copy of each and its reference output, writes the inputs into slots the worker maps
(harness.evaluator.slots), and after every call or sample copies the outputs back, checks every one of them, checks
every input against its private copy, looks for processes the worker left running and weighs the reported time
against its own clock (harness.evaluator.witness). The worker only calls the kernel and reports; every verdict is
made here.
"""
import gc
import math
import time
from pathlib import Path
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import torch

from reference import get_task
from reference.checker import all_agree

from .. import device as devices
from ..layout import flatten, output_buffers
from ..protocol import Result
from ..rules import ARENA, DEFAULT_TIMING
from ..stats import calculate
from .clock import ClockCalibration, ClockReading, EvaluatorClock
from .judge import ClockJudge, Tally, WitnessJudge
from .seeds import SeedSource
from .slots import Layout, Slot
from .supervisor import LOAD_GRACE_S, Verdict, WorkerProcess, take_spare
from .telemetry import Telemetry
from .witness import Calibration, Witness, WorkerCpu, run_delay_ns

STALE_HINT = ("\n(every earlier output was right, so the kernel may be returning outputs remembered from earlier "
              "calls: each timed call gets freshly drawn inputs)")
MODIFIED_INPUTS = "the submission modified its input tensors (other than the output c)"
WROTE_PADDING = "the submission wrote outside its tensors (into the padding between its inputs and outputs)"
CALIBRATION_BYTES = {"cpu": (64 << 10, 4 << 20), "cuda": (64 << 20, 512 << 20)}  # a small and a large slot
CALIBRATION_SLOTS = 16  # slots of the third null-sample configuration
CALIBRATION_SAMPLES = 8  # null samples per configuration (the first of each only warms the copy paths)
CLOSE_GRACE_S = 5.0  # after the worker reported its sample, how long its "done" may still take to reach the evaluator


def outputs_of(data) -> list:
    return output_buffers(data)[0]


def as_output(buffers: list, grouped: bool):
    return list(buffers) if grouped else buffers[0]


def same_bits(pairs: list) -> bool:
    """True when every (a, b) tensor pair holds identical bytes; one host sync per device the tensors live on."""
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    flags = {}
    for a, b in pairs:
        if a.shape != b.shape:
            return False
        kind = ints[a.element_size()]
        flags.setdefault(a.device, []).append(torch.ne(a.view(kind), b.to(a.device).view(kind)).any().reshape(1))
    return not any(bool(torch.cat(found).any().item()) for found in flags.values())


def written(writes: list) -> tuple[int, int]:
    """(bytes, copies) of a sample's writes into the slots' CUDA buffers: one copy per staged CUDA buffer
    (Slot.write_staged), which the clock's WritesModel prices."""
    sizes = [buffer.numel() * buffer.element_size() for _, staged in writes
             for where, buffer in getattr(staged, "buffers", {}).items() if where == "cuda"]
    return sum(sizes), len(sizes)


CROWDED_NS = 500_000  # the evaluator's own wait for a CPU in one sample above which a verdict names the crowding


def crowded(sample) -> str:
    """A note on a witness verdict where the evaluator's own thread waited for a CPU in that sample: some of the
    worker's waits count against it, so a crowded machine can flag an honest file (or a file that crowds it)."""
    if sample.evaluator_waited_ns < CROWDED_NS:
        return ""
    return (f" (this machine was crowded: the evaluator itself waited {sample.evaluator_waited_ns / 1e6:.1f} ms for "
            f"a CPU in that sample; on a crowded machine an honest file can be flagged too: run it again on an idle "
            f"one)")


def malformed(what: str) -> Verdict:
    return Verdict("tampered", f"the worker's report was malformed ({what})")


def number(message: dict, key: str) -> float:
    """A finite, non-negative number from a worker's message; anything else is a tampered verdict."""
    value = message.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise malformed(f"{key} is {type(value).__name__} {str(value)[:40]!r}, not a time")
    return float(value)


def texts(message: dict, key: str, count: int | None = None) -> list[str]:
    """A list of strings (of `count` items where given) from a worker's message; else a tampered verdict."""
    value = message.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) \
            or (count is not None and len(value) != count):
        raise malformed(f"{key} is not a list of {count if count is not None else 'some'} strings")
    return value


@dataclass
class Sample:
    """What one timed sample came to, on the evaluator's side."""

    witness_ns: float  # the evaluator's clock around the sample
    waited_ns: float  # of which the evaluator's thread waited for a CPU between its writes and its copies, and the
    # worker's main thread for reasons other than the worker's own threads (WorkerCpu.credit_ns)
    own_ns: float  # of which the evaluator wrote the inputs (and flushed the L2) and copied the outputs back
    copy_ns: float  # of that, the copies of the outputs
    report: dict
    outputs: list
    queued_late: bool  # the worker had not queued every call when the evaluator said go
    evaluator_waited_ns: float = 0.0  # of waited_ns, the evaluator's own thread's part
    reading: ClockReading | None = None  # the evaluator's clock (GPU, arena timing)
    early_call: int | None = None  # a spot-checked call whose output was not final when the sample closed


@dataclass
class Phases:
    """Where the evaluator's time went, in ns per phase: `sample` is the timed protocol the contest's loop also runs
    (inputs written, L2 flushed, the worker's calls, outputs copied back) and `calls` the untimed correctness calls;
    the rest is what the defences add: `draw` and `reference` (fresh inputs and their reference for every timed
    call of a recorded job), `check` (every output, every input, stray processes, the witness), and the worker's
    confined start (`start`, the evaluator's own set-up meanwhile; `ready`, what is left of the worker's start-up;
    `calibrate`, `load`). A recorded job's phases include the worker's start-up if it was the worker's first, and
    any unrecorded warm-up before it."""

    ns: dict = field(default_factory=dict)

    @contextmanager
    def __call__(self, name: str):
        started = time.perf_counter_ns()
        try:
            yield
        finally:
            self.ns[name] = self.ns.get(name, 0) + time.perf_counter_ns() - started


class L2Flush:
    """The evaluator's L2 flush: persisting lines reset (a call of the host's), then a write of 4x the L2 size (a
    kernel on the current stream). The kernel is loaded here: nothing may load a module while the clock's gate holds
    the evaluator's stream (harness.evaluator.clock)."""

    def __init__(self):
        self.buffer = torch.empty(devices.flush_bytes() // 4, dtype=torch.int32, device="cuda")
        self.cudart = devices._cudart()
        self()
        torch.cuda.synchronize()

    def reset_persisting(self):
        if self.cudart is not None:
            self.cudart.cudaCtxResetPersistingL2Cache()

    def fill(self):
        self.buffer.zero_()

    def __call__(self):
        self.reset_persisting()
        self.fill()


class Evaluation:
    def __init__(self, task: str, path: str, timeout_s: float, timing: str = DEFAULT_TIMING, confined: bool = True,
                 source: str | None = None, load: bool = True):
        """source: the file's content as the run hashed it (read from `path` now where not given); the worker
        imports it, whatever the file holds by the time it loads. load: import it now (else `load()` later: the
        evaluations of `diff --measure` are each calibrated before any of their files runs code on the GPU)."""
        self.task = get_task(task)
        self.source = source if source is not None else Path(path).read_text()
        self.timing = timing
        self.timeout_s = timeout_s
        self.seeds = SeedSource()
        self.gpu = torch.cuda.is_available()
        if not self.gpu:
            torch.set_num_threads(1)  # idle OpenMP threads spin for a while: they would share the worker's cores
        self.slots = []
        self.worker = None
        self.unreported = Phases()  # reported by the first recorded job this worker serves
        self.jobs = 0  # jobs started: part of every timed seed, so that no two jobs (a warm-up and its shape's
        # recorded job, or one version's rounds under diff --measure) time the same inputs
        try:
            with self.unreported("start"):  # the evaluator's own set-up, while the worker starts
                self.worker = take_spare(task, path, timeout_s, confined) or WorkerProcess(task, path, timeout_s,
                                                                                           confined)
                self.flush = L2Flush() if self.gpu else None
                self.telemetry = Telemetry.open() if self.gpu else None
            with self.unreported("ready"):  # what is left of the worker's start-up
                self.worker.wait_ready()
            self.sandbox = self.worker.sandbox
            self.clock = None
            if self.gpu and timing == ARENA:
                self.clock = EvaluatorClock()
                self.worker.send("clock", handle=self.clock.handle())
                self.worker.expect(("mapped",), time.monotonic() + timeout_s)
            with self.unreported("calibrate"):
                self.witness_calibration, self.clock_calibration = self.calibrate()
            unusable = self.clock_calibration.unusable() if self.clock is not None else ""
            if unusable:
                raise Verdict("error", unusable)
            if load:
                self.load()
        except BaseException:
            self.close()
            raise

    def load(self):
        """The worker imports the file: the first code of the file's to run, after the calibration."""
        try:
            with self.unreported("load"):
                self.worker.send("load", source=self.source)
                self.worker.expect(("loaded",), time.monotonic() + self.timeout_s + LOAD_GRACE_S)
        except BaseException:
            self.close()
            raise

    # -- slots -----------------------------------------------------------------------------------------------
    def prepare(self, template, count: int) -> list:
        """`count` slots shaped like `template`, mapped by the worker."""
        for slot in self.slots:
            slot.close()
        self.slots = []
        if self.gpu:
            torch.cuda.empty_cache()
        layout = Layout.of(template)
        self.slots = [Slot(layout) for _ in range(count)]
        if self.gpu:
            segments = torch.cuda.memory_snapshot()  # one for every slot: each snapshot lists every segment
            if not all(s.isolated(segments) for s in self.slots):
                raise Verdict("error", "a shared slot's CUDA segment holds more than that slot (evaluator bug)")
        fds = tuple(s.fd for s in self.slots if s.fd is not None)
        self.worker.send("slots", fds=fds, layout=layout.to_wire(), handles=[s.handle() for s in self.slots])
        self.worker.expect(("mapped",), self.deadline())
        if self.clock is not None:
            self.clock.watch(self.slots)
        return self.slots

    def deadline(self) -> float:
        return self.job_deadline

    def start_job(self, job) -> Phases:
        """The job's deadline set; the phases it adds to. A recorded job reports what no record has yet: the
        worker's start-up if this is its first, and any unrecorded warm-up before it."""
        self.job_deadline = time.monotonic() + self.timeout_s
        self.jobs += 1
        phases = self.unreported
        if job.record:
            self.unreported = Phases()
        return phases

    def settle(self):
        """Wait for the evaluator's own queued GPU work. Left queued it would run inside the next phase, and inside
        the next sample's witness as the evaluator's own timed work, a quarter of which the margin allows."""
        if self.gpu:
            torch.cuda.synchronize()

    def references(self, inputs: list) -> list:
        """The reference output of each input, computed to the end."""
        expected = [self.task.ref_kernel(p) for p in inputs]
        self.settle()
        return expected

    # -- the timed protocol ------------------------------------------------------------------------------------
    def sample(self, calls: list, writes: list, method: str, null: bool = False) -> Sample:
        """One sample: `calls` are slot indices, `writes` (slot, staged private inputs) pairs written after the worker
        queued (GPU arena) or before it starts (CPU, contest). null: the worker makes no call (calibration),
        and the evaluator still copies the slots' outputs back."""
        collecting = gc.isenabled()
        gc.disable()  # a collection of the evaluator's heap would land inside the witness
        try:
            return self._sample(calls, writes, method, null)
        finally:
            if collecting:
                gc.enable()

    def _sample(self, calls, writes, method, null) -> Sample:
        if self.clock is not None and method == ARENA:
            return self._clocked_sample(calls, writes, null)
        self.settle()  # staged copies included, as calibration queues them just before
        worker = WorkerCpu.read(self.worker.process.pid, self.worker)
        t0, written, ours = self._witnessed_write(writes)
        self.worker.send("arm", slots=[] if null else calls, method=method)
        self.worker.expect(("queued",), self.deadline())
        if not self.gpu:
            self.worker.send("go")
        report = self.worker.expect(("sampled",), self.deadline())
        ours = run_delay_ns() - ours
        copying = time.perf_counter_ns()
        outputs = self.outputs(calls)
        t1 = time.perf_counter_ns()
        witness_ns, copy_ns = t1 - t0, t1 - copying
        waited = ours + WorkerCpu.read(self.worker.process.pid, self.worker).credit_ns(worker)
        return Sample(witness_ns, waited, written - t0 + copy_ns, copy_ns, report, outputs, False, ours)

    def _clocked_sample(self, calls, writes, null) -> Sample:
        """A sample under the evaluator's clock (harness.evaluator.clock): the worker queues its wait for "go", its
        calls and "done"; then this stream writes the inputs, flushes the L2, opens, says go and waits for done. The
        slots' host memory is written first; the GPU's writes are queued behind the clock's gate and let go at once,
        so that the stream never runs dry between them while the host queues the next. A worker that has not said
        "queued" within the contest clear's duration (a custom_kernel that synchronizes waits for "go" itself) gets
        its "go" anyway, as the contest's clear would have ended by then."""
        self.settle()
        sequence = self.clock.prepare_sample()
        started = time.perf_counter_ns()
        self.worker.send("arm", slots=[] if null else calls, method=ARENA, sequence=sequence)
        wait = (self.worker.clear_ns or 40e6) / 1e9
        queued = self.worker.expect(("queued",), min(self.deadline(), time.monotonic() + wait), patient=True)
        try:
            for slot, staged in writes:
                slot.write_staged(staged, "cpu")
            self.flush.reset_persisting()  # a call of the host's that may wait for the stream: before the gate
            try:
                self.clock.begin(sequence)
                for slot, staged in writes:
                    slot.write_staged(staged, "cuda")
                self.flush.fill()
                self.clock.open(sequence)
            finally:
                self.clock.release(sequence)
            if queued is None:
                self.worker.expect(("queued",), self.deadline())
            report = self.worker.expect(("sampled",), self.deadline())
            if not self.clock.wait(min(self.deadline(), time.monotonic() + CLOSE_GRACE_S)):
                raise Verdict("tampered", "the worker reported its sample, but its stream never wrote \"done\" for the "
                                          "evaluator's clock")
        except BaseException:
            self.clock.rescue(sequence)  # this stream waits for "done": it must go on whatever the worker did
            raise
        copying = time.perf_counter_ns()
        outputs = self.outputs(calls)
        ended = time.perf_counter_ns()
        nbytes, copies = written(writes)
        return Sample(ended - started, 0.0, 0.0, ended - copying, report, outputs, queued is None,
                      reading=replace(self.clock.reading(), bytes=nbytes, copies=copies),
                      early_call=self.clock.early_done())

    def outputs(self, calls: list) -> list:
        """The outputs of the calls in the slots, copied into the evaluator's own memory."""
        outputs = [[b.clone() for b in outputs_of(self.slots[i].data)] for i in calls]
        if self.gpu:
            torch.cuda.synchronize()
        return outputs

    def _witnessed_write(self, writes: list) -> tuple:
        """The witness's start, then the inputs written: (its clock, when the writes ended, the evaluator's waits
        for a CPU by then)."""
        started = time.perf_counter_ns()
        self.write(writes)
        return started, time.perf_counter_ns(), run_delay_ns()

    def write(self, writes: list):
        for slot, staged in writes:
            slot.write_staged(staged)
        if self.gpu:
            self.flush()
            torch.cuda.synchronize()

    def calibrate(self) -> tuple[Calibration, ClockCalibration | None]:
        """Null samples before any submission code runs, for one small slot, one large slot and many small slots: the
        protocol's remainder (what the witness does not time) and, under the evaluator's clock, its fixed cost (the
        window less the worker's events around its touch of memory, and how long its writes take: WritesModel)."""
        where = "cuda" if self.gpu else "cpu"
        small, large = CALIBRATION_BYTES[where]
        points, fixed, writes = [], [], []
        self.job_deadline = time.monotonic() + self.timeout_s
        for nbytes, count in ((small, 1), (large, 1), (64, CALIBRATION_SLOTS)):
            def shaped(fill):  # an operand, a second one, an output: as a task's input tuple ends in c
                return fill(nbytes), fill(64), torch.zeros(64, 64, dtype=torch.float16, device=where)
            slots = self.prepare(shaped(lambda n: torch.zeros(n, dtype=torch.uint8, device=where)), count)
            privates = [slots[0].layout.stage(shaped(lambda n: torch.randint(0, 255, (n,), dtype=torch.uint8,
                                                                               device=where))) for _ in slots]
            for n in range(CALIBRATION_SAMPLES + 1):
                result = self.sample(list(range(count)), list(zip(slots, privates)), self.timing, null=True)
                region = float(result.report.get("region_ns", 0))
                if n:  # the first of each configuration warms the copy paths
                    points.append(result.witness_ns - result.waited_ns - result.own_ns - region)
                    if result.reading is not None:
                        fixed.append(result.reading.window_ns - region)
                        writes.append((result.reading.bytes, result.reading.copies, result.reading.writes_ns))
        return Calibration(points), ClockCalibration.fit(fixed, writes) if fixed else None

    # -- jobs --------------------------------------------------------------------------------------------------
    def generate(self, job, seed: int, values: str | None = None):
        """The job's inputs under `seed`, as the contest draws them (its correctness inputs)."""
        return self.task.generate_input(**{**job.args, "seed": seed}, values=values or job.values)

    def draw_timed(self, job, seed: int, count: int):
        """A timed sample's `count` inputs under one keyed seed, which no contest run shares: a reference.draws.Draw,
        drawn at once where the task can."""
        return self.task.generate_many(count, **{**job.args, "seed": seed}, values=job.values)

    def call(self, slots: list) -> list:
        self.worker.send("call", slots=slots)
        reply = self.worker.expect(("called",), self.deadline())
        calls = reply.get("calls")
        if not isinstance(calls, list) or len(calls) != len(slots) or not all(isinstance(c, dict) for c in calls):
            raise malformed("the answer to a call")
        for c in calls:
            number(c, "host_ns")
            if not isinstance(c.get("problem"), str):
                raise malformed("a call's problem is not a string")
        return calls

    def check_calls(self, privates: list, expected: list, calls: list, slot_ids: list, hint: str = "") -> Result | None:
        grouped = isinstance(privates[0][0], list)
        for n, (private, ref, answer, i) in enumerate(zip(privates, expected, calls, slot_ids)):
            label = f"input {n}: " if len(privates) > 1 else ""
            problem = answer["problem"]
            if problem:
                return Result("fail", f"{label}{problem}")
            out = as_output([b.clone() for b in outputs_of(self.slots[i].data)], grouped)
            report = self.task.check_output(out, ref)
            if not report.ok:
                return Result("fail", f"{label}{report.message}{hint}")
        unchanged = self.inputs_unchanged(privates, slot_ids)
        return Result("fail", unchanged) if unchanged else None

    def inputs_unchanged(self, privates: list, slot_ids: list) -> str:
        pairs = []
        for private, i in zip(privates, slot_ids):
            outs = {id(t) for t in outputs_of(self.slots[i].data)}
            for theirs, ours in zip(flatten(self.slots[i].data)[1], flatten(private)[1]):
                if id(theirs) not in outs:
                    pairs.append((theirs, ours))
        return "" if same_bits(pairs) else MODIFIED_INPUTS

    def staged_unchanged(self, staged: list, slot_ids: list) -> str:
        """inputs_unchanged for staged inputs, compared as the few byte runs between outputs (Slot.input_pairs),
        which cover the padding between tensors too: a change found there is named tensor by tensor."""
        pairs = [pair for one, i in zip(staged, slot_ids) for pair in self.slots[i].input_pairs(one)]
        if same_bits(pairs):
            return ""
        return self.inputs_unchanged([one.data for one in staged], slot_ids) or WROTE_PADDING

    def test(self, job) -> Result:
        started = time.perf_counter_ns()
        phases = self.start_job(job)
        with phases("draw"):
            data = self.generate(job, job.seeds[0])
        with phases("reference"):
            [expected] = self.references([data])
        with phases("calls"):
            self.prepare(data, 1)
            self.slots[0].write(data)
            call = self.call([0])[0]
        with phases("check"):
            failed = self.check_calls([data], [expected], [call], [0])
        return failed or Result("pass", first_call_ns=call["host_ns"], phases_ns=phases.ns,
                                job_ns=time.perf_counter_ns() - started)

    def profile(self, job) -> Result:
        self.start_job(job)
        data = self.generate(job, job.seeds[0])
        self.prepare(data, 1)
        self.slots[0].write(data)
        self.worker.send("profile", slot=0)
        return Result("pass", report=str(self.worker.expect(("profiled",), self.deadline()).get("report", "")))

    def benchmark(self, job) -> Result:
        phases = self.start_job(job)
        started = time.perf_counter_ns()
        n = len(job.seeds)
        ids = list(range(n))
        with phases("draw"):
            privates = [self.generate(job, s) for s in job.seeds]
            general = self.generate(job, job.seeds[0], values="general")
        with phases("reference"):
            *expected, expected_general = self.references([*privates, general])
        with phases("calls"):
            self.prepare(privates[0], n)
            for slot, private in zip(self.slots, privates):
                slot.write(private)
            calls = self.call(ids)
        first_ns = calls[0]["host_ns"]
        with phases("check"):
            failed = self.check_calls(privates, expected, calls, ids)
        if failed:
            failed.first_call_ns = first_ns
            return failed
        with phases("calls"):
            self.slots[0].write(general)
            calls = self.call([0])
        with phases("check"):
            failed = self.check_calls([general], [expected_general], calls, [0])
        if failed:
            failed.message = f"general-value input: {failed.message}"
            return failed
        clocked = self.clock is not None
        judge = ClockJudge(self.clock_calibration, n) if clocked else \
            WitnessJudge(Witness(self.witness_calibration, "cuda" if self.gpu else "cpu"), n)
        tally = Tally()
        rule = job.stop
        sample_number = 0
        loop_started = time.perf_counter_ns()  # the rule's clock: the timed loop's, as the contest's
        if self.telemetry:
            self.telemetry.restart()
        while True:
            sample_number += 1
            iteration_started = time.perf_counter_ns()
            if job.record or sample_number == 1:  # a warm-up times one draw throughout, as the contest's loop does
                staged, expected = self.draw_sample(job, sample_number, n, phases)
            with phases("sample"):
                result = self.sample(ids, list(zip(self.slots, staged)), self.timing)
            checked = time.perf_counter_ns()
            if self.telemetry:
                self.telemetry.read()
            failed = self.check_sample(job, sample_number, result, staged, expected)
            if failed:
                failed.first_call_ns = first_ns
                return failed
            report = result.report
            region = number(report, "region_ns")
            if clocked:
                judgement = judge.judge(result.reading, region, result.early_call)
            else:
                judgement = judge.judge(result.witness_ns, result.waited_ns, region, result.own_ns, result.copy_ns)
            if judgement.verdict:
                return Result("tampered", f"sample {sample_number}: {judgement.verdict}{crowded(result)}",
                              first_call_ns=first_ns)
            kept = tally.add(judgement, number(report, "host_ns") / n, number(report, "pending_ns"),
                             result.queued_late, time.perf_counter_ns() - iteration_started)
            phases.ns["check"] += time.perf_counter_ns() - checked
            if kept and tally.finished(rule, time.perf_counter_ns() - loop_started, judge):
                break
        contradiction = judge.judge_all()
        if contradiction:
            return Result("tampered", contradiction, first_call_ns=first_ns)
        return Result("pass", first_call_ns=first_ns, stats=calculate(tally.durations).as_dict(),
                      samples_ns=tally.durations, host_ns=tally.host_ns, hold_timeouts=tally.queued_late,
                      hold_timeout_ns=self.worker.clear_ns if self.timing == ARENA and self.gpu else None,
                      pending_max_ns=max(tally.pending_ns) if self.gpu else None, phases_ns=phases.ns,
                      telemetry=self.telemetry.summary() if self.telemetry else None,
                      job_ns=time.perf_counter_ns() - started, witness=None if clocked else judge.summary(),
                      clock=judge.summary() if clocked else None, worker_stats=tally.worker_stats())

    def draw_sample(self, job, sample_number: int, n: int, phases: Phases) -> tuple[list, list]:
        """A timed sample's n inputs under the job's keyed seed, staged as the slots are laid out, and the reference
        output of each, both computed to the end."""
        with phases("draw"):
            draw = self.draw_timed(job, self.seeds.seed(self.jobs, job.label, job.index, job.values, sample_number), n)
            layout = self.slots[0].layout
            staged = layout.stage_cut(draw.whole, n) if draw.whole is not None else \
                [layout.stage(one) for one in draw.inputs]
            self.settle()
        with phases("reference"):  # of the draw, which the staged copies equal
            expected = self.task.reference_many(draw)
            del draw
            self.settle()
        return staged, expected

    def check_sample(self, job, sample_number: int, result: Sample, staged: list, expected: list) -> Result | None:
        """A timed sample's outputs, inputs, stray processes and the worker's self-check: a failing Result, or None."""
        n = len(staged)
        ids = list(range(n))
        findings = [p for p in texts(result.report, "problems", n) if p]
        if findings:
            return Result("fail", f"sample {sample_number}: {findings[0]}")
        privates = [s.data for s in staged]
        grouped = isinstance(privates[0][0], list)
        pairs = [pair for out, ref in zip(result.outputs, expected) for pair in zip(out, ref if grouped else [ref])]
        for i, (out, ref) in enumerate([] if all_agree(pairs) else zip(result.outputs, expected)):
            check = self.task.check_output(as_output(out, grouped), ref)
            if not check.ok:
                hint = STALE_HINT if job.record else ""  # a warm-up times one draw throughout
                return Result("fail", f"sample {sample_number}: input {i}: {check.message}{hint}")
        for verdict in (self.staged_unchanged(staged, ids), self._processes()):
            if verdict:
                return Result("fail", f"sample {sample_number}: {verdict}")
        self_check = texts(result.report, "self_check")
        if self_check:
            return Result("tampered", f"sample {sample_number}: the worker's self-check found " + "; ".join(self_check))
        return None

    def _processes(self) -> str:
        stray = self.worker.descendants()
        return f"the submission left {len(stray)} process(es) running after its calls (pid {stray[0]})" if stray else ""

    def close(self):
        for slot in self.slots:
            slot.close()
        self.slots = []
        if self.worker is not None:  # none when it could not be started
            self.worker.stop()
