"""Attack (denial of verdict): a string where the evaluator expects a number.

In benchmark mode the evaluator reads the first correctness call's time as
`float(calls[0].get("host_ns") or 0)` (harness/evaluator/evaluation.py, benchmark), and every sample's
`float(report.get("host_ns") or 0)`, without the type check it gives region_ns. call_once is a module
function the self-check watches, but the first "call" message is answered before any self-check runs, and
the answer's dicts are built by call_once itself: wrapping the returned dict is enough. Here the submission
replaces harness.worker.sample.call_once with a wrapper that sets host_ns to "soon". Expected: ValueError
in the evaluator, a traceback instead of a verdict."""
import harness.worker.sample as _sample
from _honest import honest

_real = _sample.call_once


def _call_once(kernel, data, device):
    out = _real(kernel, data, device)
    out["host_ns"] = "soon"
    return out


_sample.call_once = _call_once


def custom_kernel(data):
    return honest(data)
