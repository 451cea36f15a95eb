"""Attack (the harness's timer patched below Python, gpu-mode/pygpubench exploits/submission_got_patch.py,
submission_function_detour.py, submission_ptrace.py): pygpubench timed in C++ through cudaEventElapsedTime, and its
exploits redirected that function (its GOT entry, an inline jump written over its first bytes, or its code poked
through ptrace) to return a microsecond, while the kernel ran honestly. Our worker times a CPU sample with the
clock it saved before the file was imported (harness.device's reference to time.perf_counter_ns), and its
self-check compares that reference with the object it holds: here the object stays the same and its C function
is replaced. With ctypes, the file overwrites the function pointer in perf_counter_ns's method table (ordinary
writable memory of this process) with a callback that returns a hundredth of the real clock: every holder of the
builtin, the harness's saved reference included, now reads the scaled clock, and nothing the self-check compares
has changed. On a GPU the worker's region is read from CUDA events instead, and the evaluator's clock is the
number. It computes honestly.

Where the worker's report is the number (a CPU), the witness's clock, in the evaluator's process, sees the real
time. Stderr says what was patched and how the saved clock reads afterwards."""
import ctypes
import sys
import time

import harness.device
from _honest import honest

SCALE = 100


class MethodDef(ctypes.Structure):  # CPython's PyMethodDef
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int),
                ("ml_doc", ctypes.c_char_p)]


CFUNCTION = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.c_void_p)  # PyCFunction(self, unused)
_builtin = time.perf_counter_ns
_table = MethodDef.from_address(ctypes.c_void_p.from_address(id(_builtin) + 2 * ctypes.sizeof(ctypes.c_void_p)).value)
_real = CFUNCTION(_table.ml_meth)
_scaled = CFUNCTION(lambda module, unused: _real(module, None) // SCALE)  # kept alive: the table points at it
_before = harness.device._NOW()
_table.ml_meth = ctypes.cast(_scaled, ctypes.c_void_p).value
_mark = time.monotonic_ns()
while time.monotonic_ns() - _mark < 10_000_000:
    pass
print(f"[native_clock_patch] {_table.ml_name.decode()}'s C function now returns 1/{SCALE} of the clock; "
      f"harness.device._NOW is the same object ({harness.device._NOW is _builtin}) and read "
      f"{(harness.device._NOW() - _before // SCALE) / 1e6:.2f} ms over 10 ms", file=sys.stderr, flush=True)


def custom_kernel(data):
    return honest(data)
