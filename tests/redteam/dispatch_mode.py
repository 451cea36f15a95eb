"""Cheat (changing what the checker computes): leave a TorchDispatchMode on after the call. In one process with
the checker it could make every comparison agree; here the checker is in another process."""
from torch.utils._python_dispatch import TorchDispatchMode

from _honest import honest


class _Agree(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


_mode = None


def custom_kernel(data):
    global _mode
    out = honest(data)
    if _mode is None:
        _mode = _Agree()
        _mode.__enter__()
    return out
