"""Start-up work a process does on threads of its own while its main thread imports torch.

Python's imports hold the GIL; the driver's calls made through ctypes and hashlib's digests of large buffers do not.
So, beside the import:
- the CUDA driver's start (cuInit) and the device's primary context, the one torch takes when it first touches the
  GPU: the evaluator's (run.py) and the worker's, once it is confined (harness.worker);
- in the worker, Triton's import and its cache key (a digest of Triton's sources and of libtriton, about 0.3 s),
  which the first launch of any Triton kernel of the file needs, so that its first call does not pay for it.
Where there is no driver, no Triton, or a call fails, nothing is made and the main thread does the work as before.
"""
import ctypes
import threading

DEVICE = 0  # the device torch uses first: ordinal 0 of those CUDA_VISIBLE_DEVICES shows


def _cuda_context() -> None:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    device, context = ctypes.c_int(), ctypes.c_void_p()
    if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(device), DEVICE) == 0:
        cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)  # held until the process ends, as torch holds it


def triton_key() -> None:
    """Triton's cache key, computed once for the process (nothing where there is no Triton)."""
    try:
        from triton.runtime.cache import triton_key as key  # Triton 3.3 and later; kept for the process (lru_cache)
        key()
    except Exception:  # noqa: BLE001 - no Triton, another layout of it: its first launch computes the key itself
        return


def start(triton: bool = False) -> None:
    """The CUDA context, and with `triton` Triton's cache key, each on a thread of its own."""
    for job in [_cuda_context, *([triton_key] if triton else [])]:
        threading.Thread(target=job, name=f"startup{job.__name__}", daemon=True).start()
