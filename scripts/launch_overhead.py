"""Where one custom_kernel call's time goes: host time per call against GPU time per call, for benchmark shapes.

Usage (on a GPU): python scripts/launch_overhead.py --task gemm --submission v13 [--index 2] [--json FILE]

Each shape is timed on the contest's own set of distinct inputs (one per call of a sample), so a submission
that caches per data pointer pays what it pays in the benchmark. Per shape it prints:
- host µs per call: the calls queued back to back with no synchronisation;
- of which Python: the same loop with the submission's compiled module (`_module`) swapped for a stub
  whose every function returns at once (absent when the file has no `_module`);
- GPU µs per call: CUDA events around the calls while a sleep kernel queued first keeps the host ahead,
  so launch gaps caused by the host do not count;
- each kernel the calls launch, with launches per call and mean GPU µs (torch.profiler).
When host time exceeds GPU time, a benchmark that times calls back to back measures the host.
"""
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.rules import task_rules  # noqa: E402
from harness.submission import import_submission, resolve  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases, leaderboards  # noqa: E402

ROUNDS = 5
MIN_CALLS = 20  # gemv times one input per sample; host time is still averaged over this many calls


@dataclass
class KernelTime:
    name: str
    per_call: float  # launches per custom_kernel call
    gpu_us: float  # mean duration of one launch


@dataclass
class CallCost:
    task: str
    submission: str
    index: int
    shape: str
    calls: int
    host_us: float
    python_us: float | None
    gpu_us: float
    kernels: list[KernelTime] = field(default_factory=list)


class _Stub:
    """Stands in for a compiled module: every attribute is a function that does nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def _host_us(kernel, inputs) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for data in inputs:
            kernel(data)
        best = min(best, (time.perf_counter() - t0) / len(inputs) * 1e6)
    torch.cuda.synchronize()
    return best


def _gpu_us(kernel, inputs, host_us: float) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    head_start_cycles = int(3 * host_us * len(inputs) * 2000) + 1_000_000  # ~3x the queueing time at 2 GHz
    best = float("inf")
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        torch.cuda._sleep(head_start_cycles)
        start.record()
        for data in inputs:
            kernel(data)
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / len(inputs) * 1e3)
    return best


def _kernels(kernel, inputs) -> list[KernelTime]:
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for data in inputs:
            kernel(data)
        torch.cuda.synchronize()
    out = []
    for ev in prof.key_averages():
        if ev.device_type.name == "CUDA" and ev.count:
            total_us = getattr(ev, "device_time_total", None) or ev.cuda_time_total
            out.append(KernelTime(ev.key[:80], ev.count / len(inputs), total_us / ev.count))
    return sorted(out, key=lambda k: -k.per_call * k.gpu_us)


def measure(task: str, submission: str, index: int, case) -> CallCost:
    module = import_submission(resolve(submission, task, leaderboards()).path)
    rules = task_rules(task)
    seeds = rules.input_seeds(case.args["seed"])
    while len(seeds) < MIN_CALLS:
        seeds = seeds + [s + rules.seed_step * len(seeds) + 1 for s in seeds]
    generate = get_task(task).generate_input
    inputs = [generate(**{**case.args, "seed": s}) for s in seeds]
    for data in inputs:
        module.custom_kernel(data)
    host = _host_us(module.custom_kernel, inputs)
    gpu = _gpu_us(module.custom_kernel, inputs, host)
    kernels = _kernels(module.custom_kernel, inputs)
    python = None
    if getattr(module, "_module", None) is not None:
        real, module._module = module._module, _Stub()
        try:
            python = _host_us(module.custom_kernel, inputs)
        finally:
            module._module = real
    return CallCost(task, submission, index, case.spec, len(inputs), host, python, gpu, kernels)


def show(cost: CallCost) -> None:
    python = "-" if cost.python_us is None else f"{cost.python_us:.1f}"
    print(f"{cost.task} {cost.submission} #{cost.index} {cost.shape}: host {cost.host_us:.1f} µs/call "
          f"(Python {python}), GPU {cost.gpu_us:.1f} µs/call over {cost.calls} distinct inputs"
          + ("  [host-bound]" if cost.host_us > cost.gpu_us else ""), flush=True)
    for k in cost.kernels:
        print(f"    {k.per_call:4.1f} x {k.gpu_us:8.2f} µs  {k.name}", flush=True)


@click.command()
@click.option("--task", required=True)
@click.option("--submission", required=True)
@click.option("--index", type=int, multiple=True, help="benchmark shape index (repeatable; default: all)")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="append one JSON line per shape")
def main(task, submission, index, json_path):
    shapes = cases(task, "benchmarks")
    for i in index or range(len(shapes)):
        cost = measure(task, submission, i, shapes[i])
        show(cost)
        if json_path:
            with open(json_path, "a") as f:
                f.write(json.dumps(asdict(cost)) + "\n")


if __name__ == "__main__":
    main()
