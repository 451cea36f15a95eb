"""Attack (false number, GPU): say "done" to the evaluator's clock as soon as "go" arrives, before any call has run,
so that the clock closes early and the calls run after it. The worker's self-check is silenced first. The calls
are ordinary: what the evaluator's clock sees is the question. Either its closing waits for the worker's context to
leave the GPU (the calls counted), or it closes while the calls still run and its spot check finds outputs that
changed after it: recorded at its real time, or tampered. Stderr says when the early "done" was queued."""
import sys

import harness.device as _device
from _honest import honest

_sample = sys.modules.get("harness.worker.sample")
if _sample is not None:
    _sample.SelfCheck.findings = lambda self: []
_wait_go = _device.GpuDevice.wait_go


def _early(self, sequence):
    _wait_go(self, sequence)
    self.signal_done(sequence)  # "done" on the stream right behind "go", before the calls
    print(f"[early_done] done queued before the calls of sample {sequence}", file=sys.stderr, flush=True)


_device.GpuDevice.wait_go = _early


def custom_kernel(data):
    return honest(data)
