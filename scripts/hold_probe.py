"""Device check of the stream hold (harness/hold.py) before the timing core relies on it.

1. A released hold ends at once; an unreleased one ends on its timeout and says so.
2. A kernel queued on another stream during the hold does not run until the hold ends.
3. Per benchmark shape of each named file: mean µs of the contest's own loop (sync, its clear,
   start, N calls, end, sync) against flush + hold (sync, 4x-L2 zero_, hold, start, N calls, end,
   release, sync), interleaved sample by sample in one process (so host drift hits both alike),
   with the harness's own device operations (harness.device.GpuDevice), plus host µs per call.

    python scripts/hold_probe.py gemv:v7 group_gemm:v25 [--samples 30]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.device import GpuDevice  # noqa: E402
from harness.hold import StreamHold  # noqa: E402
from harness.rules import task_rules  # noqa: E402
from harness.submission import import_submission  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases, task_config  # noqa: E402


def check_semantics():
    hold = StreamHold(timeout_ns=20e6)
    hold.engage()
    hold.release()
    t = time.perf_counter()
    torch.cuda.synchronize()
    print(f"released hold: synchronize took {1e3 * (time.perf_counter() - t):.2f} ms, timed_out={hold.timed_out()}")
    hold.engage()
    t = time.perf_counter()
    torch.cuda.synchronize()
    print(f"unreleased hold (20 ms timeout): synchronize took {1e3 * (time.perf_counter() - t):.2f} ms, "
          f"timed_out={hold.timed_out()}")
    side = torch.cuda.Stream()
    marker = torch.zeros(1, device="cuda")
    hold.engage()
    with torch.cuda.stream(side):
        marker.fill_(7.0)
    time.sleep(0.005)
    ran_early = side.query()
    hold.release()
    torch.cuda.synchronize()
    print(f"side-stream kernel finished during the hold: {ran_early} (must be False); after release: {marker.item()}")


def compare(task, version, samples):
    kernel = import_submission(ROOT / "submissions" / task / f"{version}.py").custom_kernel
    cfg = task_config(task)
    n = cfg["iterations_per_sample"]
    device = GpuDevice(task_rules(task).eval.clear_bytes)
    print(f"{task}: the contest's clear takes {device.clear_ns / 1e6:.2f} ms here (the hold's timeout)")
    gen = get_task(task)
    rows = []
    for case in cases(task, "benchmarks"):
        seeds = [case.args["seed"]] if n == 1 else [case.args["seed"] + cfg["seed_step"] * (i + 1) for i in range(n)]
        inputs = [gen.generate_input(**{**case.args, "seed": s}) for s in seeds]
        for d in inputs:
            kernel(d)
        torch.cuda.synchronize()
        times = {"contest": [], "hold": []}
        host = []
        timeouts = 0
        for i in range(samples):
            for method in ("contest", "hold") if i % 2 == 0 else ("hold", "contest"):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                if method == "contest":
                    device.contest_clear()
                else:
                    device.flush()
                    device.hold()
                start.record()
                t0 = time.perf_counter_ns()
                for d in inputs:
                    kernel(d)
                t1 = time.perf_counter_ns()
                end.record()
                if method == "hold":
                    device.release()
                torch.cuda.synchronize()
                if method == "hold":
                    host.append((t1 - t0) / n)
                    timeouts += device.hold_timed_out()
                times[method].append(start.elapsed_time(end) * 1e6 / n)
        c, h = statistics.mean(times["contest"]), statistics.mean(times["hold"])
        rows.append((task, version, case.index, c / 1e3, h / 1e3, h / c, statistics.mean(host) / 1e3, timeouts))
        print(f"{task} {version} shape {case.index}: contest {c / 1e3:9.2f} µs  hold {h / 1e3:9.2f} µs  "
              f"ratio {h / c:.4f}  host/call {statistics.mean(host) / 1e3:8.2f} µs  hold timeouts {timeouts}", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("specs", nargs="*")
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    print(torch.cuda.get_device_name(0), torch.__version__)
    check_semantics()
    for spec in args.specs:
        task, version = spec.split(":")
        compare(task, version, args.samples)


if __name__ == "__main__":
    main()
