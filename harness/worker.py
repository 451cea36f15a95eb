"""The worker process: imports one submission and runs the jobs the runner sends it.

It runs in a freshly spawned interpreter, so a submission that crashes, corrupts its CUDA
context or hangs takes only this process down. Messages to the runner are tuples:
("ready", device_info) | ("fatal", message) | ("progress", text) | ("result", dict). A result
carries the job's token, which the runner checks.

Timed samples follow the contest (flush L2, start event, N calls, end event, divide by N), with
the defenses of harness.guard: each sample calls the kernel on fresh inputs whose packed operand
is negated by a secret pattern (so an output remembered from any earlier call is wrong), every
output of every sample is checked, and escapes, deferred writes and tampering are verdicts.
"""
import os
import sys
import time
import traceback


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


STALE_HINT = ("\n(every earlier output was right, so the kernel may be returning outputs remembered from earlier "
              "calls: each timed call gets fresh inputs whose values are negated by a secret pattern)")


def negate(expected):
    return [-e for e in expected] if isinstance(expected, list) else -expected


class Verdict(Exception):
    """A defense fired: status and message for the record."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class Jobs:
    """Holds the task, the submission and the device chores; one method per job mode."""

    def __init__(self, conn, task: str, submission_path: str, guarded: bool = True):
        from pathlib import Path

        from harness.device import DeviceChores
        from harness.guard import Integrity, ReferenceTrap, persisting_l2_limit
        from harness.submission import import_submission
        from reference import get_task
        self.conn = conn
        self.task = get_task(task)
        self.guarded = guarded
        self.chores = DeviceChores()
        self.trap = ReferenceTrap()
        if guarded:
            self.trap.install()
        self.integrity = Integrity(self.task)  # snapshot before the submission's code runs
        self.chores.reset_persisting_l2()
        self.l2_baseline = persisting_l2_limit(self.chores.cudart)  # as the driver reports it before any submission code
        paths = [submission_path] if isinstance(submission_path, str) else list(submission_path)
        # Several files share one worker only for `diff --measure` (one's own versions, compared under the
        # same process, clocks and caches); each is imported in turn as module `submission`.
        self.kernels = {p: import_submission(Path(p)).custom_kernel for p in paths}
        self.kernel = self.kernels[paths[0]]
        self.check_integrity()

    def progress(self, text: str):
        self.conn.send(("progress", text))

    def generate(self, job: dict, seed: int, values: str | None = None):
        return self.task.generate_input(**{**job["args"], "seed": seed}, values=values or job["values"])

    def outputs_allowed(self, data) -> list:
        """The tensors an output may be: c, or each group's c."""
        return [abc[2] for abc in data[0]] if isinstance(data[0], list) else [data[-1]]

    def check_integrity(self):
        replaced = self.integrity.replaced()
        if replaced:
            raise Verdict("tampered", "the submission replaced harness or torch functions: " + ", ".join(replaced))

    def guarded_call(self, data, original=None):
        """One untimed call with every per-call defense; returns (output, ns until its stream is done)."""
        from harness import guard
        before = guard.threads()
        self.chores.synchronize()
        t0 = time.perf_counter_ns()
        self.trap.inside = True
        out = self.kernel(data)
        self.trap.inside = False
        if not self.guarded:
            self.chores.synchronize()
            return out, time.perf_counter_ns() - t0
        problem = guard.inspect_outputs(out, data, self.outputs_allowed(data))
        if problem:
            raise Verdict("fail", problem)
        probe = guard.DeferredWriteProbe(out)  # waits for the current stream only
        elapsed = time.perf_counter_ns() - t0
        for check in (probe.changed(), guard.new_threads(before), self.persisting_l2(), self.trap.verdict()):
            if check:
                raise Verdict("fail", check)
        if original is not None:
            self.unchanged(data, original)
        self.check_integrity()
        return out, elapsed

    def persisting_l2(self) -> str:
        from harness.guard import persisting_l2_limit
        now = persisting_l2_limit(self.chores.cudart)
        if now != self.l2_baseline:
            return (f"the submission changed the persisting-L2 cache limit (cudaLimitPersistingL2CacheSize: "
                    f"{self.l2_baseline} -> {now} bytes)")
        return ""

    def unchanged(self, given, original):
        """Inputs other than the output buffers must be as generated."""
        import torch

        from harness.guard import _storages
        allowed = {id(t) for t in self.outputs_allowed(given)}
        for x, y in zip(_storages(given), _storages(original)):
            if id(x) not in allowed and not torch.equal(x.reshape(-1).view(torch.uint8), y.reshape(-1).view(torch.uint8)):
                raise Verdict("fail", f"the submission modified an input tensor of shape {tuple(x.shape)} ({x.dtype})")

    def test(self, job: dict) -> dict:
        self.progress("generating input")
        data = self.generate(job, job["seeds"][0])
        self.progress("calling custom_kernel")
        given = clone_data(data)
        out, first_ns = self.guarded_call(given, original=data)
        self.progress("checking against the reference")
        report = self.task.check(data, out)
        return {"status": "pass" if report.ok else "fail", "message": report.message, "first_call_ns": first_ns}

    def benchmark(self, job: dict) -> dict:
        from harness import guard
        from harness.device import RegionTimer
        from harness.stats import StopRule, calculate
        seeds = job["seeds"]
        job_started = time.perf_counter_ns()
        guard_ns = 0
        self.progress(f"generating {len(seeds)} inputs")
        inputs = [self.generate(job, s) for s in seeds]
        expected = [self.task.ref_kernel(d) for d in inputs]
        flipped = [negate(e) for e in expected] if self.guarded else expected

        def expected_for(signs):
            return [flipped[i] if s else expected[i] for i, s in enumerate(signs)]
        stacked = guard.StackedCheck(expected) if self.guarded else None
        t = time.perf_counter_ns()
        if self.guarded:
            fresh = guard.FreshInputs(self.task, inputs)
            replaced = {id(x) for d in inputs for pair in self.task.fresh_slots(d) for x in pair}
            shared = [x for x in guard._storages(inputs) if id(x) not in replaced]  # what every call reads as is
            prints = guard.fingerprint(shared)
        guard_ns += time.perf_counter_ns() - t
        patterns = guard.sign_patterns(len(inputs))

        self.progress("first calls and correctness checks")
        signs = next(patterns) if self.guarded else [False] * len(inputs)
        outputs, first_ns = [], None
        for d in fresh.sample(signs) if self.guarded else [clone_data(d) for d in inputs]:
            out, host_ns = self.guarded_call(d)
            first_ns = host_ns if first_ns is None else first_ns
            outputs.append(out)
        self.chores.synchronize()
        if self.guarded and guard.fingerprint(shared) != prints:
            raise Verdict("fail", "the submission modified its input tensors (other than the output c)")
        failure = self.compare_all(outputs, expected_for(signs))
        if failure:
            return {"status": "fail", "message": failure, "first_call_ns": first_ns}
        if self.guarded:
            t = time.perf_counter_ns()
            general = self.generate(job, seeds[0], values="general")
            out, _ = self.guarded_call(clone_data(general), original=general)
            report = self.task.check(general, out)
            if not report.ok:
                return {"status": "fail", "message": f"general-value input: {report.message}{STALE_HINT}",
                        "first_call_ns": first_ns}
            guard_ns += time.perf_counter_ns() - t

        rule = StopRule(**job["stop"])
        timer = RegionTimer(self.chores.gpu)
        escapes = guard.EscapeWatch()
        durations = []
        started = time.perf_counter_ns()
        while True:
            t = time.perf_counter_ns()
            signs = next(patterns) if self.guarded else [False] * len(inputs)
            batch = fresh.sample(signs) if self.guarded else inputs
            before = guard.threads()
            guard_ns += time.perf_counter_ns() - t
            self.chores.synchronize()
            self.chores.before_sample()
            self.chores.synchronize()
            self.trap.inside = True
            timer.start()
            outputs = [self.kernel(d) for d in batch]
            timer.stop()
            self.trap.inside = False
            end_done = timer.wait()
            region = timer.elapsed_ns()
            t = time.perf_counter_ns()
            if self.guarded:
                late = escapes.observe(guard.pending_after(end_done), region) if self.chores.gpu else ""
                late = late or guard.new_threads(before) or guard.distinct_outputs(outputs) or self.persisting_l2()
                late = late or self.trap.verdict()
                late = late or next((f"input {i}: {p}" for i, p in enumerate(
                    guard.inspect_outputs(o, d, self.outputs_allowed(d)) for o, d in zip(outputs, batch)) if p), "")
                if late:
                    raise Verdict("fail", f"sample {len(durations) + 1}: {late}")
            else:
                self.chores.synchronize()
            durations.append(region / len(batch))
            if self.guarded and not stacked.ok(outputs, signs):
                failure = self.compare_all(outputs, expected_for(signs))
                if failure:
                    return {"status": "fail", "message": f"sample {len(durations)}: {failure}{STALE_HINT}",
                            "first_call_ns": first_ns,
                            "stats": calculate(durations).as_dict()}
            if self.guarded:
                self.check_integrity()
            guard_ns += time.perf_counter_ns() - t
            wall = time.perf_counter_ns() - started
            if len(durations) % 10 == 0:
                self.progress(f"{len(durations)} samples, {wall / 1e9:.1f} s")
            if rule.done(durations, wall):
                break
        if self.guarded and guard.fingerprint(shared) != prints:
            raise Verdict("fail", "the submission modified its input tensors during the timed samples")
        return {"status": "pass", "message": "", "first_call_ns": first_ns,
                "stats": calculate(durations).as_dict(), "samples_ns": durations, "guarded": self.guarded,
                "guard_ns": guard_ns, "job_ns": time.perf_counter_ns() - job_started}

    def compare_all(self, outputs, expected) -> str:
        for i, (out, ref) in enumerate(zip(outputs, expected)):
            report = self.task.check_output(out, ref)
            if not report.ok:
                return f"input {i}: {report.message}"
        return ""

    def profile(self, job: dict) -> dict:
        import torch
        from torch.profiler import ProfilerActivity, profile
        data = self.generate(job, job["seeds"][0])
        self.kernel(clone_data(data))  # warm: compile outside the profile
        self.chores.synchronize()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.chores.gpu else [])
        with profile(activities=activities) as prof:
            with torch.cuda.nvtx.range("custom_kernel") if self.chores.gpu else _null():
                self.kernel(clone_data(data))
                self.chores.synchronize()
        sort = "self_cuda_time_total" if self.chores.gpu else "self_cpu_time_total"
        return {"status": "pass", "message": "", "report": prof.key_averages().table(sort_by=sort, row_limit=15)}


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(conn, task: str, submission_path, guarded: bool = True):
    """Entry point of the spawned process; submission_path is one path or a list of them."""
    os.dup2(2, 1)  # the submission's prints go to stderr, keeping the runner's stdout clean
    sys.stdout = sys.stderr
    try:
        from harness.device import describe
        jobs = Jobs(conn, task, submission_path, guarded)
        conn.send(("ready", describe()))
    except Verdict as exc:
        conn.send(("fatal", {"status": exc.status, "message": exc.message}))
        return
    except BaseException as exc:  # noqa: BLE001 - any failure to start is reported, not raised
        conn.send(("fatal", {"status": "error", "message": f"submission failed to load: {_explain(exc)}"}))
        return
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        token = job.pop("token", None)
        try:
            if "submission" in job:
                jobs.kernel = jobs.kernels[job.pop("submission")]
            result = getattr(jobs, job["mode"])(job)
        except Verdict as exc:
            result = {"status": exc.status, "message": exc.message}
        except BaseException as exc:  # noqa: BLE001 - the submission's exception becomes a verdict
            result = {"status": "error", "message": _explain(exc)}
        conn.send(("result", {**result, "token": token}))


def _explain(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = next((f for f in reversed(frames) if "submission" in f.filename or "/submissions/" in f.filename), None)
    at = f" (at {os.path.basename(where.filename)}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {exc}{at}".strip()
