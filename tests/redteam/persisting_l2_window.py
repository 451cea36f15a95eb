"""Attack (GPU: the persisting-L2 carve-out, gpu-mode/pygpubench pull request #49): reserve a set-aside part of the
L2 and mark the inputs persisting through an access-policy window on the stream the calls run on. A flush that
writes over the L2 cannot evict lines held in the carve-out, and resetting persisting lines
(cudaCtxResetPersistingL2Cache) alone did not undo a carve-out in pygpubench; its fix also set the limit back.
Every call here sets the limit to the most this GPU offers and a window over the call's largest operand, with the
hit ratio the carve-out can hold, and the worker's self-check, which reads its own context's limit after every
sample, is silenced first (a method it does not cover). Our evaluator resets persisting lines in its own context
before each flush; whether that reaches lines this context marked is what a GPU run must show.

NVFP4_ARENA_L2_WINDOW=0 runs the same file without the carve-out (to compare the two numbers);
NVFP4_ARENA_L2_KERNEL names a submission file whose custom_kernel computes (a lineage version), else the plain-torch
gemm of _honest. Stderr says what was set and what the limit reads back."""
import ctypes
import glob
import os
import sys

import torch

from _honest import kernel_from

if not torch.cuda.is_available():
    raise RuntimeError("this file needs a CUDA GPU: a persisting-L2 carve-out is a GPU's")
LIMIT_PERSISTING_L2 = 0x06
ATTR_MAX_PERSISTING_L2, ATTR_MAX_WINDOW = 108, 109
STREAM_ATTR_ACCESS_POLICY_WINDOW = 1
NORMAL, PERSISTING = 0, 2
WINDOW = os.environ.get("NVFP4_ARENA_L2_WINDOW", "1") != "0"
_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
_cudart = ctypes.CDLL((glob.glob(os.path.join(_lib, "libcudart.so*")) or ["libcudart.so"])[0])
_compute = kernel_from("NVFP4_ARENA_L2_KERNEL")


class AccessPolicyWindow(ctypes.Structure):
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int)]


class StreamAttrValue(ctypes.Union):  # cudaStreamAttrValue (cudaLaunchAttributeValue): 64 bytes
    _fields_ = [("accessPolicyWindow", AccessPolicyWindow), ("pad", ctypes.c_char * 64)]


def attribute(which: int) -> int:
    value = ctypes.c_int(0)
    _cudart.cudaDeviceGetAttribute(ctypes.byref(value), which, torch.cuda.current_device())
    return value.value


MOST, MOST_WINDOW = attribute(ATTR_MAX_PERSISTING_L2), attribute(ATTR_MAX_WINDOW)
_said = {}
_sample = sys.modules.get("harness.worker.sample")
if WINDOW and _sample is not None:
    _sample.SelfCheck.findings = lambda self: []


def carve_out(tensor: torch.Tensor):
    set_rc = _cudart.cudaDeviceSetLimit(LIMIT_PERSISTING_L2, ctypes.c_size_t(MOST))
    nbytes = min(tensor.numel() * tensor.element_size(), MOST_WINDOW)
    value = StreamAttrValue()
    value.accessPolicyWindow = AccessPolicyWindow(tensor.data_ptr(), nbytes, min(1.0, MOST / max(nbytes, 1)),
                                                  PERSISTING, NORMAL)
    window_rc = _cudart.cudaStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                                               STREAM_ATTR_ACCESS_POLICY_WINDOW, ctypes.byref(value))
    if not _said:
        limit = ctypes.c_size_t(0)
        _cudart.cudaDeviceGetLimit(ctypes.byref(limit), LIMIT_PERSISTING_L2)
        _said["it"] = True
        print(f"[persisting_l2_window] limit set to {MOST} bytes (rc {set_rc}, reads back {limit.value}); window over "
              f"{nbytes} bytes at hit ratio {value.accessPolicyWindow.hitRatio:.2f} (rc {window_rc})",
              file=sys.stderr, flush=True)


def custom_kernel(data):
    if WINDOW:
        carve_out(max(data[:-1], key=lambda t: t.numel() * t.element_size()))
    return _compute(data)
