"""A process's CUDA context, made on a thread of its own while the main thread imports torch: the evaluator's
(run.py) and the worker's, once it is confined (harness.worker), whose start-up the evaluator waits for.

Python's imports hold the GIL; the driver's calls, made through ctypes, do not. So the driver's start (cuInit) and
the device's primary context, the one torch takes when it first touches the GPU, are made beside the import instead
of after it. Where there is no driver, or a call fails, nothing is made and torch makes the context as before.
"""
import ctypes
import threading

DEVICE = 0  # the device torch uses first: ordinal 0 of those CUDA_VISIBLE_DEVICES shows


def _make() -> None:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    device, context = ctypes.c_int(), ctypes.c_void_p()
    if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(device), DEVICE) == 0:
        cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)  # held until the process ends, as torch holds it


def start() -> threading.Thread:
    thread = threading.Thread(target=_make, name="cuda-context", daemon=True)
    thread.start()
    return thread
