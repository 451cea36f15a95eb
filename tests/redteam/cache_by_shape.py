"""Cheat: one output per shape."""
from _honest import acted, honest

_cache = {}


def custom_kernel(data):
    key = tuple(data[-1].shape)
    if key in _cache:
        acted("cache_by_shape", "copied the output remembered for this shape into c")
    else:
        _cache[key] = honest(data).clone()
    data[-1].copy_(_cache[key])
    return data[-1]
