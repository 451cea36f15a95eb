"""Attack (deferral): return a torch.Tensor subclass; its __torch_function__ would run code of the submission's
own when the worker reads the output into c after the timed region (a place to do the work untimed). The worker
takes only plain tensors."""
import torch

from _honest import honest


class Deferred(torch.Tensor):
    pass


def custom_kernel(data):
    return honest(data).as_subclass(Deferred)
