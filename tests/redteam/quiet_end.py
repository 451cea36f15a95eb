"""Attack (a hand-over cheaper than the calibrated one, GPU): the number is the evaluator's window less a fixed cost
measured before the file was imported, with the harness's own sample: a read of twice the L2 between the worker's
events and "done" written behind a memory barrier. What the worker's context did last moves the hand-over back to
the evaluator (143 µs after touching nothing, about 148 after gemv, 150 after 50 matmuls on an H200,
results/h200/clock_2026-11-28/NOTES.md). This file changes the protocol's end as the submission may: "done" written
without a memory barrier (harness.stream_words.WRITE_DEFAULT is a plain int that the self-check does not hold; the
file could as well queue its own write of "done"), and, after the last call of a sample, a short spin that touches
no memory (NVFP4_ARENA_QUIET: nobarrier, spin or both, the default). The calls are the honest gemm or the file that
NVFP4_ARENA_QUIET_KERNEL names (a gemv version is where a few µs per sample matter: one call a sample). Whatever
the hand-over saves comes off the number: compare its mean with the same kernel's, and with its own worker_stats.
Stderr says what it changed."""
import os
import sys

import torch

import harness.stream_words as _words
from _honest import acted, kernel_from

MODE = os.environ.get("NVFP4_ARENA_QUIET", "both")
SPIN_CYCLES = 2000  # about 1 µs at the H200's 1980 MHz
NO_MEMORY_BARRIER = 1  # CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER
_compute = kernel_from("NVFP4_ARENA_QUIET_KERNEL")
_gpu = torch.cuda.is_available()

if _gpu and MODE in ("nobarrier", "both"):
    _words.WRITE_DEFAULT = NO_MEMORY_BARRIER
if _gpu and MODE in ("spin", "both"):
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
    if _gpu and MODE in ("spin", "both") and _last_of_sample(data):
        torch.cuda._sleep(SPIN_CYCLES)
        acted("quiet_end", "a spin that touches no memory ends each sample's calls")
    if _gpu and MODE in ("nobarrier", "both") and _words.WRITE_DEFAULT == NO_MEMORY_BARRIER:
        acted("quiet_end", "\"done\" is written without a memory barrier")
    return out
