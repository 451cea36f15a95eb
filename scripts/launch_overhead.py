"""Host cost of one custom_kernel call against its GPU time, for one benchmark shape.

Usage (on a GPU): python scripts/launch_overhead.py --task gemv --submission v4 [--index 2]
Prints the host time per call (200 calls queued without synchronising) and the GPU time per call
(CUDA events around 200 back-to-back calls, L2 warm). When host time exceeds GPU time, a
one-call-per-sample benchmark (gemv) measures the host, not the kernel.
"""
import sys
import time
from pathlib import Path

import click
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.submission import import_submission, resolve  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases, leaderboards  # noqa: E402

CALLS = 200


@click.command()
@click.option("--task", required=True)
@click.option("--submission", required=True)
@click.option("--index", type=int, default=None, help="benchmark shape index (default: all)")
def main(task, submission, index):
    kernel = import_submission(resolve(submission, task, leaderboards()).path).custom_kernel
    shapes = cases(task, "benchmarks")
    for case in shapes if index is None else [shapes[index]]:
        data = get_task(task).generate_input(**case.args)
        for _ in range(3):
            kernel(data)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            kernel(data)
        host_us = (time.perf_counter() - t0) / CALLS * 1e6
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(CALLS):
            kernel(data)
        end.record()
        torch.cuda.synchronize()
        gpu_us = start.elapsed_time(end) / CALLS * 1e3
        print(f"{task} {submission} {case.spec}: host {host_us:.1f} µs/call, queued GPU {gpu_us:.1f} µs/call")


if __name__ == "__main__":
    main()
