"""What the evaluator's jobs produce and what goes into results/: jobs, results and records, as dataclasses.
SCHEMA is written into every record; records without it are schema 1 (before the timing method was recorded),
and their method reads as "legacy". Schema 3 records were judged by the evaluator process (witness and sandbox);
schema 4 records say where the evaluator's time went (phases_ns), schema 5 the GPU's state over the samples
(telemetry), schema 6 the code the run measured (code_sha256); from schema 7 the arena's worker refilled the L2 after
the hold, which raised gemv's arena numbers 2-3% on an H100. From schema 8 a GPU's arena number is the evaluator's
own clock (harness.evaluator.clock), with the worker's events beside it (worker_stats) and the clock's calibration
(clock); an arena record of an older schema reads as the method "arena-worker", the worker's events."""
from dataclasses import asdict, dataclass, field

from .rules import ARENA, TIMINGS, StopRule

NEEDS_GPU = "this file needs a CUDA GPU"  # how a failure message starts where a GPU-only file met a machine without one
TRACEBACK_MARK = "--- traceback ---"  # a failure message's first paragraph is for the user, the traceback after it


def brief(message: str) -> str:
    """A failure message without its traceback."""
    return message.split(f"\n{TRACEBACK_MARK}\n")[0]


GPU_SKIP = "needs a GPU"  # why the sweep and `list` call a GPU-only file's run on a machine without a GPU skipped


def needs_a_gpu(record: dict) -> bool:
    """A failed record that is the worker's word that its file needs a CUDA GPU, believed only where the evaluator
    ran without one (the record names no compute capability): on a GPU, a file that says it needs one has failed."""
    return (record.get("status") not in ("pass", "skipped") and NEEDS_GPU in (record.get("message") or "")
            and not (record.get("gpu") or {}).get("cc"))


SCHEMA = 8
ARENA_REFILL_SCHEMA = 7  # the first schema whose worker-timed arena refilled the L2 (older: gemv read 2-3% fast)
ARENA_CLOCK_SCHEMA = 8  # the first schema whose arena number is the evaluator's clock
LEGACY_TIMING = "legacy"
WORKER_ARENA_TIMING = "arena-worker"  # an arena record of an older schema: timed by the worker's events
RECORD_TIMINGS = (*TIMINGS, WORKER_ARENA_TIMING, LEGACY_TIMING)  # what a stored record's timing reads as (timing_of)


@dataclass
class Job:
    """One case in one mode, as the evaluator runs it."""

    mode: str  # test | benchmark | profile
    kind: str  # tests | benchmarks | smoke
    index: int
    label: str
    spec: str
    args: dict
    values: str = "contest"  # contest | general
    seeds: list = field(default_factory=list)
    stop: StopRule | None = None
    record: bool = True
    sol_b200_us: float | None = None


@dataclass
class Result:
    """What the evaluator decided for one job."""

    status: str
    message: str = ""
    first_call_ns: float | None = None
    stats: dict | None = None
    samples_ns: list | None = None
    host_ns: list | None = None  # per sample: host time to queue one call
    hold_timeouts: int = 0  # samples whose calls were not all queued when "go" was said (the host was seen)
    hold_timeout_ns: float | None = None
    pending_max_ns: float | None = None  # the most a sample's device stayed busy after its end event
    phases_ns: dict | None = None  # where the job's time went (Phases), and the worker's start-up if it began with one
    job_ns: float | None = None
    report: str | None = None
    witness: dict | None = None  # median excess of the evaluator's clock over the reported calls, and its margin
    telemetry: dict | None = None  # the GPU's clocks, power, temperature and throttling over the samples
    clock: dict | None = None  # the evaluator's clock (GPU arena): its calibration, uncertainty, disturbed samples
    worker_stats: dict | None = None  # the worker's own events over the kept samples, beside the number

@dataclass
class Record:
    """One line of results/<task>.jsonl."""

    run_id: str
    timestamp: str
    task: str
    version: str  # the try's name: a lineage version vN, the file's stem, or the label given with --name
    submission: str
    sha256: str  # of the file's content
    mode: str
    kind: str
    index: int
    shape: str
    spec: str
    values: str
    seed: int
    n_inputs: int
    status: str
    message: str
    timing: str
    first_call_ns: float | None
    stats: dict | None
    samples_ns: list | None
    host_ns: float | None  # mean host time to queue one call
    host_bound: bool | None  # host time per call above GPU time per call
    hold_timeouts: int
    hold_timeout_ns: float | None
    pending_max_ns: float | None
    flops: float
    bytes: float
    sol_ns: float | None
    sol_gpu: str | None
    measured_sol_ns: float | None
    sol_b200_ns: float | None
    gpu: dict
    git: dict
    phases_ns: dict | None
    job_ns: float | None
    sandbox: str = ""
    startup_hooks: list = field(default_factory=list)
    witness: dict | None = None
    telemetry: dict | None = None
    profile: str | None = None
    code_sha256: str | None = None  # of the content less its module docstring: with version, what identifies a try
    # (harness.views.tries); None in records older than schema 6 whose content was not found again
    clock: dict | None = None
    worker_stats: dict | None = None
    schema: int = SCHEMA

    def to_json(self) -> dict:
        return asdict(self)


def timing_of(record: dict) -> str:
    """The timing method of a stored record: records older than schema 2 are 'legacy', arena records older than
    ARENA_CLOCK_SCHEMA 'arena-worker' (their number is the worker's events, not the evaluator's clock)."""
    timing = record.get("timing", LEGACY_TIMING)
    if timing == ARENA and (record.get("schema") or 1) < ARENA_CLOCK_SCHEMA:
        return WORKER_ARENA_TIMING
    return timing
