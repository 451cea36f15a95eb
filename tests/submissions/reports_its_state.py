"""Honest gemm that prints, once, the state its process started in: its resource limits, scheduling policy and
priority, nice value, CPU affinity, umask and the value of $REPORTED_MARKER."""
import json
import os
import resource
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "redteam"))
from _honest import honest  # noqa: E402

_umask = os.umask(0)
os.umask(_umask)
print("STATE " + json.dumps({
    "limits": {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")},
    "policy": os.sched_getscheduler(0), "priority": os.sched_getparam(0).sched_priority,
    "nice": os.getpriority(os.PRIO_PROCESS, 0), "affinity": sorted(os.sched_getaffinity(0)), "umask": _umask,
    "marker": os.environ.get("REPORTED_MARKER")}), flush=True)


def custom_kernel(data):
    return honest(data)
