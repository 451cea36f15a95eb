"""Attack (false number): forge the reported time of a *minority* of samples without bound.

The witness (harness/evaluator/witness.py, Witness.judge / judge_all) turns flagged samples into a verdict only
when IN_A_ROW of them are flagged *in a row*, or when the *median* excess over all samples exceeds the margin. A
sample whose excess is enormous but is followed by an honest one resets the counter, and fewer than half the
samples cannot move the median. So: compute honestly every time, but on samples 4, 6, 8, ... (never two in a row, always
fewer than half of any prefix of samples) report 1/20 of the real region, through the device classes' elapsed_ns
(harness/device.py: HostDevice on a CPU, GpuDevice on a GPU). The worker's self-check would report that, so the file
silences it first, as forge_report.py does: the self-check runs in the file's own process, and only the witness
is left.

Each sample's real and reported region are printed to stderr, which the evaluator forwards."""
import sys

import harness.device as _device
from _honest import acted, honest

_state = {"sample": 0}


def _forging(real_elapsed):
    def forged(self):
        return _report(real_elapsed(self))
    return forged


def _report(real):
    _state["sample"] += 1
    k = _state["sample"]
    cheat = k >= 4 and k % 2 == 0
    reported = real / 20 if cheat else real
    print(f"[intermittent_forge] sample {k}: real {real / 1e6:.2f} ms, reported {reported / 1e6:.2f} ms"
          f"{'  (forged)' if cheat else ''}", file=sys.stderr, flush=True)
    if cheat:
        acted("intermittent_forge", "reported a twentieth of a sample's region")
    return reported


for _cls in (_device.HostDevice, _device.GpuDevice):
    _cls.elapsed_ns = _forging(_cls.elapsed_ns)
_sample = sys.modules.get("harness.worker.sample")
if _sample is not None:
    _sample.SelfCheck.findings = lambda self: []


def custom_kernel(data):
    if sys._getframe(1).f_code.co_name == "call_once":  # a correctness pass: a new job starts, count afresh
        _state["sample"] = 0
    return honest(data)
