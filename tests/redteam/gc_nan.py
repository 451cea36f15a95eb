"""Attack (gc NaN injection and expected-buffer overwrite, gpu-mode/pygpubench exploits/submission_gc_nan.py,
submission_combined.py, submission_gpu_scan_zeros.py): where the checker's expected outputs live in the
submission's process, find them and poison them, so that a kernel that does nothing passes: pygpubench's checker
took a NaN in the expected output as a match for anything, and an expected buffer of zeros matches a kernel that
writes zeros. At every call this file walks the garbage collector's objects for tensors shaped like its output
(expected outputs; pygpubench kept each as (tensor, rtol, atol)) and for (tensor, float, float) triples, fills every
one that is not this call's c with NaN, and computes nothing.

Every tensor the worker holds is its own: its slots' inputs and outputs. The expected outputs are in the
evaluator's process (and, on a GPU, its CUDA context); its checker takes NaN where the reference has a number as a
mismatch. Stderr says how many tensors were poisoned."""
import gc
import sys
import warnings

import torch

_poisoned = {"calls": 0}


def _targets(c):
    warnings.simplefilter("ignore")  # isinstance on every object reaches torch's deprecated aliases
    for obj in gc.get_objects():
        if isinstance(obj, tuple) and len(obj) == 3 and isinstance(obj[0], torch.Tensor) \
                and all(isinstance(x, float) for x in obj[1:]):
            yield obj[0]
        elif isinstance(obj, torch.Tensor) and obj.shape == c.shape and obj.dtype == c.dtype:
            yield obj


def custom_kernel(data):
    c = data[-1]
    poisoned = 0
    for tensor in _targets(c):
        if tensor.data_ptr() != c.data_ptr() and tensor.is_floating_point():
            tensor.fill_(float("nan"))
            poisoned += 1
    _poisoned["calls"] += 1
    if _poisoned["calls"] % 50 == 1:
        print(f"[gc_nan] call {_poisoned['calls']}: filled {poisoned} tensors shaped like the output with NaN; "
              f"computed nothing", file=sys.stderr, flush=True)
    return c
