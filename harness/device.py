"""What we run on (GPU identity, versions, clocks) and the per-sample device chores:
timers, L2 flush and persisting-L2 reset. Everything degrades to wall-clock on a CPU."""
import ctypes
import glob
import os
import platform
import subprocess
import time

import torch

FLUSH_L2_MULTIPLE = 4  # the flush writes a buffer this many times the L2 size
CPU_NAME = "cpu"

# Saved before any submission is imported: timing goes through these, so patching the torch or
# time attributes later changes nothing we measure (harness.guard reports such patches).
_RECORD = torch.cuda.Event.record
_ELAPSED = torch.cuda.Event.elapsed_time
_EVENT_SYNC = torch.cuda.Event.synchronize
_SYNC = torch.cuda.synchronize
_NOW = time.perf_counter_ns


def has_gpu() -> bool:
    return torch.cuda.is_available()


def nvidia_smi(query: str) -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0:
        return []
    return [v.strip() for v in out.stdout.splitlines()[0].split(",")] if out.stdout.strip() else []


def clocks() -> dict:
    values = nvidia_smi("clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw")
    keys = ("sm_mhz", "mem_mhz", "max_sm_mhz", "temp_c", "power_w")
    return dict(zip(keys, values))


def describe() -> dict:
    """Identity and versions of the device that times; a plain dict for result records."""
    info = {"torch": torch.__version__, "python": platform.python_version(), "host": platform.node()}
    try:
        import triton
        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = None
    if not has_gpu():
        info.update(name=CPU_NAME, cpu=platform.processor() or platform.machine(), threads=torch.get_num_threads())
        return info
    props = torch.cuda.get_device_properties(0)
    smi = nvidia_smi("driver_version")
    info.update(
        name=props.name,
        cc=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        l2_bytes=getattr(props, "L2_cache_size", None),
        memory_bytes=props.total_memory,
        cuda=torch.version.cuda,
        driver=smi[0] if smi else None,
        clocks=clocks(),
    )
    return info


def _cudart():
    """The CUDA runtime library, for the two calls torch does not expose (None if not found)."""
    roots = [os.path.join(os.path.dirname(torch.__file__), "lib")]
    try:
        import nvidia.cuda_runtime
        roots += [os.path.join(p, "lib") for p in nvidia.cuda_runtime.__path__]
    except ImportError:
        pass
    names = [p for root in roots for p in sorted(glob.glob(os.path.join(root, "libcudart.so*")))]
    for name in names + ["libcudart.so"]:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class DeviceChores:
    """Per-sample chores before a timed region: flush L2 and drop persisting-L2 windows."""

    CUDA_LIMIT_PERSISTING_L2 = 0x06

    def __init__(self):
        self.gpu = has_gpu()
        self.flush_buffer = None
        self.cudart = None
        if self.gpu:
            l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 64 << 20
            self.flush_buffer = torch.empty(FLUSH_L2_MULTIPLE * l2 // 4, dtype=torch.int32, device="cuda")
            self.cudart = _cudart()

    def reset_persisting_l2(self) -> bool:
        if self.cudart is None:
            return False
        ok = self.cudart.cudaDeviceSetLimit(self.CUDA_LIMIT_PERSISTING_L2, ctypes.c_size_t(0)) == 0
        return self.cudart.cudaCtxResetPersistingL2Cache() == 0 and ok

    def before_sample(self):
        if self.gpu:
            self.reset_persisting_l2()
            self.flush_buffer.fill_(0x2A)

    def synchronize(self):
        if self.gpu:
            _SYNC()


class RegionTimer:
    """Times a region: CUDA events on a GPU, perf_counter on a CPU. elapsed_ns() after stop()."""

    def __init__(self, gpu: bool):
        self.gpu = gpu
        if gpu:
            self.start_event = torch.cuda.Event(enable_timing=True)
            self.end_event = torch.cuda.Event(enable_timing=True)

    def start(self):
        if self.gpu:
            _RECORD(self.start_event)
        else:
            self.t0 = _NOW()

    def stop(self):
        if self.gpu:
            _RECORD(self.end_event)
        else:
            self.t1 = _NOW()

    def wait(self) -> int:
        """Block until the region's end is reached on the device; returns the host time then."""
        if self.gpu:
            _EVENT_SYNC(self.end_event)
        return _NOW()

    def elapsed_ns(self) -> float:
        if self.gpu:
            _EVENT_SYNC(self.end_event)
            return _ELAPSED(self.start_event, self.end_event) * 1e6
        return float(self.t1 - self.t0)
