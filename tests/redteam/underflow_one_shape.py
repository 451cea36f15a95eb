"""Attack (aggregator underflow, gpu-mode/reference-kernels issue #162): drive one shape's reported time toward zero,
so that the geomean over shapes collapses (the eigh leaderboard ranked such a file first at a score of 0.000). The
file computes honestly; for the first shape it is timed on (the output's shape in the first sample it sees) it
reports every sample's calls as 1 ns in all, every other shape's honestly. The worker's self-check is silenced first
(a method it does not cover) and the worker's timed sample wrapped, as a reader of the harness would.
NVFP4_ARENA_UNDERFLOW_KERNEL names a submission file whose custom_kernel computes (another task's, or a fast
lineage version on a GPU), else the plain-torch gemm of _honest.

Where the worker's report is the number (a CPU, contest timing), the witness weighs it against the evaluator's
clock around the sample; under the evaluator's own clock (a GPU, arena timing) the report is only a cross-check. A
time that did reach a record meets the physical-limit gate (make_record), where the GPU's datasheet is known.
Stderr says each forged sample's real and reported time."""
import sys

from _honest import kernel_from

REPORTED_NS = 1
_compute = kernel_from("NVFP4_ARENA_UNDERFLOW_KERNEL")
_sample = sys.modules.get("harness.worker.sample")
_target = {}
if _sample is not None:
    _sample.SelfCheck.findings = lambda self: []
    _real = _sample.timed_sample

    def _underflow(kernel, batch, *args, **kwargs):
        out = _real(kernel, batch, *args, **kwargs)
        if not batch:  # a null sample of the evaluator's calibration (before this file was imported)
            return out
        shape = tuple(batch[0][-1].shape)
        if _target.setdefault("shape", shape) == shape:
            print(f"[underflow_one_shape] output {shape}: real {out['region_ns'] / 1e3:.1f} µs, reported "
                  f"{REPORTED_NS / 1e3:.3f} µs", file=sys.stderr, flush=True)
            out["region_ns"] = REPORTED_NS
        return out

    _sample.timed_sample = _underflow


def custom_kernel(data):
    return _compute(data)
