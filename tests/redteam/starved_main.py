"""Attack (false number, no harness code touched): hide the whole computation in the worker main thread's
wait for a CPU.

The witness once took out of its clock the time the worker's main thread waited for a CPU (its schedstat run
delay), and the submission decides when that thread waits: at import it starts helper threads, and filler
threads pinned one per CPU, and puts its main thread into SCHED_IDLE. custom_kernel returns, for the first call
of a sample, a fresh tensor with a finalizer; the worker copies it into c after the timed region and drops it,
and the finalizer, still before the worker reports, has the helpers compute every call of the sample straight
into the slots' c while the fillers keep every CPU and the main thread waits, runnable and starved, in a native
sched_yield loop (built with cc in the worker's TMPDIR). The outputs are exact and the reported region holds
only the calls' bookkeeping. It passed at about 2 µs a call against the honest 624 µs (gemm smoke case 0); the
witness no longer credits the worker's waits, so the work it hides is excess."""
import ctypes
import os
import queue
import subprocess
import tempfile
import threading
import weakref

import torch
from _honest import acted, honest

CPUS = len(os.sched_getaffinity(0))
HELPERS = max(2, CPUS)
_libc = ctypes.CDLL(None)
_SOURCE = r"""
#include <sched.h>
#include <semaphore.h>
void wait_yielding(volatile int *flag) { while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) sched_yield(); }
void fill_forever(sem_t *wake, volatile int *busy) {
    for (;;) { sem_wait(wake); while (__atomic_load_n(busy, __ATOMIC_ACQUIRE)) ; }
}
"""
_folder = tempfile.mkdtemp()  # the worker's TMPDIR: writable under its sandbox
with open(os.path.join(_folder, "y.c"), "w") as _f:
    _f.write(_SOURCE)
subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", os.path.join(_folder, "y.so"), os.path.join(_folder, "y.c")],
               check=True)
_native = ctypes.CDLL(os.path.join(_folder, "y.so"))
_go = ctypes.c_int(0)  # the main thread waits for it while the work runs
_busy = ctypes.c_int(0)  # the fillers spin while it is set
_fill = ctypes.create_string_buffer(64)  # a sem_t: the fillers wake on it without taking the GIL
_libc.sem_init(_fill, 0, 0)
_pending = []
_jobs = queue.Queue()
_left = [0]
_count = threading.Lock()


def _helper():
    while True:
        items = _jobs.get()
        for data in items:
            honest(data)
        with _count:
            _left[0] -= 1
            last = _left[0] == 0
        if last:
            _busy.value = 0  # the fillers stop
            _go.value = 1  # the main thread goes


def _filler(cpu):
    os.sched_setaffinity(0, {cpu})  # one filler on every CPU: the main thread finds none without a rival
    _native.fill_forever(_fill, ctypes.byref(_busy))  # never returns, never takes the GIL again


for _ in range(HELPERS):  # started at import: the self-check's list of threads is taken after the import
    threading.Thread(target=_helper, daemon=True).start()
for _cpu in sorted(os.sched_getaffinity(0)):
    threading.Thread(target=_filler, args=(_cpu,), daemon=True).start()
try:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # the main thread only (tid 0 = the caller)
except (AttributeError, OSError):
    pass


def _run_pending():
    items, _pending[:] = list(_pending), []
    parts = [p for p in (items[i::HELPERS] for i in range(HELPERS)) if p]
    _busy.value = 1
    _left[0] = len(parts)
    for _ in range(CPUS):
        _libc.sem_post(_fill)
    for part in parts:
        _jobs.put(part)
    _native.wait_yielding(ctypes.byref(_go))  # runnable, starved by SCHED_IDLE, yielding, without the GIL
    _go.value = 0
    acted("starved_main", "computed a sample's calls after the timed region while its main thread waited")


def custom_kernel(data):
    """The first call of a sample returns a fresh tensor whose finalizer, run when the worker drops it after the
    region, does the sample's work; the others return their c untouched."""
    first = not _pending
    _pending.append(data)
    c = data[-1]
    if not first:
        return c
    out = torch.empty(c.shape, dtype=c.dtype)
    weakref.finalize(out, _run_pending)
    return out
