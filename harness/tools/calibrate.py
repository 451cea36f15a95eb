"""Measures this GPU's real ceilings and the harness's own costs, stored in results/calibration.json:
fp16 matmul rate, device copy bandwidth and the evaluator's L2 flush."""
import json
import statistics
from pathlib import Path

import torch

from reference.cases import task_names

from ..device import GpuDevice, describe
from ..results import now
from ..rules import task_rules


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


def flush_us() -> float:
    """The evaluator's L2 flush before each sample (harness.evaluator.evaluation.L2Flush)."""
    from ..evaluator.evaluation import L2Flush
    return _median_ms(L2Flush(), 50) * 1e3


def calibrate(path: Path) -> dict:
    gpu = GpuDevice(task_rules(task_names()[0]).eval.clear_bytes)
    device = describe()
    entry = {
        "measured_at": now(),
        "device": device,
        "fp16_matmul_tflops": fp16_matmul_tflops(),
        "copy_tbps": copy_tbps(),
        "l2_flush_us": flush_us(),
        "persisting_l2_reset": gpu.reset_persisting_l2(),
    }
    data = json.loads(path.read_text()) if path.exists() else {}
    data[device["name"]] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return entry
