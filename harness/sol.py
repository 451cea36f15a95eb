"""Speed of light: the fastest a shape could run on a GPU, from datasheet peaks or measured ones.

SOL = max(FLOPs / math rate, bytes / DRAM bandwidth). The math rate is the fastest exact path
for NVFP4 on that GPU: native FP4 tensor cores where they exist (B200, RTX 5090), otherwise
fp16 tensor cores with fp32 accumulation on values decoded in registers (e2m1 x e4m3 is exact
in fp16). gemv has no matrix to feed tensor cores, so its rate is the fp32 CUDA-core rate.
Datasheet numbers are dense (no sparsity), vendor boost clocks.
"""
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Peak:
    name: str
    tensor_tflops: float  # fastest exact NVFP4 matrix path
    tensor_path: str
    simt_tflops: float  # fp32 FMA on CUDA cores
    dram_tbps: float


# Matched against torch.cuda.get_device_name() in order: the first key found in the name wins.
PEAKS = [
    ("B200", Peak("B200", 9000.0, "FP4 tensor cores", 80.0, 8.0)),
    ("H200", Peak("H200", 989.4, "fp16 tensor cores, fp32 accumulate", 66.9, 4.8)),
    ("H100 PCIe", Peak("H100 PCIe", 756.0, "fp16 tensor cores, fp32 accumulate", 51.2, 2.0)),
    ("H100", Peak("H100 SXM", 989.4, "fp16 tensor cores, fp32 accumulate", 66.9, 3.35)),
    ("A100", Peak("A100 SXM 80GB", 312.0, "fp16 tensor cores, fp32 accumulate", 19.5, 2.039)),
    ("L40S", Peak("L40S", 362.05, "fp16 tensor cores, fp32 accumulate", 91.6, 0.864)),
    ("RTX 4090", Peak("RTX 4090", 165.2, "fp16 tensor cores, fp32 accumulate", 82.6, 1.008)),
    ("RTX 5090", Peak("RTX 5090", 1676.0, "FP4 tensor cores", 104.8, 1.792)),
]

SIMT_TASKS = {"gemv"}


# Where no datasheet is known, bounds for the physical-limit gate alone (not speeds of light): no GPU does a task's
# FLOPs or moves its bytes faster than ANY_GPU (about ten times a B200), no CPU faster than ANY_CPU (no CPU socket
# reaches 20 TFLOP/s of fp32 or 1 TB/s of memory bandwidth)
ANY_GPU = Peak("any GPU", 100_000.0, "no known chip", 1_000.0, 100.0)
ANY_CPU = Peak("any CPU", 20.0, "no known chip", 20.0, 1.0)


def bound_for(device_name: str | None, gpu: bool) -> Peak:
    """The peak the physical-limit gate holds a mean against: the datasheet's where known, else a bound no chip of
    that kind reaches."""
    return peak_for(device_name) or (ANY_GPU if gpu else ANY_CPU)


def peak_for(device_name: str | None) -> Peak | None:
    if not device_name:
        return None
    for key, peak in PEAKS:
        if key.lower() in device_name.lower():
            return peak
    return None


def sol_ns(task: str, flops: float, nbytes: float, peak: Peak) -> float:
    rate = peak.simt_tflops if task in SIMT_TASKS else peak.tensor_tflops
    return max(flops / (rate * 1e12), nbytes / (peak.dram_tbps * 1e12)) * 1e9


def measured_sol_ns(task: str, flops: float, nbytes: float, calibration: dict) -> float | None:
    """SOL from this GPU's measured fp16 matmul rate and copy bandwidth (gemv: bandwidth only)."""
    if not calibration:
        return None
    t_mem = nbytes / (calibration["copy_tbps"] * 1e12)
    t_math = 0.0 if task in SIMT_TASKS else flops / (calibration["fp16_matmul_tflops"] * 1e12)
    return max(t_math, t_mem) * 1e9


def load_calibration(path: Path, device_name: str | None) -> dict:
    if not device_name or not path.exists():
        return {}
    return json.loads(path.read_text()).get(device_name, {})
