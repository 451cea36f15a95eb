"""Cheat: remember outputs by the data_ptr() of b (the large operand)."""
from _honest import acted, honest

_cache = {}


def custom_kernel(data):
    key = data[1].data_ptr()
    if key in _cache:
        acted("cache_by_data_ptr", "copied the output remembered for this b's address into c")
    else:
        _cache[key] = honest(data).clone()
    data[-1].copy_(_cache[key])
    return data[-1]
