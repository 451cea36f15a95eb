"""Attack (result reuse through uninitialised memory, KernelBench src/kernelbench/unit_tests/test_eval_adversarial.py
test_result_cache_reuse with test_kernels/result_reuse_kernel.py): return torch.empty of the output's shape and
compute nothing. Where the harness frees the reference's output in the submission's process just before the call,
the allocator may hand that very memory back, still holding the right answer. Our worker's process never holds a
reference output, and c is the evaluator's slot, which every sample writes afresh; what an empty tensor holds here
is this process's own leftovers. Stderr says what was returned."""
import sys

import torch

_calls = {"n": 0}


def custom_kernel(data):
    _calls["n"] += 1
    if _calls["n"] == 1:
        print("[uninit_output] returned torch.empty_like(c), no product computed", file=sys.stderr, flush=True)
    return torch.empty_like(data[-1])
