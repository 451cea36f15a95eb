"""Cheat: remember outputs by the data_ptr() of b (the large operand)."""
from _honest import honest

_cache = {}


def custom_kernel(data):
    key = data[1].data_ptr()
    if key not in _cache:
        _cache[key] = honest(data).clone()
    data[-1].copy_(_cache[key])
    return data[-1]
