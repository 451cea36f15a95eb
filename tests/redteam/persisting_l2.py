"""Cheat (GPU): reserve persisting L2 so data survives the flush."""
import ctypes
import glob
import os

import torch
from _honest import honest

_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
_cudart = ctypes.CDLL((glob.glob(os.path.join(_lib, "libcudart.so*")) or ["libcudart.so"])[0])


def custom_kernel(data):
    _cudart.cudaDeviceSetLimit(0x06, ctypes.c_size_t(32 << 20))
    return honest(data)
