"""Measures this GPU's real ceilings and the harness's own costs, stored in results/calibration.json:
fp16 matmul rate, device copy bandwidth, the L2 flush, and the timing floor of a kernel that
does nothing (returns c untouched) for each task's inputs-per-sample."""
import json
import statistics
from pathlib import Path

import torch

from reference.cases import task_config, task_names

from .device import DeviceChores, RegionTimer, describe
from .results import now


def _median_ms(fn, repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        timer = RegionTimer(True)
        timer.start()
        fn()
        timer.stop()
        times.append(timer.elapsed_ns() / 1e6)
    return statistics.median(times)


def fp16_matmul_tflops(n: int = 8192) -> float:
    a = torch.randn(n, n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, n, dtype=torch.float16, device="cuda")
    return 2 * n**3 / (_median_ms(lambda: a @ b, 20) * 1e-3) / 1e12


def copy_tbps(nbytes: int = 2 << 30) -> float:
    src = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    return 2 * nbytes / (_median_ms(lambda: dst.copy_(src), 20) * 1e-3) / 1e12


def flush_us(chores: DeviceChores) -> float:
    return _median_ms(chores.before_sample, 50) * 1e3


def noop_floor_ns(chores: DeviceChores, n_inputs: int, samples: int = 200) -> float:
    """Per-call time the harness reports for a kernel that returns c untouched."""
    c = torch.randn(8, 8, dtype=torch.float16, device="cuda")
    inputs = [(c,)] * n_inputs

    def kernel(data):
        return data[-1]
    times = []
    timer = RegionTimer(True)
    for _ in range(samples):
        torch.cuda.synchronize()
        chores.before_sample()
        timer.start()
        for d in inputs:
            kernel(d)
        timer.stop()
        torch.cuda.synchronize()
        times.append(timer.elapsed_ns() / n_inputs)
    return statistics.median(times)


def calibrate(path: Path) -> dict:
    chores = DeviceChores()
    device = describe()
    entry = {
        "measured_at": now(),
        "device": device,
        "fp16_matmul_tflops": fp16_matmul_tflops(),
        "copy_tbps": copy_tbps(),
        "l2_flush_us": flush_us(chores),
        "persisting_l2_reset": chores.reset_persisting_l2(),
        "noop_floor_ns": {t: noop_floor_ns(chores, task_config(t)["iterations_per_sample"]) for t in task_names()},
    }
    data = json.loads(path.read_text()) if path.exists() else {}
    data[device["name"]] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return entry
