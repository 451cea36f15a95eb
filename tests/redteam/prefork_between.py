"""Attack (round 4): children forked between samples do the work; credit_ns forgives the main thread's wait.

The evaluator checks for stray processes right after a sample, then draws and computes references for the next
sample before its witness starts. A helper thread forks one child per CPU in that window (half the last gap after
the report), so the stray check never sees them and the fork costs nothing inside a witness. Each child blocks on a
pipe. In the next sample, the first call returns a fresh tensor whose finalizer (after the region, before the
report) sends the children the slots' output pointers; they compute every call straight into the shared slots
(MAP_SHARED, inherited), and exit; the main thread, SCHED_IDLE, waits runnable in a native waitpid/sched_yield
loop and reaps them. The children's CPU is in no thread of the worker and not in its utime/stime, so credit_ns
took the main thread's whole wait out of the witness (about 22 of 24 ms hidden per sample; a 0.9 ms remainder got it
`tampered`). The credit now counts reaped children's CPU ticks and gives nothing to a main thread that is not at
the default scheduling. Without ready children, the work is done inline. A warm-up draws its inputs once, so its gaps
are too short to fork in after the stray check: the children are forked only after two samples in a row whose gaps
were over twice the shortest sample gap seen (a recorded job's, whose samples draw fresh inputs)."""
import ctypes
import os
import subprocess
import tempfile
import threading
import time
import weakref

import torch
from _honest import acted, honest

CPUS = sorted(os.sched_getaffinity(0))
_SOURCE = r"""
#include <sched.h>
#include <sys/wait.h>
void reap_yielding(int *pids, int n) {
    int left = n;
    while (left) {
        for (int i = 0; i < n; i++)
            if (pids[i] > 0 && waitpid(pids[i], 0, WNOHANG) == pids[i]) { pids[i] = 0; left--; }
        sched_yield();
    }
}
"""
_folder = tempfile.mkdtemp()
with open(os.path.join(_folder, "r.c"), "w") as _f:
    _f.write(_SOURCE)
subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", os.path.join(_folder, "r.so"), os.path.join(_folder, "r.c")],
               check=True)
_native = ctypes.CDLL(os.path.join(_folder, "r.so"))
_pending = []
_known = {}  # c.data_ptr() -> a data tuple over the shared slot memory (kept alive: the children inherit it)
_children = []  # (pid, write end of its pipe)
_lock = threading.Lock()
_schedule = threading.Event()
_state = {"reported": None, "gap": None, "fork_at": None, "shortest": None, "long_gaps": 0}


def _child(read_fd):
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    torch.set_num_threads(1)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = os.read(read_fd, 65536)
        if not chunk:
            os._exit(0)
        buf += chunk
    for key in buf.split():
        honest(_known[int(key)])
    os._exit(0)


def _forker():
    while True:
        _schedule.wait()
        _schedule.clear()
        delay = _state["fork_at"]
        time.sleep(delay)
        with _lock:
            if _children:
                continue
            _state["at_fork"] = set(_known)
            for cpu in CPUS:
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    try:
                        for _, other in _children:
                            os.close(other)
                        os.close(w)
                        os.sched_setaffinity(0, {cpu})
                        _child(r)
                    finally:
                        os._exit(0)
                os.close(r)
                _children.append((pid, w))


threading.Thread(target=_forker, daemon=True).start()


def _run_pending():
    items, _pending[:] = list(_pending), []
    with _lock:
        kids, _children[:] = list(_children), []
    if kids and not all(_key(d) in _state["at_fork"] for d in items):  # forked before these slots existed
        for pid, w in kids:
            os.close(w)
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        kids = []
    if kids:
        keys = [str(_key(d)).encode() for d in items]
        parts = [keys[i::len(kids)] for i in range(len(kids))]
        for (pid, w), part in zip(kids, parts):
            os.write(w, b" ".join(part) + b"\n")
            os.close(w)
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            pass
        arr = (ctypes.c_int * len(kids))(*[p for p, _ in kids])
        _native.reap_yielding(arr, len(kids))
        acted("prefork_between", "computed a sample's calls after the timed region, in children forked between samples")
    else:
        for data in items:
            honest(data)
        acted("prefork_between", "computed a sample's calls after the timed region, in its own process")
    _state["reported"] = time.monotonic()
    if len(items) > 1 and _state["gap"]:  # a sample's calls: its gap is the evaluator's work between samples
        _state["shortest"] = min(_state["shortest"] or _state["gap"], _state["gap"])
        _state["long_gaps"] = _state["long_gaps"] + 1 if _state["gap"] > 2 * _state["shortest"] else 0
    if _state["long_gaps"] >= 2:
        _state["fork_at"] = 0.5 * _state["gap"]
        _schedule.set()


def _key(data):
    """The slot's memory and shapes: a tuple the children inherited views the same shared bytes."""
    return hash(tuple((t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype)) for t in data
                      if isinstance(t, torch.Tensor)))


def custom_kernel(data):
    first = not _pending
    _pending.append(data)
    c = data[-1]
    _known.setdefault(_key(data), data)
    if not first:
        return c
    if _state["reported"] is not None:
        _state["gap"] = time.monotonic() - _state["reported"]
    out = torch.empty(c.shape, dtype=c.dtype)
    weakref.finalize(out, _run_pending)
    return out
