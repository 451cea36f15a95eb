"""What we run on (GPU identity, versions, clocks), and the operations the worker's timed sample issues to
it: synchronize, the contest's clear, the wait for the evaluator's "go" and the write of "done" (the evaluator's
clock: harness.evaluator.clock), start and end events (the evaluator writes the inputs and flushes the L2 itself:
harness.evaluator.evaluation).

`GpuDevice` issues them to CUDA; `HostDevice` is the CPU stand-in (no clear, wall-clock timer). The worker's
sample (harness.worker.sample) sees only these methods, so a test can hand it a device that records the
sequence of operations instead.
"""
import ctypes
import glob
import os
import platform
import subprocess
import time

import torch

from .stream_words import DONE, GO, StreamWords

FLUSH_L2_MULTIPLE = 4  # the flush writes a buffer this many times the L2 size
CUDA_LIMIT_PERSISTING_L2 = 0x06
CLEAR_CHUNK_BYTES = 4 << 30  # the contest's clear is redone in pieces of this size (its 4 GiB clear in one)
CPU_NAME = "cpu"

# Saved when the worker starts, before any submission is imported: a submission that patches the torch or
# time attributes later does not change these references (a speed bump only: the evaluator's witness is
# what bounds a forged time).
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


CLOCK_FIELDS = {"clocks.sm": "sm_mhz", "clocks.mem": "mem_mhz", "clocks.max.sm": "max_sm_mhz",
                "temperature.gpu": "temp_c", "power.draw": "power_w"}


def driver_and_clocks() -> tuple[str | None, dict]:
    """The driver's version and the GPU's clocks, temperature and power now, from one nvidia-smi call."""
    values = nvidia_smi(",".join(["driver_version", *CLOCK_FIELDS]))
    return (values[0] if values else None), dict(zip(CLOCK_FIELDS.values(), values[1:]))


def flush_bytes() -> int:
    """How many bytes the evaluator's L2 flush writes: FLUSH_L2_MULTIPLE times this GPU's L2, or of 64 MiB where CUDA
    does not say."""
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 64 << 20
    return FLUSH_L2_MULTIPLE * l2


def package_version(name: str) -> str | None:
    """An installed distribution's version, without importing it (importing triton took a noticeable share of
    a run's start on a GPU machine)."""
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def name() -> str:
    """The timing device's name, as records carry it (without describe()'s nvidia-smi calls)."""
    return torch.cuda.get_device_properties(0).name if has_gpu() else CPU_NAME


def describe() -> dict:
    """Identity and versions of the device that times; a plain dict for result records."""
    info = {"torch": torch.__version__, "python": platform.python_version(), "host": platform.node(),
            "triton": package_version("triton") or package_version("pytorch-triton")}
    if not has_gpu():
        info.update(name=CPU_NAME, cpu=platform.processor() or platform.machine(), threads=torch.get_num_threads())
        return info
    props = torch.cuda.get_device_properties(0)
    driver, clocks = driver_and_clocks()
    info.update(
        name=props.name,
        cc=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        l2_bytes=getattr(props, "L2_cache_size", None),
        memory_bytes=props.total_memory,
        cuda=torch.version.cuda,
        driver=driver,
        clocks=clocks,
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



def persisting_l2_limit(cudart) -> int:
    if cudart is None:
        return 0
    value = ctypes.c_size_t(0)
    if cudart.cudaDeviceGetLimit(ctypes.byref(value), CUDA_LIMIT_PERSISTING_L2) != 0:
        return 0
    return value.value


class GpuDevice:
    """The stream operations of a timed sample on the current CUDA device."""

    gpu = True

    def __init__(self, clear_bytes: int):
        self.cudart = _cudart()
        self.clear_bytes = clear_bytes
        self.clear_buffer = torch.empty(min(CLEAR_CHUNK_BYTES, clear_bytes) // 4, dtype=torch.float32, device="cuda")
        self.clear_ns = self._clear_duration_ns()
        self.start_event = torch.cuda.Event(enable_timing=True)
        self.end_event = torch.cuda.Event(enable_timing=True)
        self.marker_event = torch.cuda.Event()
        self.words = None  # the evaluator's clock words, once mapped (map_clock)
        self.touched = torch.zeros(2 * flush_bytes() // FLUSH_L2_MULTIPLE // 4, dtype=torch.float32, device="cuda")
        self.touch_sum = torch.zeros((), dtype=torch.float32, device="cuda")
        self.touch()  # its kernel loaded now: nothing may load one while the stream waits for "go"
        _SYNC()

    def _clear_duration_ns(self) -> float:
        """How long the contest's clear keeps this GPU busy (median of three): how long the evaluator waits for a
        sample's calls to be queued before it says "go" anyway (a kernel that synchronizes inside waits for it)."""
        times = []
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            _RECORD(start)
            self.contest_clear()
            _RECORD(end)
            _EVENT_SYNC(end)
            times.append(_ELAPSED(start, end) * 1e6)
        return sorted(times)[1]

    def now(self) -> int:
        return _NOW()

    def synchronize(self):
        _SYNC()

    def reset_persisting_l2(self) -> bool:
        if self.cudart is None:
            return False
        ok = self.cudart.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2, ctypes.c_size_t(0)) == 0
        return self.cudart.cudaCtxResetPersistingL2Cache() == 0 and ok

    def persisting_l2_limit(self) -> int:
        return persisting_l2_limit(self.cudart)

    def contest_clear(self):
        """The contest's: a float32 randn of its clear size (4 or 62.5 GiB), queued with no synchronize.
        The same normal-distribution kernel writes the same bytes, in 4 GiB pieces of one buffer, so a
        GPU without 62.5 GiB free (an 80 GB H100 beside the inputs) runs it too, without the allocator
        mapping and unmapping 62.5 GiB every sample."""
        self.reset_persisting_l2()
        done = 0
        while done < self.clear_bytes:
            n = min(CLEAR_CHUNK_BYTES, self.clear_bytes - done)
            self.clear_buffer[:n // 4].normal_()
            done += n

    def map_clock(self, handle: str):
        """Map the evaluator's clock words (harness.evaluator.clock), which this process's stream waits for and
        writes."""
        from .layout import open_cuda
        self.clock_buffer = open_cuda(handle)
        self.words = StreamWords(self.clock_buffer.data_ptr())

    def wait_go(self, sequence: int):
        """The stream waits for the evaluator's "go" of this sample before anything queued after it."""
        self.words.wait(torch.cuda.current_stream().cuda_stream, GO, sequence)

    def signal_done(self, sequence: int):
        """The stream writes "done" for this sample once everything queued before it on this stream has run."""
        self.words.write(torch.cuda.current_stream().cuda_stream, DONE, sequence)

    def touch(self):
        """A null sample's stand-in for calls: a read of twice the L2 into one value. The evaluator's clock pays a
        few µs more to take the GPU back from a context that touched memory than from one that touched none, so its
        calibration measures the hand-over after a call's footprint (harness.evaluator.clock)."""
        torch.sum(self.touched, dim=0, out=self.touch_sum)

    def start(self):
        _RECORD(self.start_event)

    def stop(self):
        _RECORD(self.end_event)

    def wait_end(self) -> int:
        """Block until the end event is reached; the host time then."""
        return self.wait_for(self.end_event)

    def pending_ns(self, end_reached_ns: int) -> float:
        """How long a device-wide synchronize still waited after the end event was reached: work on
        other streams outlasting the timed region. Nothing runs between the two host clock reads."""
        _SYNC()
        return float(_NOW() - end_reached_ns)

    def idle_pending_ns(self) -> float:
        """The same measurement with nothing left to wait for, taken at once: what this host and driver
        add to a synchronize right after a busy region (the escape watch's per-sample control)."""
        _RECORD(self.marker_event)
        return self.pending_ns(self.wait_for(self.marker_event))

    def wait_for(self, event) -> int:
        _EVENT_SYNC(event)
        return _NOW()

    def elapsed_ns(self) -> float:
        return _ELAPSED(self.start_event, self.end_event) * 1e6


class HostDevice:
    """The CPU stand-in: calls are synchronous, the region is wall-clock, nothing to flush, no clock of the
    evaluator's to wait for."""

    gpu = False
    cudart = None
    clear_ns = None

    def touch(self):
        pass

    def now(self) -> int:
        return _NOW()

    def synchronize(self):
        pass

    def reset_persisting_l2(self) -> bool:
        return False

    def persisting_l2_limit(self) -> int:
        return 0

    def contest_clear(self):
        pass

    def start(self):
        self.t0 = _NOW()

    def stop(self):
        self.t1 = _NOW()

    def wait_end(self) -> int:
        return _NOW()

    def pending_ns(self, end_reached_ns: int) -> float:
        return 0.0

    def idle_pending_ns(self) -> float:
        return 0.0

    def elapsed_ns(self) -> float:
        return float(self.t1 - self.t0)


def open_device(clear_bytes: int):
    """The device the worker times on: the current GPU, or the host when there is none."""
    return GpuDevice(clear_bytes) if has_gpu() else HostDevice()
