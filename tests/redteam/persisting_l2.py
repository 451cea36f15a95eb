"""Cheat (GPU): reserve persisting L2 so data survives the flush.

It asks for as much persisting L2 as the GPU offers (up to 32 MiB) and reads the limit back. A GPU that refuses
the limit leaves the attack nothing to act on: it then stops with an error that says so, rather than passing as
an honest file would, so its test can tell "refused" from "not caught"."""
import ctypes
import glob
import os

import torch
from _honest import honest

_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
_cudart = ctypes.CDLL((glob.glob(os.path.join(_lib, "libcudart.so*")) or ["libcudart.so"])[0])
LIMIT_PERSISTING_L2 = 0x06
ATTR_MAX_PERSISTING_L2 = 108
REFUSED = "this GPU refused a persisting-L2 limit"


def reserve() -> None:
    most = ctypes.c_int(0)
    if _cudart.cudaDeviceGetAttribute(ctypes.byref(most), ATTR_MAX_PERSISTING_L2, torch.cuda.current_device()):
        raise RuntimeError("cudaDeviceGetAttribute failed: the most persisting L2 this GPU offers is unknown")
    rc = _cudart.cudaDeviceSetLimit(LIMIT_PERSISTING_L2, ctypes.c_size_t(min(32 << 20, most.value)))
    now = ctypes.c_size_t(0)
    _cudart.cudaDeviceGetLimit(ctypes.byref(now), LIMIT_PERSISTING_L2)
    if rc != 0 or now.value == 0:
        raise RuntimeError(f"{REFUSED}: cudaDeviceSetLimit returned {rc}, the most it offers is {most.value} bytes, "
                           f"the limit is {now.value} bytes")


def custom_kernel(data):
    reserve()
    return honest(data)
