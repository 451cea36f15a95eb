"""Attack (timing events overwritten in the harness's memory, gpu-mode/pygpubench exploits/submission_event_array.py;
the harness-memory overwrite of submission_test_canary_direct.py): replace no function, change the data the
harness times with. pygpubench's exploit found its arrays of start and end events on the heap and copied each start
over its end, so every elapsed time read zero. Here the worker's device object (found among the garbage
collector's objects) holds the sample's start mark: at every call this file moves that mark to the call's start
(the wall-clock start on a CPU; the start event, recorded again on the current stream, on a GPU), so the region the
worker reports is its last call alone. It computes honestly. No method is replaced, so the worker's self-check,
which looks for replaced functions and methods, finds nothing.

Where the worker's report is the number (a CPU), the witness sees the other calls' time; on a GPU the evaluator's
own clock is the number. Stderr says where the mark was moved."""
import gc
import sys
import time
import warnings

import torch

from _honest import honest

_device = {}


def worker_device():
    if "it" not in _device:
        warnings.simplefilter("ignore")  # isinstance on every object reaches torch's deprecated aliases
        found = [o for o in gc.get_objects() if type(o).__name__ in ("HostDevice", "GpuDevice")
                 and type(o).__module__ == "harness.device"]
        _device["it"] = found[0] if found else None
        print(f"[event_swap] found the worker's {type(_device['it']).__name__}: its start mark moves to each call's "
              f"start", file=sys.stderr, flush=True)
    return _device["it"]


def custom_kernel(data):
    device = worker_device()
    if device is not None:
        if device.gpu:
            device.start_event.record()
        else:
            device.t0 = time.perf_counter_ns()
    return honest(data)
