"""One run of one submission in one mode: which jobs, their seeds and stop rules, and the
records each finished job becomes."""
import secrets
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from reference import get_task
from reference.cases import Case, cases

from . import results, sol
from .protocol import Job, Record, Result
from .rules import IMPOSSIBLE_FRACTION, TIMEOUT_S, task_rules
from .runner import Worker, run_jobs
from .stats import geomean
from .submission import Submission

MODES = ("test", "benchmark", "leaderboard", "profile")
SECRET_BITS = 30  # keeps the paired seed inside torch.manual_seed's 64-bit range


def combine_seeds(a: int, b: int) -> int:
    """The contest's Cantor pairing of a case seed with the secret seed (folded into 63 bits)."""
    return int(a + (a + b) * (a + b + 1) // 2) % (1 << 63)


def input_seeds(task: str, seed: int) -> list[int]:
    return task_rules(task).input_seeds(seed)


def _job(mode: str, case: Case, timing: str, values: str = "contest", stop=None, record=True) -> Job:
    seeds = input_seeds(case.task, case.args["seed"]) if mode == "benchmark" else [case.args["seed"]]
    return Job(mode, case.kind, case.index, case.label, case.spec, case.args, values, seeds, stop, record, timing,
               case.sol_b200_us)


def build_jobs(task: str, mode: str, shapes: str, secret_seed: int | None = None, only=None,
               timing: str = "arena") -> list[Job]:
    """The contest's jobs for a mode: shapes='contest' uses its tests/benchmarks, 'smoke' the tiny CPU
    shapes for both; `only` keeps just the cases with those indices; warm-ups are not recorded."""
    def pick(kind):
        chosen = [c for c in cases(task, kind) if not only or c.index in only]
        if not chosen:
            raise ValueError(f"no {kind} case has index {sorted(only)}; {task} has {len(cases(task, kind))} of them")
        return chosen
    tests = pick("tests" if shapes == "contest" else "smoke") if mode == "test" else []
    benches = pick("benchmarks" if shapes == "contest" else "smoke") if mode != "test" else []
    rules = task_rules(task).eval
    if mode == "test":
        return [_job("test", c, timing, values) for values in ("contest", "general") for c in tests]
    if mode == "benchmark":
        warm = _job("benchmark", benches[0], timing, stop=rules.warmup, record=False)
        return [warm] + [_job("benchmark", c, timing, stop=rules.benchmark) for c in benches]
    if mode == "leaderboard":
        secret = secret_seed if secret_seed is not None else secrets.randbits(SECRET_BITS)
        warmed = benches if rules.leaderboard_warms_every_shape else benches[:1]
        warm = [_job("benchmark", c, timing, stop=rules.leaderboard_warmup, record=False) for c in warmed]
        timed = [_job("benchmark", c.with_seed(combine_seeds(c.args["seed"], secret)), timing, stop=rules.leaderboard)
                 for c in benches]
        return warm + timed
    if mode == "profile":
        return [_job("profile", c, timing) for c in benches]
    raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")


@dataclass
class RunSummary:
    submission: Submission
    mode: str
    shapes: str
    timing: str = "arena"
    records: list = field(default_factory=list)
    device: dict = field(default_factory=dict)
    unstored: str = ""  # why records could not be written, if they could not

    @property
    def passed(self) -> bool:
        return bool(self.records) and all(r["status"] == "pass" for r in self.records)

    @property
    def geomean_ns(self) -> float | None:
        timed = [r for r in self.records if r.get("stats")]
        if not timed or not self.passed:
            return None
        return geomean([r["stats"]["mean"] for r in timed])


def make_record(sub: Submission, mode: str, job: Job, result: Result, device: dict, run_id: str,
                calibration: dict) -> Record:
    task = get_task(sub.task)
    flops, nbytes = task.flops(**job.args), task.bytes_moved(**job.args)
    peak = sol.peak_for(device.get("name"))
    stats = result.stats
    on_gpu = bool(device.get("cc"))  # on a CPU the calls are the region: no separate host time
    host_ns = sum(result.host_ns) / len(result.host_ns) if result.host_ns and on_gpu else None
    record = Record(
        run_id=run_id, timestamp=results.now(), task=sub.task, version=sub.version, submission=str(sub.path),
        sha256=sub.sha256, mode=mode, kind=job.kind, index=job.index, shape=job.label, spec=job.spec,
        values=job.values, seed=job.seeds[0], n_inputs=len(job.seeds), status=result.status, message=result.message,
        timing=job.timing, first_call_ns=result.first_call_ns, stats=stats, samples_ns=result.samples_ns,
        host_ns=host_ns, host_bound=host_ns > stats["mean"] if host_ns and stats else None,
        hold_timeouts=result.hold_timeouts, hold_timeout_ns=result.hold_timeout_ns,
        pending_max_ns=result.pending_max_ns, flops=flops, bytes=nbytes,
        sol_ns=sol.sol_ns(sub.task, flops, nbytes, peak) if peak else None, sol_gpu=peak.name if peak else None,
        measured_sol_ns=sol.measured_sol_ns(sub.task, flops, nbytes, calibration),
        sol_b200_ns=job.sol_b200_us * 1e3 if job.sol_b200_us else None, gpu=device, git=results.git_state(),
        guard_ns=result.guard_ns, job_ns=result.job_ns, unguarded=not result.guarded, profile=result.report)
    if stats and record.sol_ns and stats["mean"] < IMPOSSIBLE_FRACTION * record.sol_ns:
        record.status = "impossible"
        record.message = (f"mean {stats['mean'] / 1e3:.2f} µs is faster than this GPU's speed of light "
                          f"({record.sol_ns / 1e3:.2f} µs): refused as physically impossible")
    return record


def execute(sub: Submission, mode: str, shapes: str, timeout_s: float | None = None, record_to: Path | None = None,
            secret_seed: int | None = None, on_start=None, on_progress=None, on_record=None,
            only=None, guarded: bool = True, timing: str = "arena", keep_going: bool = False) -> RunSummary:
    """Run every job of the mode; records are appended to `record_to` as they finish (if that fails,
    the run goes on and `unstored` says why)."""
    jobs = build_jobs(sub.task, mode, shapes, secret_seed, only, timing)
    summary = RunSummary(sub, mode, shapes, timing)
    run_id = uuid.uuid4().hex[:12]
    calibration_cache = {}

    def finished(job, outcome):
        summary.device = outcome.device or summary.device
        if not job.record:
            return
        name = summary.device.get("name")
        if name not in calibration_cache:
            calibration_cache[name] = sol.load_calibration(results.results_dir() / "calibration.json", name)
        rec = make_record(sub, mode, job, outcome.result, summary.device, run_id, calibration_cache[name]).to_json()
        summary.records.append(rec)
        if record_to is not None and mode != "profile" and not summary.unstored:
            try:
                results.append(record_to, rec)
            except OSError as exc:
                summary.unstored = f"could not append to {record_to}: {exc.strerror or exc}; the run goes on, unrecorded"
        if on_record:
            on_record(rec)

    run_jobs(sub.task, str(sub.path), jobs, timeout_s or TIMEOUT_S[mode], on_start=on_start, on_progress=on_progress,
             on_outcome=finished, guarded=guarded, keep_going=keep_going)
    return summary


def measure_interleaved(subs: list, shapes: str, rounds: int, on_round=None, timing: str = "arena") -> dict:
    """`diff --measure`: benchmark every version `rounds` times in turn in one shared worker process,
    the order reversed every other round (A B C C B A ...) so neither drift nor going first favours a
    version; per version and shape index, the mean of each round: {version: {index: [ns, ...]}}.
    The same jobs as benchmark mode; records are not written."""
    task = subs[0].task
    jobs = build_jobs(task, "benchmark", shapes, timing=timing)
    timeout_s = TIMEOUT_S["benchmark"]
    worker = Worker(task, [str(s.path) for s in subs], timeout_s)
    if worker.fatal:
        raise RuntimeError(f"the shared worker did not start: {worker.fatal.message}")
    pooled = {s.version: {} for s in subs}
    try:
        for r in range(rounds):
            for sub in subs if r % 2 == 0 else reversed(subs):
                for job in jobs:
                    result = worker.run(replace(job, submission=str(sub.path)), timeout_s)
                    if result.status != "pass":
                        raise RuntimeError(f"{sub.version} did not pass benchmark mode in round {r + 1} "
                                           f"({job.label}): {result.status}: {result.message}")
                    if job.record:
                        pooled[sub.version].setdefault(job.index, []).append(result.stats["mean"])
                if on_round:
                    on_round(r + 1, sub.version)
    finally:
        worker.stop()
    return pooled
