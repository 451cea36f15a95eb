"""The contest's evaluation rules and the evaluator's own in one place: the modes, the timing methods and
the default one, inputs per sample and their seeds, each evaluation file's L2 clear, sample caps and stopping
rule, and the per-mode timeouts. The tolerance (rtol, atol) is the one value kept elsewhere:
leaderboard_shapes.yaml holds it beside the shapes, and reference/checker.py, which imports nothing from
harness/, reads it from there.

Read from gpu-mode/reference-kernels `problems/nvidia/`: gemv runs `eval.py` (its clear: a 4 GiB
`randn`), gemm and dual GEMM `eval_better_bench.py`, group GEMM `eval_better_bench_grouped_gemm.py`
(both clear with a 62.5 GiB `randn`). Each calls `run_single_benchmark(test, recheck, max_repeats,
max_time_ns)` once per shape to warm up and once to time; the numbers below are those arguments.
"""
from dataclasses import dataclass, replace

from reference.cases import task_config

from .stats import calculate

RECORDED_MODES = ("test", "benchmark", "leaderboard")  # the modes whose records are stored
MODES = (*RECORDED_MODES, "profile")  # profile mode's records are shown, never stored
DEFAULT_MODES = ("test", "benchmark")  # when no mode is named: test, then benchmark if every test passes
ARENA = "arena"  # our timing: the evaluator's own clock around the calls, queued behind its "go" (harness.evaluator.clock)
CONTEST = "contest"  # the contest's own loop and L2 clear, to cross-check
TIMINGS = (ARENA, CONTEST)  # how a sample is timed
DEFAULT_TIMING = ARENA
TIMEOUT_S = {"test": 180.0, "benchmark": 180.0, "leaderboard": 300.0, "profile": 180.0}
IMPOSSIBLE_FRACTION = 0.9  # a mean under this share of the datasheet SOL is refused as impossible


def modes_of(mode: str | None) -> tuple[str, ...]:
    """The modes a run goes through: the one named, or DEFAULT_MODES in turn."""
    return (mode,) if mode else DEFAULT_MODES


@dataclass(frozen=True)
class StopRule:
    """The contest's loop: at most max_runs samples; from the third sample on, once 100 ms have
    passed, stop when the relative error of the mean is under 0.1%, the summed sample means pass
    max_time_ns, or two minutes of wall time have passed."""

    max_runs: int = 200
    max_time_ns: float = 10e9
    min_runs: int = 3
    min_wall_ns: float = 100e6
    rel_err: float = 0.001
    max_wall_ns: float = 120e9

    def done(self, durations: list[float], wall_ns: float) -> bool:
        if len(durations) >= self.max_runs:
            return True
        if len(durations) < self.min_runs or wall_ns <= self.min_wall_ns:
            return False
        s = calculate(durations)
        return (s.err / s.mean < self.rel_err if s.mean > 0 else True) or s.mean * s.runs > self.max_time_ns \
            or wall_ns > self.max_wall_ns


CPU_MAX_SAMPLES = 20  # where there is no GPU: a case's samples, whatever the contest's rule allows


def for_device(rule: StopRule, gpu: bool) -> StopRule:
    """The contest's rule on a GPU; on a CPU, whose times check a file and rank nothing, at most
    CPU_MAX_SAMPLES samples."""
    return rule if gpu else replace(rule, max_runs=min(rule.max_runs, CPU_MAX_SAMPLES))


@dataclass(frozen=True)
class EvalFile:
    """What one contest evaluation file does per shape."""

    name: str
    clear_bytes: int  # its L2 clear: a float32 randn of this size, once per sample
    warmup: StopRule  # benchmark mode warms up on the first shape with this
    benchmark: StopRule
    leaderboard_warmup: StopRule
    leaderboard_warms_every_shape: bool  # eval.py warms only the first shape
    leaderboard: StopRule


GIB = 1 << 30
EVAL_FILES = {e.name: e for e in (
    EvalFile("eval.py", 4 * GIB, StopRule(200, 1e8), StopRule(200, 10e9), StopRule(1000, 5e8), False,
             StopRule(1000, 30e9)),
    EvalFile("eval_better_bench.py", 16000 * 1024 * 1024 * 4, StopRule(200, 1e8), StopRule(200, 10e9),
             StopRule(1000, 5e8), True, StopRule(1000, 30e9)),
    EvalFile("eval_better_bench_grouped_gemm.py", 16000 * 1024 * 1024 * 4, StopRule(100, 1e8), StopRule(100, 10e9),
             StopRule(50, 5e8), True, StopRule(100, 30e9)),
)}


@dataclass(frozen=True)
class TaskRules:
    task: str
    inputs_per_sample: int
    seed_step: int
    eval: EvalFile

    def input_seeds(self, seed: int) -> list[int]:
        """Seeds of the distinct inputs timed in one sample, as the contest derives them."""
        n = self.inputs_per_sample
        return [seed] if n == 1 else [seed + self.seed_step * (i + 1) for i in range(n)]


def task_rules(task: str) -> TaskRules:
    cfg = task_config(task)
    return TaskRules(task, cfg["iterations_per_sample"], cfg["seed_step"], EVAL_FILES[cfg["eval"]])
