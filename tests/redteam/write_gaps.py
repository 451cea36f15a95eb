"""Attack (work before the clock opens, GPU): compute a sample's outputs while the evaluator is still writing its
inputs, in the turns the GPU gives the worker's context inside those writes. The evaluator's stream writes one slot
after another, each copy queued by its host, then flushes, opens its clock and says "go". Where its stream runs dry
between two copies (the host queues more slowly than the copy engine copies), or its time slice ends inside them, a
context with work it can run may take the GPU. This file keeps such work ready: before saying "queued" it zeroes the
first word of each slot's first input (the evaluator's write overwrites it, so its input check finds nothing), and
queues on a stream of its own that does not wait for "go", per slot k, a wait until slot k+1's first word is no
longer zero (the evaluator's stream has finished slot k then, as it copies the slots in order), then slot k's
product into its c; the last slot waits for "go" itself. Each call on the worker's stream only waits for its slot's
product. A turn inside the writes lengthens them alike in every sample, so the job's quickest writes do not show
it, and the products made in it are outside the clock's window; the judge sets the writes against the null samples'
model of them too, and charges an interrupted sample its overrun (harness.evaluator.judge). Outputs are right. Stderr says, per sample, how many products were finished before "go" (its stream's mark after
"go" against each product's event); none means the GPU gave no turn inside the writes and the work was priced."""
import ctypes
import sys

import torch

from _honest import E2M1, acted, honest

WAIT_AND = 2  # CU_STREAM_WAIT_VALUE_AND: wait until (*addr & value) != 0
WAIT_GEQ = 0
GO = 0  # harness.stream_words: the index of "go" among the clock's words
_gpu = torch.cuda.is_available()
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
    """How many of the last sample's products were finished before its stream's mark after "go"."""
    if _state["last"] is None:
        return
    mark, ends = _state["last"]
    _state["last"] = None
    leads = [end.elapsed_time(mark) * 1e3 for end in ends]  # µs from a product's end to the mark; > 0: before it
    early = [lead for lead in leads if lead > 0]
    lead = f" (the first {max(early):.0f} µs before it)" if early else ""
    acted("write_gaps", f"sample {_state['sample']}: {len(early)} of {len(ends)} products finished before \"go\"{lead}")


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
    ends = []
    with torch.cuda.stream(_side):
        for k, data in enumerate(batch):
            if k + 1 < len(batch):
                rc = _wait(side, batch[k + 1][0].data_ptr(), 0xFFFFFFFF, WAIT_AND)  # slot k+1 begun: slot k written
            else:
                rc = _wait(side, go, sequence & 0xFFFFFFFF, WAIT_GEQ)  # the last slot: after "go", as it should be
            if rc != 0:
                raise RuntimeError(f"cuStreamWaitValue32 failed with CUDA driver error {rc}")
            _product(data)
            end = torch.cuda.Event(enable_timing=True)
            end.record(_side)
            ends.append(end)
            _state["pending"][data[-1].data_ptr()] = end
    mark = torch.cuda.Event(enable_timing=True)
    mark.record()  # on the worker's stream, behind its wait for "go" and its start event
    _state["last"] = (mark, ends)


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
    if sample["batch"][0] is data:
        _arm(sample)
    torch.cuda.current_stream().wait_event(_state["pending"].pop(c.data_ptr()))
    return c
