"""Which import maps the CUDA driver, and whether it starts it (cuCtxGetCurrent answers 3, not initialized)."""
import importlib, sys, ctypes
def state():
    maps = "libcuda.so" in open("/proc/self/maps").read()
    if not maps: return "unmapped"
    c = ctypes.c_void_p(); r = ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent(ctypes.byref(c))
    return f"mapped, cuCtxGetCurrent={r}"
print("start", state())
for name in ["torch", "numpy", "pandas", "triton", "harness.device", "harness.hold", "harness.precheck", "harness.evaluator.runner", "harness.views.report", "harness.worker.__main__", "harness.worker.confine"]:
    importlib.import_module(name); print(name, state())
from harness.startup import triton_key; triton_key(); print("triton_key", state())
import torch; print(torch.cuda.is_available(), state())
