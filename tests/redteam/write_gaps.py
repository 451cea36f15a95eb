"""Attack (work before the clock opens, GPU): compute a sample's outputs while the evaluator is still writing its
inputs, in turns the GPU gives the worker's context inside those writes. The evaluator's stream writes one slot after
another, then flushes, opens its clock and says "go". Where its stream runs dry between two copies, or its time slice
ends inside them, a context with work it can run may take the GPU. This file keeps such work ready: before saying
"queued" it zeroes the first word of each slot's first input (the evaluator's write overwrites it, so its input check
finds nothing), and queues on a stream of its own that does not wait for "go", per slot k, a wait until slot k+1's
first word is no longer zero (the evaluator's stream has finished slot k then, as it copies the slots in order), then
slot k's product into its c; the last slot waits for "go" itself. Each call on the worker's stream only waits for
its slot's product. Outputs are right.

Stderr says, per sample, how long its products ran on the GPU (the sum of each product's own events): where the
record's window per sample less the clock's fixed cost (its mean per call times the calls) is shorter than that sum,
products ran outside the window. A mark on the worker's own
stream after "go" cannot tell: it comes late while this file's stream holds the GPU (on an H200 it came after all 50
products of every sample, the first ended 6.4 ms before it, in samples whose whole writes take about 0.2 ms).
NVFP4_ARENA_WRITE_GAPS=honest runs the same products on the worker's stream, after "go": the twin to set its number
against."""
import ctypes
import os
import sys

import torch

from _honest import E2M1, acted, honest

WAIT_AND = 2  # CU_STREAM_WAIT_VALUE_AND: wait until (*addr & value) != 0
WAIT_GEQ = 0
GO = 0  # harness.stream_words: the index of "go" among the clock's words
_gpu = torch.cuda.is_available()
_honest_twin = os.environ.get("NVFP4_ARENA_WRITE_GAPS") == "honest"
_side = torch.cuda.Stream() if _gpu else None
_table = torch.tensor(E2M1, device="cuda") if _gpu else None  # on the device now: no host copy may wait for _side
_state = {"pending": {}, "last": None, "sample": 0}


def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    wait = getattr(lib, "cuStreamWaitValue32_v2", None) or lib.cuStreamWaitValue32
    wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
    memset = lib.cuMemsetD32Async
    memset.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
    return wait, memset


_wait, _memset = _driver() if _gpu else (None, None)


def _dequant(packed, scales):
    """_honest.dequant without its host-to-device copy of the table (a copy that waits for a waiting stream hangs)."""
    codes = packed.view(torch.uint8)
    vals = torch.stack((_table[(codes & 15).long()], _table[(codes >> 4).long()]), dim=-1).flatten(-2)
    return vals * scales.float().unsqueeze(-1).expand(*scales.shape, 16).flatten(-2)


def _product(data):
    a, b, sfa, sfb = data[:4]
    data[-1][:, :, 0] = (_dequant(a[:, :, 0], sfa[:, :, 0]) @ _dequant(b[:, :, 0], sfb[:, :, 0]).T).half()


def _sample():
    """The worker's timed sample this call belongs to (its frame's locals), if the evaluator's clock times it."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "timed_sample" and "batch" in frame.f_locals:
            found = frame.f_locals
            return found if found.get("clocked") else None
        frame = frame.f_back
    return None


def _report():
    """How long the last sample's products ran, each between its own events."""
    if _state["last"] is None:
        return
    spans = [start.elapsed_time(end) * 1e3 for start, end in _state["last"]]  # µs
    _state["last"] = None
    acted("write_gaps", f"sample {_state['sample']}: products ran {sum(spans):.0f} µs on the GPU")


def _arm(sample):
    """Queue the sample's products on the side stream, each behind its inputs' arrival."""
    _report()
    _state["sample"] += 1
    batch, sequence = sample["batch"], sample["sequence"]
    go = sample["device"].words.address + 4 * GO
    side = _side.cuda_stream
    for data in batch[1:]:  # each slot's first word zeroed: the evaluator's write of the slot makes it nonzero
        if _memset(data[0].data_ptr(), 0, 1, side) != 0:
            raise RuntimeError("cuMemsetD32Async failed")
    _side.synchronize()  # zeroed before "queued": the evaluator writes only after it
    events = []
    with torch.cuda.stream(_side):
        for k, data in enumerate(batch):
            if k + 1 < len(batch):
                rc = _wait(side, batch[k + 1][0].data_ptr(), 0xFFFFFFFF, WAIT_AND)  # slot k+1 begun: slot k written
            else:
                rc = _wait(side, go, sequence & 0xFFFFFFFF, WAIT_GEQ)  # the last slot: after "go", as it should be
            if rc != 0:
                raise RuntimeError(f"cuStreamWaitValue32 failed with CUDA driver error {rc}")
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(_side)
            _product(data)
            end.record(_side)
            events.append((start, end))
            _state["pending"][data[-1].data_ptr()] = end
    _state["last"] = events


def custom_kernel(data):
    if not _gpu:
        return honest(data)
    c = data[-1]
    sample = _sample()
    if sample is None:  # an untimed call: the same product on the side stream, which warms its path
        _side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(_side):
            _product(data)
        torch.cuda.current_stream().wait_stream(_side)
        return c
    if _honest_twin:
        _product(data)
        return c
    if sample["batch"][0] is data:
        _arm(sample)
    torch.cuda.current_stream().wait_event(_state["pending"].pop(c.data_ptr()))
    return c
