"""Attack (denial of verdict): a well-formed message with a mistyped field crashes the evaluator.

The evaluator validates region_ns and problems in a "sampled" report (harness/evaluator/evaluation.py, benchmark),
but then does `"; ".join(map(str, report["self_check"]))` on whatever truthy value self_check holds. The worker
fills self_check from SelfCheck.findings, a method the submission can replace (methods are not covered by the
self-check). Returning an int makes the evaluator raise TypeError outside any Verdict handler: a traceback and
no record, instead of `tampered`."""
import harness.worker.sample as _sample
from _honest import honest

_sample.SelfCheck.findings = lambda self: 7


def custom_kernel(data):
    return honest(data)
