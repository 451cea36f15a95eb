"""Attack (work before the clock, GPU): never wait for the evaluator's "go", so that the calls run as soon as they
are queued, before the evaluator's clock opens. The inputs do not exist yet then: the evaluator writes them after
the worker has queued its calls, and while it writes and flushes its context holds the GPU. So the calls read the
last sample's inputs (stale outputs: fail), unless they run after the writes, inside the clock. Stderr says each
skipped wait."""
import sys

import harness.device as _device
from _honest import honest

_sample = sys.modules.get("harness.worker.sample")
if _sample is not None:
    _sample.SelfCheck.findings = lambda self: []


def _skip(self, sequence):
    print(f"[skip_go] sample {sequence}: no wait for go", file=sys.stderr, flush=True)


_device.GpuDevice.wait_go = _skip


def custom_kernel(data):
    return honest(data)
