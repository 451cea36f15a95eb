"""Cheat: the i-th call of a sample returns what the i-th call returned the first time round."""
from _honest import acted, honest

_calls = []
_period = 50


def custom_kernel(data):
    n = len(_calls)
    if n < _period:
        _calls.append(honest(data).clone())
        return _calls[-1]
    _calls.append(None)
    acted("cache_by_call_count", f"returned the output of the call {_period} calls earlier again")
    return _calls[n % _period]
