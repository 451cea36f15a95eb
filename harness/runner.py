"""The runner's side of the worker protocol: spawn, feed jobs, survive crashes, hangs and garbage.

A worker is a fresh `python -m harness.worker` in a session of its own, dying with the runner
(parent-death signal; every live worker's process group is killed when the runner exits, on
SIGTERM or Ctrl-C too). Jobs and results travel as JSON lines on two pipes (harness.channel) and
every read has a deadline on the runner's clock, so a submission that writes garbage to its file
descriptors, or nothing at all, gets a verdict within its timeout. The worker's stdout and stderr
are drained by a thread and forwarded up to a cap, so a flood of output can neither block the
worker nor fill the runner's memory. A worker is replaced after any case that did not pass (its
CUDA context may be broken), and each finished case is handed to the caller at once, so nothing
measured before a crash is lost.
"""
import atexit
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from . import channel
from .protocol import Job, Result, result_from_wire, to_wire

EXTRA_MESSAGE_WAIT_S = 0.05  # after a result, how long to listen for messages nobody should send
STARTUP_GRACE_S = 60.0  # interpreter and torch import, on top of the case timeout (imports may compile)
OUTPUT_CAP = 1 << 20  # bytes of a worker's own output forwarded to the runner's stderr
TAIL = 2000  # characters of the worker's last output kept for crash messages
ROOT = Path(__file__).resolve().parent.parent
PR_SET_PDEATHSIG = 1
_LIVE = set()


@dataclass
class Outcome:
    """What came back for one job: the worker's result, or a verdict made by the runner."""

    result: Result
    device: dict


def _death_message(code: int | None) -> str:
    if code is None:
        return "worker vanished"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crashed: the worker process was killed by {name}"
    return f"crashed: the worker process exited with code {code} before reporting a result"


def die_with_parent(parent: int):
    """Called first thing in the worker: SIGKILL when the runner dies, however it dies (Linux); and if
    the runner is already gone, leave at once."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    if os.getppid() != parent:
        os._exit(1)


class _Output(threading.Thread):
    """Drains a worker's stdout and stderr: forwards up to OUTPUT_CAP bytes, keeps the tail."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.forwarded, self.dropped, self.tail = stream, 0, 0, b""

    def run(self):
        while chunk := self.stream.read1(1 << 16):
            self.tail = (self.tail + chunk)[-TAIL:]
            keep = chunk[:max(0, OUTPUT_CAP - self.forwarded)]
            self.forwarded += len(keep)
            self.dropped += len(chunk) - len(keep)
            if keep:
                try:
                    sys.stderr.buffer.write(keep)
                    sys.stderr.flush()
                except (OSError, ValueError, AttributeError):
                    pass


class Worker:
    def __init__(self, task: str, submission_path, timeout_s: float, guarded: bool = True):
        """submission_path: one path, or a list for a worker shared by several versions (diff --measure)."""
        paths = [submission_path] if isinstance(submission_path, str) else list(submission_path)
        job_r, self.job_w = os.pipe()
        result_r, result_w = os.pipe()
        command = [sys.executable, "-m", "harness.worker", "--task", task, "--jobs", str(job_r),
                   "--results", str(result_w), "--parent", str(os.getpid()), *([] if guarded else ["--unguarded"]),
                   *paths]
        self.process = subprocess.Popen(command, cwd=ROOT, pass_fds=(job_r, result_w), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        os.close(job_r)
        os.close(result_w)
        _LIVE.add(self)
        self.reader = channel.Reader(result_r)
        self.output = _Output(self.process.stdout)
        self.output.start()
        self.device = {}
        self.fatal = None
        kind, payload = self._receive(time.monotonic() + timeout_s + STARTUP_GRACE_S, on_progress=None)
        if kind == "ready" and isinstance(payload.get("device"), dict):
            self.device = payload["device"]
            return
        if kind == "fatal":
            try:
                self.fatal = result_from_wire(payload.get("result"))
            except ValueError:
                self.fatal = Result("tampered", "the worker's startup message was garbled")
        else:
            status, why = {"died": ("crash", payload), "timeout": ("timeout", "no answer"),
                           "garbled": ("tampered", payload)}.get(kind, ("tampered", f"an unexpected '{kind}' message"))
            self.fatal = Result(status, f"worker did not start: {why}")
        self.stop()

    def _receive(self, deadline: float, on_progress):
        """(kind, message) for the next non-progress message; ('timeout'|'died'|'garbled', text) otherwise."""
        while True:
            try:
                message = self.reader.receive(deadline)
            except channel.Closed:
                return "died", self._death()
            except channel.Garbled as exc:
                return "garbled", (f"the result channel carried something other than the harness's messages "
                                   f"({exc}): the submission wrote to a file descriptor it did not open")
            if message is None:
                return "timeout", None
            if message["kind"] == "progress":
                if on_progress:
                    on_progress(str(message.get("text", "")))
                continue
            return message["kind"], message

    def _death(self) -> str:
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        tail = self.output.tail.decode(errors="replace").strip()
        return _death_message(code) + (f"\nlast output:\n{tail}" if tail else "")

    def run(self, job: Job, timeout_s: float, on_progress=None) -> Result:
        token = secrets.token_hex(16)
        try:
            channel.send(self.job_w, "job", job=to_wire(replace(job, token=token)))
        except OSError:
            self.stop()
            return Result("crash", self._death())
        kind, payload = self._receive(time.monotonic() + timeout_s, on_progress)
        if kind == "done":
            try:
                result = result_from_wire(payload.get("result"))
            except ValueError:
                result = None
            if result is None or result.token != token:
                self.stop()
                return Result("tampered", "a result without this job's token arrived: something other than the "
                                          "harness wrote to the result channel")
            if self._receive(time.monotonic() + EXTRA_MESSAGE_WAIT_S, None)[0] not in ("timeout", "died"):
                self.stop()
                return Result("tampered", "more than one result arrived for one job")
            return result
        self.stop()
        if kind == "timeout":
            return Result("timeout", f"timed out: no result after {timeout_s:g} s; the worker was killed")
        if kind == "died":
            return Result("crash", payload)
        if kind == "garbled":
            return Result("tampered", payload)
        return Result("tampered", f"an unexpected '{kind}' message arrived on the result channel")

    def stop(self):
        """Ask the worker to leave, then kill its whole process group; close the pipes."""
        if self not in _LIVE:
            return
        _LIVE.discard(self)
        if self.process.poll() is None:
            try:
                channel.send(self.job_w, "stop")
                self.process.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        for fd in (self.job_w, self.reader.fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.output.join(5)
        if self.output.dropped:
            print(f"[nvfp4-arena: {self.output.dropped:,} more bytes of the submission's output were dropped]",
                  file=sys.stderr)


def stop_all():
    """Kill every live worker (the runner is leaving)."""
    for worker in list(_LIVE):
        worker.stop()


atexit.register(stop_all)


def run_jobs(task: str, submission_path: str, jobs: list[Job], timeout_s: float, on_start=None, on_progress=None,
             on_outcome=None, guarded: bool = True, keep_going: bool = False) -> list[Outcome]:
    """Run jobs in order, each in a healthy worker; calls on_outcome(job, Outcome) as each ends. After a
    hang or a crash, the remaining jobs are skipped unless keep_going."""
    outcomes = []
    worker = None
    stopped_by = None
    warmup_failure = None  # a warm-up is not recorded: its verdict goes to the next case that is

    def finish(job, result):
        outcome = Outcome(result, worker.device if worker else (outcomes[-1].device if outcomes else {}))
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(job, outcome)

    for n, job in enumerate(jobs):
        if stopped_by:
            finish(job, Result("skipped", f"skipped: an earlier case {stopped_by} (--keep-going runs it anyway)"))
            continue
        if warmup_failure and job.record:
            failure, warmup_failure = warmup_failure, None
            finish(job, replace(failure, message=f"in the warm-up before this case: {failure.message}"))
            if failure.status in ("timeout", "crash") and not keep_going:
                stopped_by = "hung" if failure.status == "timeout" else "crashed"
            continue
        if on_start:
            on_start(job)
        if worker is None:
            worker = Worker(task, submission_path, timeout_s, guarded)
            if worker.fatal:
                # Nothing can run if the file does not even import: every job gets the same verdict.
                for rest in jobs[n:]:
                    finish(rest, replace(worker.fatal))
                return outcomes
        result = worker.run(job, timeout_s, on_progress)
        if result.status != "pass":
            worker.stop()
        if not job.record and result.status != "pass":
            warmup_failure = result
        else:
            finish(job, result)
        if result.status != "pass":
            worker = None
            if job.record and result.status in ("timeout", "crash") and not keep_going:
                stopped_by = "hung" if result.status == "timeout" else "crashed"
    if worker is not None:
        worker.stop()
    return outcomes
