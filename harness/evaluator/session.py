"""One run of one submission in one mode: which jobs, their seeds and stop rules, the worker that serves
them (replaced after any job that did not pass), and the records each finished job becomes."""
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from reference import get_task
from reference.cases import Case, cases, timed_kind

from .. import results, sol, sources
from ..device import describe, has_gpu
from ..protocol import Job, Record, Result
from ..rules import DEFAULT_TIMING, IMPOSSIBLE_FRACTION, MODES, RECORDED_MODES, TIMEOUT_S, for_device, task_rules
from ..stats import geomean
from ..submission import Submission
from .evaluation import Evaluation
from .sandbox import startup_hooks
from .seeds import SeedSource
from .supervisor import Verdict

def input_seeds(task: str, seed: int) -> list[int]:
    return task_rules(task).input_seeds(seed)


def _job(mode: str, case: Case, values: str = "contest", stop=None, record=True) -> Job:
    seeds = input_seeds(case.task, case.args["seed"]) if mode == "benchmark" else [case.args["seed"]]
    return Job(mode, case.kind, case.index, case.label, case.spec, case.args, values, seeds, stop, record,
               case.sol_b200_us)


def build_jobs(task: str, mode: str, shapes: str, secret_seed: int | None = None, only=None) -> list[Job]:
    """The contest's jobs for a mode: shapes='contest' uses its tests/benchmarks, 'smoke' the tiny CPU
    shapes for both; `only` keeps just the cases with those indices; warm-ups are not recorded. Leaderboard
    seeds come from a keyed hash (harness.evaluator.seeds) under a key drawn here, or derived from
    `secret_seed` when one is given."""
    def pick(kind):
        chosen = [c for c in cases(task, kind) if not only or c.index in only]
        if not chosen:
            raise ValueError(f"no {kind} case has index {sorted(only)}; {task} has {len(cases(task, kind))} of them")
        return chosen
    tests = pick("tests" if shapes == "contest" else "smoke") if mode == "test" else []
    benches = pick(timed_kind(shapes)) if mode != "test" else []
    contest = task_rules(task).eval
    gpu = has_gpu()
    rules = replace(contest, **{name: for_device(getattr(contest, name), gpu) for name in
                                ("warmup", "benchmark", "leaderboard_warmup", "leaderboard")})
    if mode == "test":
        return [_job("test", c, values) for values in ("contest", "general") for c in tests]
    if mode == "benchmark":
        warm = _job("benchmark", benches[0], stop=rules.warmup, record=False)
        return [warm] + [_job("benchmark", c, stop=rules.benchmark) for c in benches]
    if mode == "leaderboard":
        keyed = SeedSource(None if secret_seed is None else secret_seed.to_bytes(16, "little"))
        warmed = benches if rules.leaderboard_warms_every_shape else benches[:1]
        warm = [_job("benchmark", c, stop=rules.leaderboard_warmup, record=False) for c in warmed]
        timed = [_job("benchmark", c.with_seed(keyed.seed("leaderboard", c.index, c.args["seed"])),
                      stop=rules.leaderboard) for c in benches]
        return warm + timed
    if mode == "profile":
        return [_job("profile", c) for c in benches]
    raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")


@dataclass
class RunSummary:
    submission: Submission
    mode: str
    shapes: str
    timing: str = DEFAULT_TIMING
    records: list = field(default_factory=list)
    device: dict = field(default_factory=dict)
    unstored: str = ""  # why records could not be written, if they could not
    sandbox: str = ""  # the worker's protection, as it reported before the submission was imported
    hooks: list = field(default_factory=list)  # .pth / sitecustomize code that runs in every Python process

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
                calibration: dict, sandbox: str = "", hooks: list | None = None, timing: str = DEFAULT_TIMING) -> Record:
    task = get_task(sub.task)
    flops, nbytes = task.flops(**job.args), task.bytes_moved(**job.args)
    peak = sol.peak_for(device.get("name"))
    stats = result.stats
    on_gpu = bool(device.get("cc"))  # on a CPU the calls are the region: no separate host time
    host_ns = sum(result.host_ns) / len(result.host_ns) if result.host_ns and on_gpu else None
    record = Record(
        run_id=run_id, timestamp=results.now(), task=sub.task, version=sub.version, submission=results.repo_path(sub.path),
        sha256=sub.sha256, mode=mode, kind=job.kind, index=job.index, shape=job.label, spec=job.spec,
        values=job.values, seed=job.seeds[0], n_inputs=len(job.seeds), status=result.status, message=result.message,
        timing=timing, first_call_ns=result.first_call_ns, stats=stats, samples_ns=result.samples_ns,
        host_ns=host_ns, host_bound=host_ns > stats["mean"] if host_ns and stats else None,
        hold_timeouts=result.hold_timeouts, hold_timeout_ns=result.hold_timeout_ns,
        pending_max_ns=result.pending_max_ns, flops=flops, bytes=nbytes,
        sol_ns=sol.sol_ns(sub.task, flops, nbytes, peak) if peak else None, sol_gpu=peak.name if peak else None,
        measured_sol_ns=sol.measured_sol_ns(sub.task, flops, nbytes, calibration),
        sol_b200_ns=job.sol_b200_us * 1e3 if job.sol_b200_us else None, gpu=device, git=results.git_state(),
        phases_ns=result.phases_ns, job_ns=result.job_ns, sandbox=sandbox, startup_hooks=hooks or [],
        witness=result.witness, telemetry=result.telemetry, profile=result.report, code_sha256=sub.code_sha256,
        clock=result.clock, worker_stats=result.worker_stats)
    if stats and record.status == "pass":
        limit_ns = record.sol_ns or sol.sol_ns(sub.task, flops, nbytes, sol.bound_for(device.get("name"), on_gpu))
        if stats["mean"] < IMPOSSIBLE_FRACTION * limit_ns:
            record.status = "impossible"
            what = "this GPU's speed of light" if record.sol_ns else "what any chip could do (no datasheet is known here)"
            record.message = (f"mean {stats['mean'] / 1e3:.2f} µs is faster than {what} ({limit_ns / 1e3:.3f} µs): "
                              f"refused as physically impossible")
    return record


def run_job(evaluation: Evaluation, job: Job) -> Result:
    """One job on a live evaluation; a Verdict raised on the way becomes its result, and so does any other
    exception (an error of the evaluator's own, named as such): every job ends in a record."""
    try:
        return getattr(evaluation, job.mode)(job)
    except Verdict as found:
        return Result(found.status, found.message)
    except Exception as exc:  # noqa: BLE001 - a job that broke the evaluator still gets its record
        return Result("error", f"the evaluator failed on this job ({type(exc).__name__}: {exc}); the worker was "
                               f"replaced")


def start_evaluation(task: str, path: str, timeout_s: float, timing: str, confined: bool, source: str | None = None,
                     load: bool = True):
    """(Evaluation, None), or (None, Result) when the worker could not start or the file did not import (load: import
    it now, else the caller's `load_evaluation`)."""
    try:
        return Evaluation(task, path, timeout_s, timing, confined, source, load), None
    except Verdict as found:
        return None, Result(found.status, found.message)


def load_evaluation(evaluation) -> Result | None:
    """The file imported into a started evaluation's worker; None, or the Result when it did not import."""
    try:
        evaluation.load()
        return None
    except Verdict as found:
        return Result(found.status, found.message)


def run_jobs(task: str, path: str, jobs: list, timeout_s: float, on_start=None, on_outcome=None,
             timing: str = DEFAULT_TIMING, confined: bool = True, keep_going: bool = False,
             source: str | None = None) -> None:
    """Run jobs in order, each in a healthy worker (replaced after any job that did not pass); calls
    on_outcome(job, result, sandbox) as each ends. After
    a hang or a crash the remaining jobs are skipped unless keep_going; a failing warm-up hands its verdict to the
    next recorded job."""
    evaluation, stopped_by, warmup_failure = None, None, None
    last = {"sandbox": ""}

    def finish(job, result):
        if evaluation is not None:
            last.update(sandbox=evaluation.sandbox)
        on_outcome(job, result, last["sandbox"])

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
        if evaluation is None:
            evaluation, fatal = start_evaluation(task, path, timeout_s, timing, confined, source)
            if fatal:  # nothing can run if the file does not even import: every job gets the same verdict
                for rest in jobs[n:]:
                    finish(rest, replace(fatal))
                return
        result = run_job(evaluation, job)
        if not job.record and result.status != "pass":
            warmup_failure = result
        else:
            finish(job, result)
        if result.status != "pass":
            evaluation.close()
            evaluation = None
            if job.record and result.status in ("timeout", "crash") and not keep_going:
                stopped_by = "hung" if result.status == "timeout" else "crashed"
    if evaluation is not None:
        evaluation.close()


def execute(sub: Submission, mode: str, shapes: str, timeout_s: float | None = None, record_to: Path | None = None,
            secret_seed: int | None = None, on_start=None, on_record=None, only=None, confined: bool = True,
            timing: str = DEFAULT_TIMING, keep_going: bool = False) -> RunSummary:
    """Run every job of the mode; records are appended to `record_to` as they finish (if that fails,
    the run goes on and `unstored` says why)."""
    jobs = build_jobs(sub.task, mode, shapes, secret_seed, only)
    summary = RunSummary(sub, mode, shapes, timing, device=describe(), hooks=startup_hooks())  # the evaluator's view
    run_id = uuid.uuid4().hex[:12]
    calibration = sol.load_calibration(results.results_dir() / "calibration.json", summary.device.get("name"))
    if record_to is not None and mode != "profile":
        sources.keep(sub.path, sub.sha256)

    def finished(job, result, sandbox):
        summary.sandbox = sandbox or summary.sandbox
        if not job.record:
            return
        rec = make_record(sub, mode, job, result, summary.device, run_id, calibration, summary.sandbox,
                          summary.hooks, timing).to_json()
        summary.records.append(rec)
        if record_to is not None and mode in RECORDED_MODES and not summary.unstored:
            try:
                results.append(record_to, rec)
            except OSError as exc:
                summary.unstored = f"could not append to {record_to}: {exc.strerror or exc}; the run goes on, unrecorded"
        if on_record:
            on_record(rec)

    run_jobs(sub.task, str(sub.path), jobs, timeout_s or TIMEOUT_S[mode], on_start=on_start, on_outcome=finished,
             timing=timing, confined=confined, keep_going=keep_going, source=sub.text)
    return summary


def measure_interleaved(subs: list, shapes: str, rounds: int, on_round=None, timing: str = DEFAULT_TIMING,
                        on_fail=None) -> dict:
    """`diff --measure`: benchmark every version `rounds` times in turn, each in a worker of its own started
    before the first round (one file cannot reach another's kernel) and stopped (SIGSTOP) outside its turns, so
    that it takes no CPU from the version being timed; the order reversed every other round (A B C C B A ...) so
    neither drift nor going first favours a version; per version and shape index, the mean of each round:
    {version: {index: [ns, ...]}}. The same jobs as benchmark mode; records are not written.
    A version whose worker does not start or that fails a round is a RuntimeError, or with on_fail given,
    on_fail(version, why) and the rounds go on without it (it is left out of the result)."""
    task = subs[0].task
    jobs = build_jobs(task, "benchmark", shapes)
    timeout_s = TIMEOUT_S["benchmark"]
    evaluations = {}

    def failed(version: str, why: str):
        if on_fail is None:
            raise RuntimeError(f"{version} {why}")
        on_fail(version, why)

    try:
        for sub in subs:  # every evaluation calibrated before any file is imported: a file's GPU work that runs on
            # (a frozen worker's kernels are not stopped) lands in no other version's fixed cost
            evaluation, fatal = start_evaluation(task, str(sub.path), timeout_s, timing, True, sub.text, load=False)
            if fatal:
                failed(sub.version, f"did not start: {fatal.message}")
                continue
            evaluations[sub.version] = evaluation
        for sub in subs:
            evaluation = evaluations.get(sub.version)
            if evaluation is None:
                continue
            fatal = load_evaluation(evaluation)
            if fatal:
                del evaluations[sub.version]
                failed(sub.version, f"did not start: {fatal.message}")
                continue
            evaluation.worker.freeze(True)
        pooled = {version: {} for version in evaluations}
        for r in range(rounds):
            for sub in subs if r % 2 == 0 else reversed(subs):
                evaluation = evaluations.get(sub.version)
                if evaluation is None:
                    continue
                evaluation.worker.freeze(False)
                for job in jobs:
                    result = run_job(evaluation, job)
                    if result.status != "pass":
                        evaluations.pop(sub.version).close()
                        del pooled[sub.version]
                        failed(sub.version, f"did not pass benchmark mode in round {r + 1} ({job.label}): "
                                            f"{result.status}: {result.message}")
                        break
                    if job.record:
                        pooled[sub.version].setdefault(job.index, []).append(result.stats["mean"])
                else:
                    evaluation.worker.freeze(True)
                if on_round:
                    on_round(r + 1, sub.version)
    finally:
        for evaluation in evaluations.values():
            evaluation.worker.freeze(False)
            evaluation.close()
    return pooled
