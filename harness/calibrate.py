"""Measures this GPU's real ceilings and the harness's own costs, stored in results/calibration.json:
fp16 matmul rate, device copy bandwidth, the L2 flush, and the timing floor of a kernel that
does nothing (returns c untouched) for each task's inputs-per-sample."""
import json
import statistics
from pathlib import Path

import torch

from reference.cases import task_names

from .device import GpuDevice, describe
from .results import now
from .rules import StopRule, task_rules
from .timing import measure


def _median_ms(fn, repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def fp16_matmul_tflops(n: int = 8192) -> float:
    a = torch.randn(n, n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, n, dtype=torch.float16, device="cuda")
    return 2 * n**3 / (_median_ms(lambda: a @ b, 20) * 1e-3) / 1e12


def copy_tbps(nbytes: int = 2 << 30) -> float:
    src = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    return 2 * nbytes / (_median_ms(lambda: dst.copy_(src), 20) * 1e-3) / 1e12


def flush_us(device: GpuDevice) -> float:
    return _median_ms(device.flush, 50) * 1e3


def noop_floor_ns(task: str, device: GpuDevice, samples: int = 200) -> float:
    """Per-call time the default timing (flush + hold) reports for a kernel that returns c untouched."""
    rules = task_rules(task)
    c = torch.randn(8, 8, dtype=torch.float16, device="cuda")
    inputs = [(c,)] * rules.inputs_per_sample
    timing = measure(lambda data: data[-1], lambda: (inputs, [False] * len(inputs)), device, "arena",
                     StopRule(max_runs=samples, max_time_ns=float("inf")), [])
    return statistics.median(timing.durations)


def calibrate(path: Path) -> dict:
    gpu = GpuDevice(task_rules(task_names()[0]).eval.clear_bytes)
    device = describe()
    entry = {
        "measured_at": now(),
        "device": device,
        "fp16_matmul_tflops": fp16_matmul_tflops(),
        "copy_tbps": copy_tbps(),
        "l2_flush_us": flush_us(gpu),
        "persisting_l2_reset": gpu.reset_persisting_l2(),
        "noop_floor_ns": {t: noop_floor_ns(t, gpu) for t in task_names()},
    }
    data = json.loads(path.read_text()) if path.exists() else {}
    data[device["name"]] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return entry
