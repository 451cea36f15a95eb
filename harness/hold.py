"""The stream hold: a kernel that occupies every SM until the evaluator releases it.

nvbench's cold measurement, done with Triton so it builds for whatever GPU it runs on: the worker
enqueues this kernel, then the start event, the N calls and the end event, and says so; the
evaluator then writes the sample's inputs, flushes the L2 and releases the hold by writing a flag in
host memory both processes map (registered with CUDA here, so the kernel can poll it). The GPU
therefore starts the timed region with every call already queued, so host launch cost stays hidden,
as behind the contest's multi-millisecond L2 clear, and no correct output can exist before the
evaluator's clock starts, because the inputs did not. Every SM is filled (2048 resident threads
each), so no kernel from another stream of the worker can run during the hold; the busy SMs also
keep the clocks where the clear left them in the contest.

Program 0 polls the host flag and publishes it to a device word the other programs poll (one
PCIe reader instead of thousands). A hold that is never released (a submission that synchronizes
inside custom_kernel waits for the hold itself) is released by the evaluator after the contest
clear's duration, as the contest's clear would have ended; `timeout_ns` only ends a hold nobody
releases (the evaluator gone), and `timed_out` says so.

Built where no file can plant a build: Triton writes the kernel, its launcher and its driver helpers (native
code it loads) into TRITON_CACHE_DIR, and a worker may write its file's own build cache, so a hold built there
would run whatever an earlier run of the same file left in its place, before the witness calibrates. The
evaluator therefore builds the hold (`build`) in the harness's hold cache, which no worker may write, and a
worker starts with TRITON_CACHE_DIR pointing there, so its first launch (`warm`, while it starts up) finds every
piece built; it switches to the file's own cache before the submission is imported (FILE_TRITON_CACHE). Should the
hold cache lack a piece (a Triton or GPU the evaluator did not build for), the worker builds it in the file's cache,
and says so (`built_in`). Used on both sides of the process boundary: the evaluator builds, the worker engages.
"""
import mmap
import os
from contextlib import contextmanager

import torch
import triton
import triton.language as tl

from .protocol import FILE_TRITON_CACHE

THREADS_PER_SM = 2048  # resident-thread limit of sm_80..sm_100 SMs
WARPS = 32  # 1024 threads per program, two programs per SM
SAFETY_NS = 60e9  # a hold nobody releases (the evaluator gone) ends after this much GPU time


@triton.jit
def _now():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _hold_kernel(host_flag, device_flag, timed_out, timeout_ns):
    if tl.program_id(0) == 0:
        start = _now()
        released = tl.load(host_flag, volatile=True)
        late = 0
        while (released == 0) & (late == 0):
            released = tl.load(host_flag, volatile=True)
            late = (_now() - start > timeout_ns).to(tl.int32)
        tl.store(timed_out, late)
        tl.store(device_flag, 1)
    else:
        go = tl.load(device_flag, volatile=True)
        while go == 0:
            go = tl.load(device_flag, volatile=True)


class StreamHold:
    """One hold per sample: `engage()` before the start event; the evaluator releases it.

    host_flag: an int32 CPU tensor over the page the evaluator writes (harness.worker.__main__ maps and
    registers it)."""

    def __init__(self, host_flag: torch.Tensor, timeout_ns: float = SAFETY_NS):
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.programs = props.multi_processor_count * (THREADS_PER_SM // (WARPS * 32))
        self.timeout_ns = int(timeout_ns)
        self.host_flag = host_flag
        self.device_words = torch.zeros(2, dtype=torch.int32, device="cuda")  # [released, timed out]
        self.built_in = None  # "harness" or "file": the Triton cache its first engage found it built in

    def engage(self):
        self.device_words.zero_()
        if self.built_in is None:
            self.built_in = "harness"
            try:
                self._launch()
                return
            except OSError:  # a piece the hold cache lacks, which this worker may not write there
                self.built_in = "file"
                os.environ["TRITON_CACHE_DIR"] = os.environ.get(FILE_TRITON_CACHE, os.environ["TRITON_CACHE_DIR"])
        self._launch()

    def warm(self):
        """One hold launched on a released flag of its own while the worker starts up: a process's first launch
        checks Triton's cache (about 0.5 s on an H100), which would otherwise fall inside the first calibration
        sample, on the evaluator's path. Where the hold cache lacks a piece (the evaluator may still be building
        it), the first engage looks again."""
        try:
            with released_flag() as flag:
                self._launch(flag)
        except OSError:
            return
        self.built_in = "harness"

    def _launch(self, flag: torch.Tensor | None = None):
        flag = self.host_flag if flag is None else flag
        _hold_kernel[(self.programs,)](flag, self.device_words[0:], self.device_words[1:], self.timeout_ns,
                                       num_warps=WARPS)

    def timed_out(self) -> bool:
        """Whether the last hold ended on its timeout (synchronizes with its stream)."""
        return bool(self.device_words[1].item())


@contextmanager
def triton_cache(folder: str):
    """Triton's cache in `folder` while the block runs (Triton reads TRITON_CACHE_DIR at every use)."""
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = saved


@contextmanager
def released_flag():
    """A registered host page whose flag says released: a hold launched on it ends at once (synchronized on leaving)."""
    page = mmap.mmap(-1, 4096)
    flag = torch.frombuffer(page, dtype=torch.int32, count=1)
    flag.fill_(1)
    cudart = torch.cuda.cudart()
    cudart.cudaHostRegister(flag.data_ptr(), 4096, 0)
    try:
        yield flag
        torch.cuda.synchronize()
    finally:
        cudart.cudaHostUnregister(flag.data_ptr())


def build(folder: str) -> None:
    """The evaluator's build of the hold in the hold cache `folder`: one hold, released before it starts, launched
    as a worker launches it (a registered host page as its flag), so the kernel, its launcher and Triton's driver
    helpers are all written there."""
    with released_flag() as flag, triton_cache(folder):
        StreamHold(flag).engage()
