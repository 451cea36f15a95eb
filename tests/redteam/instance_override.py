"""Attack (lazy output by instance override, gpu-mode/reference-kernels issue #162): return a placeholder whose own
methods do the work when the harness touches it after the timed region. The worker takes only plain tensors as
outputs (a subclass's __torch_function__ would run code when the worker reads it into c), but a plain torch.Tensor
has an instance dictionary, and an attribute set there shadows a method of its class: the placeholder returned here
is a plain tensor of zeros whose data_ptr, called by the worker as it reads the output into c after the sample's
end, first computes the product into it. The calls themselves return at once.

Where the worker's report is the number (a CPU), the witness's clock runs until the outputs are read back, so the
deferred work is time the report does not account for; on a GPU the worker reads returned outputs into c before it
writes "done", inside the evaluator's clock. Stderr says when the deferred work ran."""
import sys

import torch

from _honest import gemm

_ran = {"n": 0}


def _deferred(placeholder, data):
    real = placeholder.data_ptr  # the class's own method, bound to this tensor

    def data_ptr():
        if "done" not in placeholder.__dict__:
            placeholder.__dict__["done"] = True
            placeholder[:, :, 0] = gemm(data)
            _ran["n"] += 1
            if _ran["n"] % 50 == 1:
                print(f"[instance_override] the worker called data_ptr() on a placeholder after custom_kernel "
                      f"returned: computed its output then ({_ran['n']} so far)", file=sys.stderr, flush=True)
        return real()
    return data_ptr


def custom_kernel(data):
    c = data[-1]
    placeholder = torch.zeros_like(c)
    placeholder.data_ptr = _deferred(placeholder, data)
    return placeholder
