"""Honest gemm that prints, once, what its process holds: whether the evaluator's modules came with it (a worker
forked from the evaluator has them) and where each of its file descriptors leads."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "redteam"))
from _honest import honest  # noqa: E402

fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
print("PROCESS " + json.dumps({"forked": "harness.evaluator.session" in sys.modules, "fds": fds,
                               "argv": sys.argv, "cwd": os.getcwd(), "tmpdir": os.environ.get("TMPDIR")}), flush=True)


def custom_kernel(data):
    return honest(data)
