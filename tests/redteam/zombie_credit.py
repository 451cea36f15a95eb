"""Attack (a false number, no harness code touched): hide a sample's work in a child that is never reaped.

Its untimed calls show it every slot of the job (shared memory, mapped into its process, which a child inherits).
The first call of each timed sample forks a child, pinned with the main thread to one CPU, that computes every slot's
output straight into the slot and exits; the other calls return at once. After the timed region the worker copies the
first call's returned tensor into its slot and drops it, and its finalizer, before the report, waits for the child
runnable in a sched_yield loop at the default scheduling, never reaps it, and computes that one slot again. The witness once left out the main thread's wait for a CPU less what
the worker's threads and reaped children ran meanwhile: a zombie's CPU time was in neither, nor was the zombie a
process left running, and such a file passed benchmark mode at 0.07-0.38x the honest control. The worker's cgroup's
usage now counts the child, and without a cgroup its own ticks do. It notes in redteam_zombie_credit.log in its
build cache each child and the zombies it left."""
import mmap
import os
import weakref

import torch
from _honest import honest
from _reach import note

_known = {}  # a slot's output pointer -> its data tuple (views of the shared slot, which a child inherits)
_pending = []
_child = {}


def _zombies() -> int:
    states = []
    for pid in _child.get("all", []):
        try:
            with open(f"/proc/{pid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            continue
    return states.count("Z")


def _fork_child():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # the child inherits it: one CPU for both
    done = mmap.mmap(-1, 1)  # shared with the child
    pid = os.fork()
    if pid == 0:
        for data in list(_known.values()):
            honest(data)
        done[0] = 1
        os._exit(0)
    _child.update(pid=pid, done=done, slots=set(_known))
    _child.setdefault("all", []).append(pid)


def _finish():
    items, _pending[:] = list(_pending), []
    pid, done, slots = _child.pop("pid", None), _child.pop("done", None), _child.pop("slots", set())
    if pid is not None:
        while done[0] == 0:
            os.sched_yield()
    for n, data in enumerate(items):
        if n == 0 or data[-1].data_ptr() not in slots:  # the first: the worker copied the returned tensor over it
            honest(data)
    if pid is not None:
        note("zombie_credit", f"child {pid} computed {len(slots)} outputs and exited unreaped; zombies: {_zombies()}")


def custom_kernel(data):
    first = not _pending
    _pending.append(data)
    if not first:
        return data[-1]
    if data[-1].data_ptr() in _known:
        _fork_child()
    _known.setdefault(data[-1].data_ptr(), data)
    out = torch.empty(data[-1].shape, dtype=data[-1].dtype)
    weakref.finalize(out, _finish)
    return out
