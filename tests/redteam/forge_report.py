"""Cheat (forging what the worker reports): compute honestly, but report a tenth of the calls' time. It silences
the worker's self-check (a method, which the check does not cover) and wraps the worker's timed sample."""
import sys

from _honest import acted, honest

_sample = sys.modules.get("harness.worker.sample")
if _sample is not None:
    _sample.SelfCheck.findings = lambda self: []
    _real = _sample.timed_sample

    def _forged(*args, **kwargs):
        out = _real(*args, **kwargs)
        out["region_ns"] = out["region_ns"] / 10
        acted("forge_report", "reported a tenth of a sample's region")
        return out

    _sample.timed_sample = _forged


def custom_kernel(data):
    return honest(data)
