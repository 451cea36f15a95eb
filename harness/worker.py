"""The worker process: imports one submission and runs the jobs the runner sends it.

`python -m harness.worker --task T --jobs FD --results FD FILE...`, started by harness.runner in a
fresh interpreter, so a submission that crashes, corrupts its CUDA context or hangs takes only
this process down. Jobs arrive and results leave as JSON lines (harness.channel): "ready",
"fatal", "progress" and "done"; a result carries the job's token, which the runner checks.

A benchmark job: N inputs generated, the first calls checked with every per-call defense (and one
more call on general values), then the samples of harness.timing with the defenses of
harness.defenses around each: fresh inputs negated by a secret pattern every sample, every output
of every sample checked, escapes, threads, persisting L2, tampering.
"""
import argparse
import math
import os
import time
import traceback
from pathlib import Path

from . import channel
from .protocol import TRACEBACK_MARK, Job, Result, job_from_wire, to_wire
from .timing import Verdict

WORKER_ENTRY_POINTS = ("harness.worker.clone_data", "harness.worker.Jobs.benchmark", "harness.worker.Jobs.test",
                       "harness.worker.Jobs.compare_all")


def clone_data(data):
    """Deep copy of an input tuple: tensors cloned (strides kept), containers rebuilt."""
    import torch
    if isinstance(data, tuple):
        return tuple(clone_data(x) for x in data)
    if isinstance(data, list):
        return [clone_data(x) for x in data]
    if isinstance(data, torch.Tensor):
        return data.clone()
    return data


class Jobs:
    """Holds the task, the submission and the device; one method per job mode."""

    def __init__(self, send, task: str, submission_path, guarded: bool = True):
        from harness import defenses, device, guard, timing  # noqa: F401 - loaded before the snapshot
        from harness.rules import task_rules
        from harness.submission import import_submission
        from reference import get_task
        self.send = send  # send(kind, **payload) to the runner, or None
        self.task = get_task(task)
        self.rules = task_rules(task)
        self.guarded = guarded
        self.device = device.open_device(self.rules.eval.clear_bytes)
        self.trap = guard.ReferenceTrap()
        if guarded:
            self.trap.install()
        self.integrity = guard.Integrity(self.task, WORKER_ENTRY_POINTS)  # before the submission's code runs
        self.device.reset_persisting_l2()
        # as the driver reports it before any submission code
        self.l2_watch = defenses.PersistingL2(self.device, self.device.persisting_l2_limit())
        self.integrity_watch = defenses.IntegrityWatch(self.integrity)
        self.noise_ns = defenses.EscapeWatch.host_noise_ns(self.device)
        paths = [submission_path] if isinstance(submission_path, str) else list(submission_path)
        # Several files share one worker only for `diff --measure` (one's own versions, compared under the
        # same process, clocks and caches); each is imported in turn as module `submission`.
        self.kernels = {p: import_submission(Path(p)).custom_kernel for p in paths}
        self.kernel = self.kernels[paths[0]]
        self.check_integrity()

    def progress(self, text: str):
        if self.send:
            self.send("progress", text=text)

    def generate(self, job: Job, seed: int, values: str | None = None):
        return self.task.generate_input(**{**job.args, "seed": seed}, values=values or job.values)

    def outputs_allowed(self, data) -> list:
        """The tensors an output may be: c, or each group's c."""
        return [abc[2] for abc in data[0]] if isinstance(data[0], list) else [data[-1]]

    def check_integrity(self):
        tampered = self.integrity_watch.after_sample(None)
        if tampered:
            raise Verdict(*tampered)

    def guarded_call(self, data, original=None):
        """One untimed call with every per-call defense; returns (output, host ns until its stream is done)."""
        from harness import guard
        before = guard.threads()
        self.device.synchronize()
        t0 = time.perf_counter_ns()
        self.trap.inside = True
        out = self.kernel(data)
        self.trap.inside = False
        if not self.guarded:
            self.device.synchronize()
            return out, time.perf_counter_ns() - t0
        problem = guard.inspect_outputs(out, data, self.outputs_allowed(data))
        if problem:
            raise Verdict("fail", problem)
        probe = guard.DeferredWriteProbe(out)  # waits for the current stream only
        elapsed = time.perf_counter_ns() - t0
        for check in (probe.changed(), guard.new_threads(before), self.l2_watch.after_sample(None), self.trap.verdict()):
            if check:
                raise Verdict("fail", check)
        if original is not None:
            self.unchanged(data, original)
        self.check_integrity()
        return out, elapsed

    def unchanged(self, given, original):
        """Inputs other than the output buffers must be as generated."""
        import torch

        from harness.guard import _storages
        allowed = {id(t) for t in self.outputs_allowed(given)}
        for x, y in zip(_storages(given), _storages(original)):
            if id(x) not in allowed and not torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)):
                raise Verdict("fail", f"the submission modified an input tensor of shape {tuple(x.shape)} ({x.dtype})")

    def test(self, job: Job) -> Result:
        self.progress("generating input")
        data = self.generate(job, job.seeds[0])
        self.progress("calling custom_kernel")
        out, first_ns = self.guarded_call(clone_data(data), original=data)
        self.progress("checking against the reference")
        report = self.task.check(data, out)
        return Result("pass" if report.ok else "fail", report.message, first_call_ns=first_ns)

    def benchmark(self, job: Job) -> Result:
        from harness import defenses, guard
        from harness.stats import calculate
        from harness.timing import measure
        job_started = time.perf_counter_ns()
        self.progress(f"generating {len(job.seeds)} inputs")
        inputs = [self.generate(job, s) for s in job.seeds]
        expected = [self.task.ref_kernel(d) for d in inputs]
        t = time.perf_counter_ns()
        if self.guarded:
            fresh = guard.FreshInputs(self.task, inputs)
            replaced = {id(x) for d in inputs for pair in self.task.fresh_slots(d) for x in pair}
            shared = [x for x in guard._storages(inputs) if id(x) not in replaced]  # what every call reads as is
            unchanged = defenses.InputsUnchanged(shared)
            patterns = guard.sign_patterns(len(inputs))
        guard_ns = time.perf_counter_ns() - t

        def next_inputs():
            if not self.guarded:
                return inputs, [False] * len(inputs)
            signs = next(patterns)
            return fresh.sample(signs), signs

        self.progress("first calls and correctness checks")
        batch, signs = next_inputs() if self.guarded else ([clone_data(d) for d in inputs], [False] * len(inputs))
        outputs, first_ns = [], None
        for d in batch:
            out, host_ns = self.guarded_call(d)
            first_ns = host_ns if first_ns is None else first_ns
            outputs.append(out)
        self.device.synchronize()
        if self.guarded and unchanged.after_all():
            raise Verdict("fail", "the submission modified its input tensors (other than the output c)")
        failure = self.compare_all(outputs, [defenses.negate(e) if s else e for e, s in zip(expected, signs)])
        if failure:
            return Result("fail", failure, first_call_ns=first_ns)
        if self.guarded:
            t = time.perf_counter_ns()
            general = self.generate(job, job.seeds[0], values="general")
            out, _ = self.guarded_call(clone_data(general), original=general)
            report = self.task.check(general, out)
            if not report.ok:
                return Result("fail", f"general-value input: {report.message}{defenses.STALE_HINT}",
                              first_call_ns=first_ns)
            guard_ns += time.perf_counter_ns() - t

        watch = [] if not self.guarded else [
            defenses.ReferenceCalls(self.trap), defenses.ThreadWatch(),
            *([defenses.EscapeWatch(self.noise_ns)] if self.device.gpu and job.timing == "arena" else []),
            defenses.OutputObjects(self.outputs_allowed), self.l2_watch,
            defenses.OutputValues(expected, self.compare_all), self.integrity_watch, unchanged]

        def on_sample(timing):
            if len(timing.durations) % 10 == 0:
                self.progress(f"{len(timing.durations)} samples, {(time.perf_counter_ns() - job_started) / 1e9:.1f} s")

        timing = measure(self.kernel, next_inputs, self.device, job.timing, job.stop, watch, on_sample)
        return Result("pass", first_call_ns=first_ns, stats=calculate(timing.durations).as_dict(),
                      samples_ns=timing.durations, host_ns=timing.host_ns, hold_timeouts=timing.hold_timeouts,
                      hold_timeout_ns=self.device.clear_ns if job.timing == "arena" else None,
                      pending_max_ns=max(timing.pending_ns) if self.device.gpu else None, guarded=self.guarded,
                      guard_ns=guard_ns + timing.defense_ns if self.guarded else None,
                      job_ns=time.perf_counter_ns() - job_started)

    def compare_all(self, outputs, expected) -> str:
        for i, (out, ref) in enumerate(zip(outputs, expected)):
            report = self.task.check_output(out, ref)
            if not report.ok:
                return f"input {i}: {report.message}"
        return ""

    def profile(self, job: Job) -> Result:
        from torch.profiler import ProfilerActivity, profile
        data = self.generate(job, job.seeds[0])
        self.kernel(clone_data(data))  # warm: compile outside the profile
        self.device.synchronize()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.gpu else [])
        with profile(activities=activities) as prof:
            self.kernel(clone_data(data))
            self.device.synchronize()
        sort = "self_cuda_time_total" if self.device.gpu else "self_cpu_time_total"
        return Result("pass", report=prof.key_averages().table(sort_by=sort, row_limit=15))

    def nvtx_call(self, job: Job):
        """For Nsight Compute (harness.ncu): one warm call, then one call inside the NVTX range it profiles."""
        import torch
        from harness.ncu import RANGE
        data = self.generate(job, job.seeds[0])
        self.kernel(clone_data(data))
        self.device.synchronize()
        inputs = clone_data(data)
        torch.cuda.nvtx.range_push(RANGE)
        self.kernel(inputs)
        self.device.synchronize()
        torch.cuda.nvtx.range_pop()


CUDA_MISSING = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "Found no NVIDIA driver",
                "no CUDA-capable device", "CUDA_HOME environment variable is not set", "0 active drivers")
GPU_ONLY_MODULES = ("triton", "cutlass", "cuda", "cupy", "tvm_ffi")  # missing on a CPU machine: the file needs a GPU


def needs_gpu(exc: BaseException) -> bool:
    """The error says the file needs a CUDA GPU this machine does not have."""
    if any(words in str(exc) for words in CUDA_MISSING):
        return True
    import torch
    module = (getattr(exc, "name", None) or "") if isinstance(exc, ModuleNotFoundError) else ""
    return module.split(".")[0] in GPU_ONLY_MODULES and not torch.cuda.is_available()


def main(argv=None):
    parser = argparse.ArgumentParser(description="nvfp4-arena worker (started by harness.runner)")
    parser.add_argument("--task", required=True)
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--results", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--unguarded", action="store_true")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    from harness.runner import die_with_parent
    die_with_parent(args.parent)
    os.set_inheritable(args.jobs, False)
    os.set_inheritable(args.results, False)

    def send(kind, **payload):
        channel.send(args.results, kind, **payload)
    paths = args.paths[0] if len(args.paths) == 1 else args.paths
    try:
        from harness.device import describe
        jobs = Jobs(send, args.task, paths, not args.unguarded)
        send("ready", device=describe())
    except Verdict as exc:
        send("fatal", result=to_wire(Result(exc.status, exc.message)))
        return
    except BaseException as exc:  # noqa: BLE001 - any failure to start is reported, not raised
        send("fatal", result=to_wire(Result("error", f"submission failed to load: {explain(exc, args.paths)}")))
        return
    reader = channel.Reader(args.jobs)
    while True:
        try:
            message = reader.receive(math.inf)
        except (channel.Closed, channel.Garbled):
            return
        if message["kind"] != "job":
            return
        job = job_from_wire(message["job"])
        try:
            if job.submission:
                jobs.kernel = jobs.kernels[job.submission]
            result = getattr(jobs, job.mode)(job)
        except Verdict as exc:
            result = Result(exc.status, exc.message)
        except BaseException as exc:  # noqa: BLE001 - the submission's exception becomes a verdict
            result = Result("error", explain(exc, args.paths))
        result.token = job.token
        send("done", result=to_wire(result))


def explain(exc: BaseException, paths: list) -> str:
    """One paragraph: the exception, at the last line of the user's own file it passed through (the
    whole traceback follows, for run.py --traceback, after a line of its own)."""
    text = f"{type(exc).__name__}: {exc}".strip()
    if needs_gpu(exc):
        text = f"this file needs a CUDA GPU (its kernels are built for one) and this machine has none: {text}"
    own = {str(Path(p).resolve()) for p in paths}
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename and str(Path(exc.filename).resolve()) in own:
        where = f" (at {Path(exc.filename).name}:{exc.lineno})"
    else:
        frame = next((f for f in reversed(frames) if str(Path(f.filename).resolve()) in own), None)
        where = f" (at {Path(frame.filename).name}:{frame.lineno}: {frame.line})" if frame else ""
    full = "".join(traceback.format_exception(exc))
    return f"{text}{where}\n{TRACEBACK_MARK}\n{full}"


if __name__ == "__main__":
    main()
