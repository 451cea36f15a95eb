"""Attack (a hand-over cheaper than the calibrated one, GPU): the number is the evaluator's window less a fixed cost
measured before the file was imported, with the harness's own sample: a read of twice the L2 between the worker's
events and "done" written behind a memory barrier. What the worker's context did last moves the hand-over back to
the evaluator (143 µs after touching nothing, about 148 after gemv, 150 after 50 matmuls on an H200,
results/h200/clock_2026-11-28/NOTES.md). This file ends each sample's calls with a short spin that touches no memory.
(Writing "done" without the barrier is not open to it: the driver's _v2 stream-memory calls, which the harness
uses, refuse CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER with CUDA_ERROR_INVALID_VALUE on an H200,
results/h200/clock_2026-11-28b/NOTES.md.) The calls are the honest gemm or the file that NVFP4_ARENA_QUIET_KERNEL
names (a gemv version is where a few µs per sample matter: one call a sample). Whatever the hand-over saves comes
off the number: compare its mean with the same kernel's, and with its own worker_stats. Stderr says what it
changed."""
import sys

import torch

from _honest import acted, kernel_from

SPIN_CYCLES = 2000  # about 1 µs at the H200's 1980 MHz
_compute = kernel_from("NVFP4_ARENA_QUIET_KERNEL")
_gpu = torch.cuda.is_available()

if _gpu:
    torch.cuda._sleep(SPIN_CYCLES)  # its kernel loaded now, not while the stream waits for "go"
    torch.cuda.synchronize()


def _last_of_sample(data) -> bool:
    """Whether this call is the last of a timed sample (the worker's frame holds the sample's inputs)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "timed_sample" and "batch" in frame.f_locals:
            batch = frame.f_locals["batch"]
            return bool(batch) and batch[-1] is data
        frame = frame.f_back
    return False


def custom_kernel(data):
    out = _compute(data)
    if _gpu and _last_of_sample(data):
        torch.cuda._sleep(SPIN_CYCLES)
        acted("quiet_end", "a spin that touches no memory ends each sample's calls")
    return out
