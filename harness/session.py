"""One run of one submission in one mode: which jobs, their seeds and stop rules, and the
records each finished job becomes."""
import secrets
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from reference import get_task
from reference.cases import Case, cases, task_config

from . import results, sol
from .runner import run_jobs
from .stats import geomean
from .submission import Submission

MODES = ("test", "benchmark", "leaderboard", "profile")
IMPOSSIBLE_FRACTION = 0.9  # a mean under this share of the datasheet SOL is refused as impossible
TIMEOUT_S = {"test": 180.0, "benchmark": 180.0, "leaderboard": 300.0, "profile": 180.0}
STOP = {
    "warmup": {"max_runs": 100, "max_time_ns": 1e8},
    "benchmark": {"max_runs": 100, "max_time_ns": 10e9},
    "leaderboard_warmup": {"max_runs": 50, "max_time_ns": 5e8},
    "leaderboard": {"max_runs": 100, "max_time_ns": 30e9},
}


SECRET_BITS = 30  # keeps the paired seed inside torch.manual_seed's 64-bit range


def combine_seeds(a: int, b: int) -> int:
    """The contest's Cantor pairing of a case seed with the secret seed (folded into 63 bits)."""
    return int(a + (a + b) * (a + b + 1) // 2) % (1 << 63)


def input_seeds(task: str, seed: int) -> list[int]:
    """Seeds of the distinct inputs timed in one sample, as the contest derives them."""
    cfg = task_config(task)
    n = cfg["iterations_per_sample"]
    return [seed] if n == 1 else [seed + cfg["seed_step"] * (i + 1) for i in range(n)]


def _job(mode: str, case: Case, values: str = "contest", seeds=None, stop=None, record=True) -> dict:
    return {
        "mode": mode, "kind": case.kind, "index": case.index, "label": case.label, "spec": case.spec,
        "args": case.args, "values": values, "seeds": seeds or [case.args["seed"]], "stop": stop or {},
        "record": record, "sol_b200_us": case.sol_b200_us,
    }


def build_jobs(task: str, mode: str, shapes: str, secret_seed: int | None = None, only=None) -> list[dict]:
    """shapes='contest' uses the contest's tests/benchmarks, 'smoke' the tiny CPU shapes for both;
    `only` keeps just the cases with those indices."""
    def pick(kind):
        chosen = [c for c in cases(task, kind) if not only or c.index in only]
        if not chosen:
            raise ValueError(f"no {kind} case has index {sorted(only)}; {task} has {len(cases(task, kind))} of them")
        return chosen
    tests = pick("tests" if shapes == "contest" else "smoke") if mode == "test" else []
    benches = pick("benchmarks" if shapes == "contest" else "smoke") if mode != "test" else []
    if mode == "test":
        return [_job("test", c, values) for values in ("contest", "general") for c in tests]
    if mode == "benchmark":
        warm = _job("benchmark", benches[0], seeds=input_seeds(task, benches[0].args["seed"]), stop=STOP["warmup"],
                    record=False)
        return [warm] + [_job("benchmark", c, seeds=input_seeds(task, c.args["seed"]), stop=STOP["benchmark"])
                         for c in benches]
    if mode == "leaderboard":
        secret = secret_seed if secret_seed is not None else secrets.randbits(SECRET_BITS)
        secret_cases = [c.with_seed(combine_seeds(c.args["seed"], secret)) for c in benches]
        warm = [_job("benchmark", c, seeds=input_seeds(task, c.args["seed"]), stop=STOP["leaderboard_warmup"],
                     record=False) for c in benches]
        timed = [_job("benchmark", c, seeds=input_seeds(task, c.args["seed"]), stop=STOP["leaderboard"])
                 for c in secret_cases]
        return warm + timed
    if mode == "profile":
        return [_job("profile", c) for c in benches]
    raise ValueError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")


@dataclass
class RunSummary:
    submission: Submission
    mode: str
    shapes: str
    records: list = field(default_factory=list)
    device: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.records) and all(r["status"] == "pass" for r in self.records)

    @property
    def geomean_ns(self) -> float | None:
        timed = [r for r in self.records if r.get("stats")]
        if not timed or not self.passed:
            return None
        return geomean([r["stats"]["mean"] for r in timed])


def make_record(sub: Submission, mode: str, job: dict, result: dict, device: dict, run_id: str, calibration: dict) -> dict:
    task = get_task(sub.task)
    flops, nbytes = task.flops(**job["args"]), task.bytes_moved(**job["args"])
    peak = sol.peak_for(device.get("name"))
    record = {
        "run_id": run_id, "timestamp": results.now(), "task": sub.task, "version": sub.version,
        "submission": str(sub.path), "sha256": sub.sha256, "mode": mode, "kind": job["kind"], "index": job["index"],
        "shape": job["label"], "spec": job["spec"], "values": job["values"], "seed": job["seeds"][0],
        "n_inputs": len(job["seeds"]), "status": result.get("status"), "message": result.get("message", ""),
        "first_call_ns": result.get("first_call_ns"), "stats": result.get("stats"),
        "samples_ns": result.get("samples_ns"), "flops": flops, "bytes": nbytes,
        "sol_ns": sol.sol_ns(sub.task, flops, nbytes, peak) if peak else None,
        "sol_gpu": peak.name if peak else None,
        "measured_sol_ns": sol.measured_sol_ns(sub.task, flops, nbytes, calibration),
        "sol_b200_ns": job["sol_b200_us"] * 1e3 if job.get("sol_b200_us") else None,
        "gpu": device, "git": results.git_state(),
        "guard_ns": result.get("guard_ns"), "job_ns": result.get("job_ns"),
    }
    if "report" in result:
        record["profile"] = result["report"]
    stats = record["stats"]
    if stats and record["sol_ns"] and stats["mean"] < IMPOSSIBLE_FRACTION * record["sol_ns"]:
        record["status"] = "impossible"
        record["message"] = (f"mean {stats['mean'] / 1e3:.2f} µs is faster than this GPU's speed of light "
                             f"({record['sol_ns'] / 1e3:.2f} µs): refused as physically impossible")
    if result.get("guarded") is False:
        record["unguarded"] = True
    return record


def execute(sub: Submission, mode: str, shapes: str, timeout_s: float | None = None, record_to: Path | None = None,
            secret_seed: int | None = None, on_start=None, on_progress=None, on_record=None,
            only=None, guarded: bool = True) -> RunSummary:
    """Run every job of the mode; records are appended to `record_to` as they finish."""
    jobs = build_jobs(sub.task, mode, shapes, secret_seed, only)
    summary = RunSummary(sub, mode, shapes)
    run_id = uuid.uuid4().hex[:12]
    calibration_cache = {}

    def finished(job, outcome):
        summary.device = outcome.device or summary.device
        if not job["record"]:
            return
        name = summary.device.get("name")
        if name not in calibration_cache:
            calibration_cache[name] = sol.load_calibration(results.results_dir() / "calibration.json", name)
        rec = make_record(sub, mode, job, outcome.result, summary.device, run_id, calibration_cache[name])
        summary.records.append(rec)
        if record_to is not None and mode != "profile":
            results.append(record_to, rec)
        if on_record:
            on_record(rec)

    run_jobs(sub.task, str(sub.path), jobs, timeout_s or TIMEOUT_S[mode], on_start=on_start, on_progress=on_progress,
             on_outcome=finished, guarded=guarded)
    return summary
