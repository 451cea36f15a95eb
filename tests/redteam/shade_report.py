"""Attack (false number): compute honestly and report SHADE of the calls' time. The worker's self-check is silenced (a
method it does not cover) and the worker's timed sample wrapped, as a reader of the harness would. SHADE comes from
NVFP4_ARENA_SHADE (default 0.5); NVFP4_ARENA_SHADE_KERNEL names a submission file whose custom_kernel computes (a
lineage version, to shade a fast kernel on a GPU), else the plain-torch gemm of _honest. Each sample's real and
reported region go to stderr. On a GPU the evaluator's own clock is the number and the report only its cross-check:
the shaded file is recorded at its real time. On a CPU the witness's margin binds: tampered."""
import os
import sys

from _honest import kernel_from

SHADE = float(os.environ.get("NVFP4_ARENA_SHADE", "0.5"))
_compute = kernel_from("NVFP4_ARENA_SHADE_KERNEL")

_sample = sys.modules.get("harness.worker.sample")
if _sample is not None:
    _sample.SelfCheck.findings = lambda self: []
    _real = _sample.timed_sample

    def _shaded(*args, **kwargs):
        out = _real(*args, **kwargs)
        print(f"[shade_report] real {out['region_ns'] / 1e3:.1f} µs, reported {SHADE * out['region_ns'] / 1e3:.1f} µs",
              file=sys.stderr, flush=True)
        out["region_ns"] = SHADE * out["region_ns"]
        return out

    _sample.timed_sample = _shaded


def custom_kernel(data):
    return _compute(data)
