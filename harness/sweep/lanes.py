"""Sweeps: many (task, version) runs spread over lanes, one lane per GPU (or CPU slots on a machine
without one), with a shared queue and one driver that alone appends records to results/.

Each job runs as `run.py --task T --submission vN --mode M --json --no-record` in a process of
its own, pinned to its lane's GPU with CUDA_VISIBLE_DEVICES; its records come back as JSON. A job
whose process gave no verdict (killed, past its time limit, no JSON) or whose worker crashed is
*lost*, not failed: it goes back on the queue for another lane, MAX_ATTEMPTS tries in all, and a
lane that loses RETIRE_AFTER jobs in a row is retired (never the last one). The local lanes and
the Ray backend (harness.sweep.ray_backend) both yield the same events, which `drive` turns into records.
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty, Queue

from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from .. import device, results
from ..paths import ROOT
from ..protocol import GPU_SKIP, brief, needs_a_gpu
from ..rules import DEFAULT_TIMING
from ..views.lineage import unmeasured
from ..views.lineage import versions as lineage_versions

MAX_ATTEMPTS = 2
RETIRE_AFTER = 2
LANE_ENV = "NVFP4_ARENA_LANE"  # every job's process learns its lane's name from this variable
JOB_TIMEOUT_S = 3600.0
RANGE = re.compile(r"^(v\d+\w*)\.\.(v\d+\w*)$")


class SweepError(ValueError):
    """A sweep that cannot start as asked; the message is for the user."""


@dataclass
class SweepJob:
    task: str
    version: str  # a lineage version (vN) or a path, as run.py's --submission takes it
    order: int = 0  # place in the sweep, for the summary table
    attempts: int = 0
    lost_on: list = field(default_factory=list)  # lanes where an attempt was lost

    @property
    def label(self) -> str:
        return f"{self.task} {Path(self.version).stem}"


@dataclass
class Lane:
    name: str  # gpu0, gpu1, ... or cpu0, cpu1, ...
    env: dict  # set on top of the driver's environment for this lane's processes


@dataclass
class Options:
    """How every job of a sweep runs."""

    mode: str = "benchmark"  # a mode whose records are stored (rules.RECORDED_MODES), or auto: run.py's default
    shapes: str = "auto"
    timing: str = DEFAULT_TIMING
    case_timeout_s: float | None = None  # run.py --timeout: one case's limit
    job_timeout_s: float = JOB_TIMEOUT_S  # the whole run.py process's limit

    def command(self, job: SweepJob, python: str = sys.executable) -> list[str]:
        argv = [python, str(ROOT / "run.py"), "--task", job.task, "--submission", job.version,
                "--shapes", self.shapes, "--timing", self.timing, "--json", "--no-record"]
        if self.mode != "auto":
            argv += ["--mode", self.mode]
        if self.case_timeout_s:
            argv += ["--timeout", str(self.case_timeout_s)]
        return argv


@dataclass
class Attempt:
    """One try of one job on one lane: pass, fail (the submission's verdict), skipped (a GPU-only file on a
    machine without one) or lost (no verdict)."""

    job: SweepJob
    lane: str
    status: str
    records: list = field(default_factory=list)
    geomean_ns: float | None = None
    wall_s: float = 0.0
    message: str = ""
    number: int = 1
    final: bool = True  # False when the job goes back on the queue

    @property
    def lost(self) -> bool:
        return self.status == "lost"


@dataclass
class Started:
    lane: str
    job: SweepJob


@dataclass
class Finished:
    attempt: Attempt
    slot: str | None = None  # the view's row the attempt ran in, when not its lane's (Ray)


@dataclass
class Progress:
    lane: str
    text: str


@dataclass
class Retired:
    lane: str
    why: str


def parse_versions(task: str, spec: str, missing_in: tuple | None = None) -> list[str]:
    """'all', 'v0..v26', 'v3,v5,v9', paths of submission files, or a mix ('v0..v3,v7,my_kernel.py') -> the
    versions and files, in order, once each. 'missing': the versions without a complete run in the scope
    missing_in = (gpu, timing, kind) (harness.views.lineage.unmeasured), possibly none."""
    known = [v.name for v in lineage_versions(task)]
    if not known:
        raise SweepError(f"{task} has no lineage versions under submissions/{task}/.")

    def check(name: str) -> str:
        if name not in known:
            raise SweepError(f"{task} has no version {name}; its versions: {', '.join(known)}.")
        return name
    chosen, items = [], [part.strip() for part in spec.split(",")]
    for item in items:
        if item == "all":
            chosen += known
        elif item == "missing":
            if missing_in is None:
                raise SweepError("'missing' picks the versions without a complete benchmark run on this GPU: it "
                                 "needs --mode benchmark.")
            chosen += unmeasured(task, *missing_in)
        elif m := RANGE.match(item):
            lo, hi = known.index(check(m.group(1))), known.index(check(m.group(2)))
            if lo > hi:
                raise SweepError(f"{item}: {m.group(1)} comes after {m.group(2)} in the {task} lineage.")
            chosen += known[lo:hi + 1]
        elif item.endswith(".py"):
            if not Path(item).is_file():
                raise SweepError(f"{item}: no such file.")
            chosen.append(str(Path(item).resolve()))
        elif item:
            chosen.append(check(item))
    if not chosen and "missing" not in items:
        raise SweepError(f"no versions in {spec!r}; give e.g. all, v0..v3, v3,v5 or missing.")
    return list(dict.fromkeys(chosen))


def make_lanes(gpus: str | None, cpu_lanes: int | None, gpu_count: int, visible: str | None) -> list[Lane]:
    """One lane per chosen GPU (gpus: None or 'all', or '0,1' as numbered here), or `cpu_lanes`
    lanes without a GPU. `visible`: the driver's own CUDA_VISIBLE_DEVICES, which lane GPUs index."""
    if cpu_lanes is not None:
        if gpus is not None:
            raise SweepError("give either --gpus (GPU lanes) or --lanes (lanes without a GPU), not both.")
        return [Lane(f"cpu{i}", {LANE_ENV: f"cpu{i}"}) for i in range(cpu_lanes)]
    if gpu_count == 0:
        if gpus is not None:
            raise SweepError("--gpus: there is no GPU here; --lanes N runs N lanes on the CPU.")
        return [Lane("cpu0", {LANE_ENV: "cpu0"})]
    if gpus in (None, "all"):
        chosen = list(range(gpu_count))
    else:
        try:
            chosen = list(dict.fromkeys(int(g) for g in gpus.split(",") if g.strip()))
        except ValueError:
            raise SweepError(f"--gpus {gpus}: give all, or GPU numbers such as 0,1.") from None
        missing = [g for g in chosen if not 0 <= g < gpu_count]
        if missing or not chosen:
            raise SweepError(f"--gpus {gpus}: this machine has {gpu_count} GPU(s), numbered 0..{gpu_count - 1}.")
    ids = [v.strip() for v in visible.split(",")] if visible else [str(g) for g in range(gpu_count)]
    return [Lane(f"gpu{g}", {"CUDA_VISIBLE_DEVICES": ids[g], LANE_ENV: f"gpu{g}"}) for g in chosen]


def parse_summaries(stdout: str) -> list | None:
    """run.py --json's list of run summaries, found after anything else the process printed."""
    starts = [m.start() for m in re.finditer(r"^\[$", stdout, re.MULTILINE)]
    for start in reversed(starts):
        try:
            data = json.loads(stdout[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(data, list) and all(isinstance(s, dict) and "records" in s for s in data):
            return data
    return None


def refusal(stdout: str) -> str | None:
    """run.py --json's {"error": ...}: why it ran nothing (a file that does not parse, a name that is no file)."""
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError:
        return None
    return data["error"] if isinstance(data, dict) and isinstance(data.get("error"), str) else None


def judge(job: SweepJob, lane: str, returncode: int, stdout: str, stderr: str, wall_s: float) -> Attempt:
    """The verdict of one finished run.py process."""
    attempt = Attempt(job, lane, "lost", wall_s=wall_s, number=job.attempts)
    summaries = parse_summaries(stdout)
    if returncode < 0:
        try:
            attempt.message = f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            attempt.message = f"killed by signal {-returncode}"
        return attempt
    refused = refusal(stdout)
    if summaries is None and refused and returncode in (1, 2):  # run.py's answer about the file: a verdict, not a loss
        attempt.status, attempt.message = "fail", refused
        return attempt
    if summaries is None:
        said = [line for line in stderr.strip().splitlines() if line.strip()]
        attempt.message = f"exit code {returncode} without a result" + (f": {said[-1].strip()}" if said else "")
        return attempt
    attempt.records = [r for s in summaries for r in s["records"]]
    crashed = next((r for r in attempt.records if r["status"] == "crash"), None)
    attempt.geomean_ns = next((s["geomean_ns"] for s in reversed(summaries) if s.get("geomean_ns")), None)
    if crashed:
        attempt.message = f"its worker crashed: {brief(crashed['message'])}"
    elif returncode == 0 and all(s["passed"] for s in summaries):
        attempt.status = "pass"
    elif attempt.records and all(needs_a_gpu(r) for r in attempt.records if r["status"] != "pass"):
        attempt.status, attempt.message = "skipped", f"skipped: {GPU_SKIP}"
    else:
        attempt.status = "fail"
        bad = next((r for r in attempt.records if r["status"] != "pass"), None)
        attempt.message = f"{bad['status']}: {brief(bad['message'])}" if bad else f"exit code {returncode}"
    return attempt


def record_line(line: str) -> str | None:
    """run.py's line for one finished case ('  smoke 0 m=128 ... (contest): pass 750.05 µs'), or None."""
    return line.strip() if line.startswith("  ") and "): " in line else None


def run_attempt(job: SweepJob, lane: str, env: dict, options: Options, on_line=None, on_spawn=None) -> Attempt:
    """Run one job's run.py process to its end (or its time limit) and judge it."""
    started = time.monotonic()
    proc = subprocess.Popen(options.command(job), cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    if on_spawn:
        on_spawn(proc)
    said = []

    def read_stderr():
        for line in proc.stderr:
            said.append(line)
            if on_line and (shown := record_line(line)):
                on_line(shown)
    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    expired = threading.Event()

    def expire():
        expired.set()
        kill(proc)
    timer = threading.Timer(options.job_timeout_s, expire)
    timer.start()
    try:
        stdout = proc.stdout.read()
        proc.wait()
        reader.join()
    finally:
        timer.cancel()
    wall_s = time.monotonic() - started
    if expired.is_set():
        return Attempt(job, lane, "lost", wall_s=wall_s, number=job.attempts,
                       message=f"no result after {options.job_timeout_s:g} s: killed")
    return judge(job, lane, proc.returncode, stdout, "".join(said), wall_s)


def kill(proc: subprocess.Popen) -> None:
    """End a job's process and everything it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class JobQueue:
    """Jobs waiting for a lane. A lost job comes back first, for a lane it was not lost on (any
    lane once every lane still working has lost it)."""

    def __init__(self, jobs: list[SweepJob], lanes: list[str]):
        self._waiting = deque(jobs)
        self._running = 0
        self._alive = set(lanes)
        self._stopped = False
        self._cv = threading.Condition()

    def take(self, lane: str) -> SweepJob | None:
        """The next job for this lane, waiting while others may still hand one back; None: no more."""
        with self._cv:
            while not self._stopped and lane in self._alive:
                job = next((j for j in self._waiting if lane not in j.lost_on or self._alive <= set(j.lost_on)), None)
                if job is not None:
                    self._waiting.remove(job)
                    self._running += 1
                    job.attempts += 1
                    return job
                if not self._waiting and not self._running:
                    return None
                self._cv.wait()
            return None

    def settle(self, attempt: Attempt) -> None:
        """A lane is done with its job: a lost one with tries left goes back on the queue."""
        with self._cv:
            self._running -= 1
            job = attempt.job
            if attempt.lost and job.attempts < MAX_ATTEMPTS:
                job.lost_on.append(attempt.lane)
                self._waiting.appendleft(job)
                attempt.final = False
            self._cv.notify_all()

    def retire(self, lane: str) -> bool:
        """Take a lane out of the sweep, unless it is the last one working."""
        with self._cv:
            if self._alive == {lane}:
                return False
            self._alive.discard(lane)
            self._cv.notify_all()
            return True

    def stop(self) -> None:
        """No lane takes another job."""
        with self._cv:
            self._stopped = True
            self._cv.notify_all()


def local_events(jobs: list[SweepJob], lanes: list[Lane], options: Options):
    """Run the jobs on local lanes, one thread and one process at a time per lane; yields events."""
    queue = JobQueue(jobs, [lane.name for lane in lanes])
    events = Queue()
    running = {}

    def work(lane: Lane):
        lost_in_row = 0
        while (job := queue.take(lane.name)) is not None:
            events.put(Started(lane.name, job))
            try:
                attempt = run_attempt(job, lane.name, lane.env, options,
                                      on_line=lambda text: events.put(Progress(lane.name, text)),
                                      on_spawn=lambda proc: running.__setitem__(lane.name, proc))
            except OSError as exc:  # the process could not even start here
                attempt = Attempt(job, lane.name, "lost", number=job.attempts, message=f"could not start: {exc}")
            running.pop(lane.name, None)
            queue.settle(attempt)
            events.put(Finished(attempt))
            lost_in_row = lost_in_row + 1 if attempt.lost else 0
            if lost_in_row >= RETIRE_AFTER and queue.retire(lane.name):
                events.put(Retired(lane.name, f"lost {lost_in_row} jobs in a row"))
                return

    threads = [threading.Thread(target=work, args=(lane,), daemon=True, name=lane.name) for lane in lanes]
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads) or not events.empty():
            try:
                yield events.get(timeout=0.2)
            except Empty:
                continue
    finally:  # interrupted (or done): no new job starts, and running ones are killed
        queue.stop()
        for proc in list(running.values()):
            kill(proc)


def backend(jobs: list[SweepJob], options: Options, gpus: str | None, cpu_lanes: int | None,
            ray_address: str | None) -> tuple[list[Lane], Iterator]:
    """Where the jobs run and the events they yield: on the Ray cluster at `ray_address` (no local lanes), or
    on this machine's lanes (make_lanes: the GPUs chosen, or `cpu_lanes` lanes without one)."""
    if ray_address:
        if gpus or cpu_lanes:
            raise SweepError("--ray places jobs on the cluster's GPUs: drop --gpus and --lanes.")
        from .ray_backend import ray_events
        return [], ray_events(jobs, ray_address, options)
    import torch
    count = torch.cuda.device_count() if device.has_gpu() else 0
    lanes = make_lanes(gpus, cpu_lanes, count, os.environ.get("CUDA_VISIBLE_DEVICES"))
    return lanes, local_events(jobs, lanes, options)


@dataclass
class SweepResult:
    outcomes: list = field(default_factory=list)  # the final Attempt of every job, in the order they ended
    attempts: int = 0  # every try, lost ones included
    retired: list = field(default_factory=list)  # Retired events
    wall_s: float = 0.0
    stopped: bool = False  # ended by a signal before every job had run

    @property
    def passed(self) -> bool:
        return not self.stopped and bool(self.outcomes) and all(a.status in ("pass", "skipped") for a in self.outcomes)

    def jobs(self) -> list[dict]:
        """Per job in queue order: status, geomean, lane, attempts, wall time, records (docs/json.md)."""
        return [{"task": a.job.task, "version": Path(a.job.version).stem, "status": a.status,
                 "geomean_ns": a.geomean_ns, "lane": a.lane, "attempts": a.number, "wall_s": a.wall_s,
                 "records": len(a.records), "message": a.message}
                for a in sorted(self.outcomes, key=lambda a: a.job.order)]

    def rows(self) -> list[dict]:
        """The summary table: the jobs under the table's headers, geomean in µs, wall time to a tenth of a second."""
        return [{**{k: j[k] for k in ("task", "version", "status")},
                 "geomean µs": j["geomean_ns"] / 1e3 if j["geomean_ns"] else None, "lane": j["lane"],
                 "attempts": j["attempts"], "wall s": round(j["wall_s"], 1), "records": j["records"],
                 "message": j["message"]} for j in self.jobs()]

    def as_json(self) -> dict:
        return {"passed": self.passed, "stopped": self.stopped, "wall_s": self.wall_s, "attempts": self.attempts,
                "jobs_wall_s": sum(a.wall_s for a in self.outcomes),
                "retired": [{"lane": r.lane, "why": r.why} for r in self.retired], "jobs": self.jobs()}


def append_records(attempt: Attempt, device_name: str) -> None:
    """Each record to results/<task>.jsonl of its device's records folder, one line at a time. A
    record whose worker never started names no device: it goes with the others of its run, or else
    where this driver's own runs go (`device_name`)."""
    named = [(r.get("gpu") or {}).get("name") for r in attempt.records]
    fallback = next((n for n in named if n), device_name)
    for rec, name in zip(attempt.records, named):
        results.append(results.records_dir(name or fallback) / f"{rec['task']}.jsonl", rec)


def drive(events, device_name: str, on_event=None, into: SweepResult | None = None) -> SweepResult:
    """Consume a backend's events: the final attempt of each job has its records appended here, by
    this process alone (`device_name`: this machine's device, see append_records). The result fills in as jobs
    end (`into`, when given), so that a caller stopped midway still holds the jobs that ended."""
    started = time.monotonic()
    result = into or SweepResult()
    try:
        for event in events:
            if isinstance(event, Finished):
                result.attempts += 1
                if event.attempt.final:
                    append_records(event.attempt, device_name)
                    result.outcomes.append(event.attempt)
            elif isinstance(event, Retired):
                result.retired.append(event)
            if on_event:
                on_event(event)
    finally:  # on an interrupt too: the backend stops its jobs now
        events.close()
        result.wall_s = time.monotonic() - started
    return result


def make_jobs(pairs) -> list[SweepJob]:
    """SweepJobs from (task, version) pairs, numbered in queue order."""
    return [SweepJob(task, version, order=i) for i, (task, version) in enumerate(pairs)]


class SweepView:
    """What a person watches: a line per finished job, and on a terminal a live table of the lanes
    (current job, elapsed, last case) above a bar of jobs done; elsewhere, plain lines only."""

    def __init__(self, console, lanes: list[str], total: int):
        self.console = console
        self.lanes = lanes
        self.rows = {lane: ["idle", None, ""] for lane in lanes}  # job, started at, last case
        self.bar = RichProgress(TextColumn("jobs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                console=console)
        self.bar_task = self.bar.add_task("jobs", total=total)
        self.live = Live(console=console, get_renderable=self.render, refresh_per_second=4) \
            if console.is_terminal else None

    def __enter__(self):
        if self.live:
            self.live.start()
        return self

    def __exit__(self, *exc):
        if self.live:
            self.live.stop()

    def render(self):
        table = Table(title_justify="left", box=None)
        for col in ("lane", "job", "elapsed s", "last case"):
            table.add_column(col, justify="right" if col == "elapsed s" else "left")
        for lane, (job, since, last) in self.rows.items():
            elapsed = f"{time.monotonic() - since:,.0f}" if since else ""
            table.add_row(lane, job, elapsed, last)
        return Group(table, self.bar)

    def say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    def __call__(self, event) -> None:
        if isinstance(event, Started):
            self.rows[event.lane] = [f"{event.job.label} (try {event.job.attempts})", time.monotonic(), ""]
            if not self.live:
                self.say(f"[{event.lane}] {event.job.label}: started (try {event.job.attempts})")
        elif isinstance(event, Progress):
            self.rows[event.lane][2] = event.text
        elif isinstance(event, Finished):
            a = event.attempt
            slot = event.slot or a.lane
            if slot in self.lanes:
                self.rows[slot] = ["idle", None, f"{a.job.label}: {a.status}"]
            else:
                self.rows.pop(slot, None)
            shown = f", geomean {a.geomean_ns / 1e3:,.2f} µs" if a.geomean_ns else ""
            why = f": {a.message.strip().splitlines()[0]}" if a.message.strip() else ""
            again = "; it goes back on the queue" if not a.final else ""
            self.say(f"[{a.lane}] {a.job.label}: {a.status}{shown} ({a.wall_s:,.1f} s){why}{again}")
            if a.final:
                self.bar.advance(self.bar_task)
        elif isinstance(event, Retired):
            self.rows[event.lane] = [f"retired: {event.why}", None, ""]
            self.say(f"[{event.lane}] retired: {event.why}; its jobs go to the other lanes")
