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
"""
import torch
import triton
import triton.language as tl

THREADS_PER_SM = 2048  # resident-thread limit of sm_80..sm_100 SMs
WARPS = 32  # 1024 threads per program, two programs per SM


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

    def __init__(self, host_flag: torch.Tensor, timeout_ns: float):
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        self.programs = props.multi_processor_count * (THREADS_PER_SM // (WARPS * 32))
        self.timeout_ns = int(timeout_ns)
        self.host_flag = host_flag
        self.device_words = torch.zeros(2, dtype=torch.int32, device="cuda")  # [released, timed out]

    def engage(self):
        self.device_words.zero_()
        _hold_kernel[(self.programs,)](self.host_flag, self.device_words[0:], self.device_words[1:], self.timeout_ns,
                                       num_warps=WARPS)

    def timed_out(self) -> bool:
        """Whether the last hold ended on its timeout (synchronizes with its stream)."""
        return bool(self.device_words[1].item())
