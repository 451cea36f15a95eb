"""The worker process: imports one submission and runs the jobs the runner sends it.

It runs in a freshly spawned interpreter, so a submission that crashes, corrupts its CUDA
context or hangs takes only this process down. Messages to the runner are tuples:
("ready", device_info) | ("fatal", message) | ("progress", text) | ("result", dict).
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


class Jobs:
    """Holds the task, the submission and the device chores; one method per job mode."""

    def __init__(self, conn, task: str, submission_path: str):
        from reference import get_task
        from harness.device import DeviceChores
        from harness.submission import import_submission
        from pathlib import Path
        self.conn = conn
        self.task = get_task(task)
        self.kernel = import_submission(Path(submission_path)).custom_kernel
        self.chores = DeviceChores()

    def progress(self, text: str):
        self.conn.send(("progress", text))

    def generate(self, job: dict, seed: int):
        return self.task.generate_input(**{**job["args"], "seed": seed}, values=job["values"])

    def timed_first_call(self, data):
        self.chores.synchronize()
        t0 = time.perf_counter_ns()
        out = self.kernel(data)
        self.chores.synchronize()
        return out, time.perf_counter_ns() - t0

    def test(self, job: dict) -> dict:
        self.progress("generating input")
        data = self.generate(job, job["seeds"][0])
        self.progress("calling custom_kernel")
        out, first_ns = self.timed_first_call(clone_data(data))
        self.progress("checking against the reference")
        report = self.task.check(data, out)
        return {"status": "pass" if report.ok else "fail", "message": report.message, "first_call_ns": first_ns}

    def benchmark(self, job: dict) -> dict:
        from harness.device import RegionTimer
        from harness.stats import StopRule, calculate
        seeds = job["seeds"]
        self.progress(f"generating {len(seeds)} inputs")
        inputs = [self.generate(job, s) for s in seeds]
        expected = [self.task.ref_kernel(d) for d in inputs]
        self.progress("first calls and correctness check")
        outputs = [None] * len(inputs)
        outputs[0], first_ns = self.timed_first_call(clone_data(inputs[0]))
        outputs[1:] = [self.kernel(clone_data(d)) for d in inputs[1:]]
        self.chores.synchronize()
        failure = self.compare_all(outputs, expected)
        if failure:
            return {"status": "fail", "message": failure, "first_call_ns": first_ns}

        rule = StopRule(**job["stop"])
        timer = RegionTimer(self.chores.gpu)
        durations = []
        started = time.perf_counter_ns()
        while True:
            batch = [clone_data(d) for d in inputs] if job["recheck"] else inputs
            self.chores.synchronize()
            self.chores.before_sample()
            timer.start()
            outputs = [self.kernel(d) for d in batch]
            timer.stop()
            self.chores.synchronize()
            durations.append(timer.elapsed_ns() / len(batch))
            if job["recheck"]:
                failure = self.compare_all(outputs, expected)
                if failure:
                    return {"status": "fail", "message": f"sample {len(durations)}: {failure}", "first_call_ns": first_ns}
            wall = time.perf_counter_ns() - started
            if len(durations) % 10 == 0:
                self.progress(f"{len(durations)} samples, {wall / 1e9:.1f} s")
            if rule.done(durations, wall):
                break
        return {"status": "pass", "message": "", "first_call_ns": first_ns,
                "stats": calculate(durations).as_dict(), "samples_ns": durations}

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


def main(conn, task: str, submission_path: str):
    """Entry point of the spawned process."""
    os.dup2(2, 1)  # the submission's prints go to stderr, keeping the runner's stdout clean
    sys.stdout = sys.stderr
    try:
        from harness.device import describe
        jobs = Jobs(conn, task, submission_path)
        conn.send(("ready", describe()))
    except BaseException as exc:  # noqa: BLE001 - any failure to start is reported, not raised
        conn.send(("fatal", _explain(exc)))
        return
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        try:
            result = getattr(jobs, job["mode"])(job)
        except BaseException as exc:  # noqa: BLE001 - the submission's exception becomes a verdict
            result = {"status": "error", "message": _explain(exc)}
        conn.send(("result", result))


def _explain(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = next((f for f in reversed(frames) if "submission" in f.filename or "/submissions/" in f.filename), None)
    at = f" (at {os.path.basename(where.filename)}:{where.lineno})" if where else ""
    return f"{type(exc).__name__}: {exc}{at}".strip()
