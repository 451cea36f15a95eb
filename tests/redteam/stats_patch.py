"""Attack (timer and stats patching, gpu-mode/reference-kernels issue #162; KernelBench's "timing monkey patch"):
leave the kernel honest, but patch at import what a harness in the same process would time and summarise with, so
that everything reads a hundredth: torch.cuda.Event.elapsed_time, time.perf_counter(_ns), and the statistics the
harness computes (harness.stats.calculate and geomean, which the worker's process imports through harness.rules).

Here the worker times with references it took before the file was imported (harness.device), and its report is a
claim: the evaluator computes every statistic in its own process, from its own clock on a GPU or the worker's region
checked against the witness on a CPU. Stderr names each patch, then the calls' real time, read with a clock saved
before the patches, every SAMPLE calls."""
import statistics
import sys
import time

import torch

import harness.stats
from _honest import honest

SCALE = 100
SAMPLE = 50
_clock = time.perf_counter_ns
_real_ns = []


def _scaled(real):
    return lambda *args: real(*args) / SCALE


def _scaled_int(real):
    return lambda *args: real(*args) // SCALE


_elapsed = torch.cuda.Event.elapsed_time
_calculate = harness.stats.calculate
_geomean = harness.stats.geomean
torch.cuda.Event.elapsed_time = lambda self, end: _elapsed(self, end) / SCALE
time.perf_counter_ns = _scaled_int(time.perf_counter_ns)
time.perf_counter = _scaled(time.perf_counter)
harness.stats.calculate = lambda durations: _calculate([d / SCALE for d in durations])
harness.stats.geomean = _scaled(_geomean)
print(f"[stats_patch] patched torch.cuda.Event.elapsed_time, time.perf_counter_ns, time.perf_counter, "
      f"harness.stats.calculate, harness.stats.geomean: each reads 1/{SCALE}", file=sys.stderr, flush=True)


def custom_kernel(data):
    started = _clock()
    out = honest(data)
    _real_ns.append(_clock() - started)
    if len(_real_ns) % SAMPLE == 0:
        print(f"[stats_patch] real time of the calls: median {statistics.median(_real_ns) / 1e3:.1f} µs a call",
              file=sys.stderr, flush=True)
    return out
