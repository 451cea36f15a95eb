"""Cheat ("super-batch"): the first call of a sample does every remembered input's work at once,
later calls return the precomputed outputs."""
from _honest import acted, gemm, honest

_seen = []
_ready = {}
_calls = [0]
_period = 50


def custom_kernel(data):
    i = _calls[0] % _period
    _calls[0] += 1
    if len(_seen) < _period:
        _seen.append(data)
        return honest(data)
    if i == 0:
        for j, remembered in enumerate(_seen):
            out = remembered[-1]
            out[:, :, 0] = gemm(remembered)
            _ready[j] = out
    acted("superbatch", "returned an output computed at its sample's first call")
    return _ready[i]
