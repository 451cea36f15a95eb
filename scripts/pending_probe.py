"""Device check of the escape watch's measurement: after a short timed region, how long does a
device-wide synchronize still wait once the end event is reached, and what is that time made of?

Each sample: the contest's clear (or ours: flush + hold), start event, `--calls` fp16 matmuls on the
current stream only (nothing escapes), end event; then one way of measuring the pending time:

- event+device: cudaEventSynchronize on the end event, then cudaDeviceSynchronize (harness.device)
- poll+device: the end event polled with cudaEventQuery from the host, then cudaDeviceSynchronize
- event+spin+device: as the first, with 300 µs of host spinning before the device synchronize
- arena: ours (flush + hold), then event+device

Every variant then times a second device synchronize (its own cost). Variants are interleaved sample
by sample. Prints per variant the median and max pending µs.

    python scripts/pending_probe.py [--samples 15] [--calls 15]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.device import GpuDevice  # noqa: E402
from harness.rules import EVAL_FILES  # noqa: E402


def spin(ns: int):
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def sample(device: GpuDevice, clear: str, wait: str, calls: int, a, b) -> tuple[float, float, float]:
    """(region µs, pending µs, second synchronize µs)."""
    torch.cuda.synchronize()
    if clear == "contest":
        device.contest_clear()
    else:
        device.flush()
        device.hold()
    device.start()
    for _ in range(calls):
        torch.matmul(a, b)
    device.stop()
    if clear != "contest":
        device.release()
    if wait == "poll":
        while not device.end_event.query():
            pass
        reached = time.perf_counter_ns()
    else:
        reached = device.wait_end()
    if wait == "spin":
        spin(300_000)
        reached = time.perf_counter_ns()
    torch.cuda.synchronize()
    synced = time.perf_counter_ns()
    torch.cuda.synchronize()
    second = time.perf_counter_ns() - synced
    return device.elapsed_ns() / 1e3, (synced - reached) / 1e3, second / 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    device = GpuDevice(EVAL_FILES["eval_better_bench_grouped_gemm.py"].clear_bytes)
    a = torch.randn(512, 1536, dtype=torch.float16, device="cuda")
    b = torch.randn(1536, 4096, dtype=torch.float16, device="cuda")
    variants = [("contest", w) for w in ("event", "poll", "spin")] + [("arena", "event")]
    seen = {v: [] for v in variants}
    for _ in range(args.samples):
        for v in variants:
            seen[v].append(sample(device, *v, args.calls, a, b))
    print(f"{torch.cuda.get_device_name()}: contest clear {device.clear_ns / 1e6:.1f} ms, {args.calls} calls per sample")
    for (clear, wait), rows in seen.items():
        region, pending, second = zip(*rows)
        print(f"{clear:8s} {wait:6s}: region {statistics.median(region):7.1f} µs, pending median "
              f"{statistics.median(pending):7.1f} max {max(pending):7.1f} µs, second synchronize median "
              f"{statistics.median(second):6.1f} µs; pending per sample: {' '.join(f'{p:.0f}' for p in pending)}")


if __name__ == "__main__":
    main()
