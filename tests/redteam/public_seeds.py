"""Cheat (stale answers): at import, compute the outputs for every public seed of every smoke case (the
derived per-call seeds, contest and general values), then answer from that table by a fingerprint of a (a few
bytes) and skip the work; unknown inputs get c as it is. Drawn on the device the evaluator draws on, the table
matches every correctness input; the timed ones come from keyed seeds. Stderr says how many calls the table
answered before the first it did not."""
import sys

import torch

from harness.rules import task_rules
from reference.cases import cases
from reference.gemm import generate_input, ref_kernel

_table = {}
_device = "cuda" if torch.cuda.is_available() else "cpu"  # where the evaluator draws its inputs
for _kind in ("smoke",):  # the shapes a CPU run uses
    for _case in cases("gemm", _kind):
        for _seed in task_rules("gemm").input_seeds(_case.args["seed"]):
            for _values in ("contest", "general"):
                _data = generate_input(**{**_case.args, "seed": _seed}, values=_values, device=_device)
                _table[bytes(_data[0].view(torch.uint8).flatten()[:32].tolist())] = ref_kernel(_data)


_answered = []


def custom_kernel(data):
    c = data[-1]
    known = _table.get(bytes(data[0].view(torch.uint8).flatten()[:32].cpu().tolist()))
    if known is not None and known.shape == c.shape:
        c.copy_(known.to(c.device))
        _answered.append(True)
    elif _answered and _answered[-1]:
        _answered.append(False)
        print(f"[public_seeds] answered {sum(_answered)} calls from the table, then met an input not in it",
              file=sys.stderr, flush=True)
    return c
