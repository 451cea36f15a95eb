"""The runner's side of the worker protocol: spawn, feed jobs, survive crashes and hangs.

A worker is replaced after any case that did not pass (its CUDA context may be broken), and a
case that outlives its timeout is killed with a verdict. Each finished case is handed to the
caller at once, so nothing measured before a crash is lost.
"""
import multiprocessing
import secrets
import signal
import time
from dataclasses import dataclass, replace

from .protocol import Done, Fatal, Job, Progress, Ready, Result

EXTRA_MESSAGE_WAIT_S = 0.05  # after a result, how long to listen for messages nobody should send
STARTUP_GRACE_S = 60.0  # interpreter and torch import, on top of the case timeout (imports may compile)


@dataclass
class Outcome:
    """What came back for one job: the worker's result, or a verdict made by the runner."""

    result: Result
    device: dict


def _death_message(exitcode: int | None) -> str:
    if exitcode is None:
        return "worker vanished"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"crashed: the worker process was killed by {name}"
    return f"crashed: the worker process exited with code {exitcode} before reporting a result"


class Worker:
    def __init__(self, task: str, submission_path, timeout_s: float, guarded: bool = True):
        """submission_path: one path, or a list for a worker shared by several versions (diff --measure)."""
        from harness import worker
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=worker.main, args=(child, task, submission_path, guarded), daemon=True)
        self.process.start()
        child.close()
        self.device = {}
        self.fatal = None
        deadline = time.monotonic() + timeout_s + STARTUP_GRACE_S
        kind, payload = self._receive(deadline, on_progress=None)
        if kind == "message" and isinstance(payload, Ready) and isinstance(payload.device, dict):
            self.device = payload.device
        elif kind == "message" and isinstance(payload, Fatal) and isinstance(payload.result, Result):
            self.fatal = payload.result
            self.stop()
        else:
            status, why = {"died": ("crash", payload), "timeout": ("timeout", "no answer")}.get(
                kind, ("tampered", "an unexpected message arrived"))
            self.fatal = Result(status, f"worker did not start: {why}")
            self.stop()

    def _receive(self, deadline: float, on_progress):
        """('message', the next non-progress message), or ('timeout'|'died', text)."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout", None
            try:
                if not self.conn.poll(min(remaining, 1.0)):
                    if not self.process.is_alive() and not self.conn.poll(0):
                        self.process.join(1)
                        return "died", _death_message(self.process.exitcode)
                    continue
                message = self.conn.recv()
            except (EOFError, ConnectionError, OSError):
                self.process.join(5)
                return "died", _death_message(self.process.exitcode)
            if isinstance(message, Progress):
                if on_progress:
                    on_progress(message.text)
                continue
            return "message", message

    def run(self, job: Job, timeout_s: float, on_progress=None) -> Result:
        token = secrets.token_hex(16)
        self.conn.send(replace(job, token=token))
        kind, payload = self._receive(time.monotonic() + timeout_s, on_progress)
        if kind == "message":
            if not isinstance(payload, Done) or not isinstance(payload.result, Result) or payload.result.token != token:
                self.stop()
                return Result("tampered", "a result without this job's token arrived: something other than the "
                                          "harness wrote to the result channel")
            if self._receive(time.monotonic() + EXTRA_MESSAGE_WAIT_S, None)[0] == "message":
                self.stop()
                return Result("tampered", "more than one result arrived for one job")
            return payload.result
        self.stop()
        if kind == "timeout":
            return Result("timeout", f"timed out: no result after {timeout_s:g} s; the worker was killed")
        return Result("crash", payload)

    def stop(self):
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
            self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()


def run_jobs(task: str, submission_path: str, jobs: list[Job], timeout_s: float, on_start=None, on_progress=None,
             on_outcome=None, guarded: bool = True) -> list[Outcome]:
    """Run jobs in order, each in a healthy worker; calls on_outcome(job, Outcome) as each ends."""
    outcomes = []
    worker = None
    for job in jobs:
        if on_start:
            on_start(job)
        if worker is None:
            worker = Worker(task, submission_path, timeout_s, guarded)
            if worker.fatal:
                # Nothing can run if the file does not even import: every job gets the same verdict.
                for rest in jobs[len(outcomes):]:
                    outcome = Outcome(replace(worker.fatal), worker.device)
                    outcomes.append(outcome)
                    if on_outcome:
                        on_outcome(rest, outcome)
                return outcomes
        result = worker.run(job, timeout_s, on_progress)
        outcome = Outcome(result, worker.device)
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(job, outcome)
        if result.status != "pass":
            if worker.process.is_alive():
                worker.stop()
            worker = None
    if worker is not None:
        worker.stop()
    return outcomes
