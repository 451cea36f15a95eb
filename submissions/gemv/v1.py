"""gemv v1 — one Triton kernel instead of torch ops.

Parent: v0. Idea: fuse decode, scale and dot product in one memory-bound Triton kernel. Each
program owns BLOCK_M rows of one batch and walks K; packed bytes are loaded as a
[BLOCK_M, blocks, 8] tile (8 bytes = one 16-element scale block), both nibbles decoded with
integer arithmetic to exact fp32, multiplied with the decoded vector, summed per scale block,
then scaled by sfa * sfb and accumulated in fp32. The vector b (row 0 only) is decoded per
K chunk by every program and stays in L1/L2.
Measured (H200, benchmark mode, 8 runs): 333-375 / 505-549 / 160-198 µs, geomean 305-343 µs
(v0: 4017.8 µs, so about 12x); leaderboard mode 335.4 / 510.1 / 162.2 µs, geomean 302.8 µs.
That is still 22-25x the 13.8 µs geomean SOL: 58.7 MB in 335 µs is 0.18 TB/s, so the loads
are starved. Not yet profiled; the next versions attack bytes in flight and the decode cost.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def _e2m1(n):
    """Packed e2m1 nibble (int32 0..15) -> exact fp32 value."""
    e = (n >> 1) & 3
    m = n & 1
    twice = tl.where(e == 0, m, (2 + m) << tl.maximum(e - 1, 0))
    value = twice.to(tl.float32) * 0.5
    return tl.where((n & 8) != 0, -value, value)


@triton.jit
def _gemv(a_ptr, b_ptr, sfa_ptr, sfb_ptr, c_ptr, M, KB,
          s_am, s_al, s_bl, s_sam, s_sal, s_sbl, s_cm, s_cl,
          BLOCK_M: tl.constexpr, NB: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_l = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    blk = tl.arange(0, NB)
    byte = tl.arange(0, 8)
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for kb0 in range(0, KB, NB * 8):
        cols = kb0 + blk[:, None] * 8 + byte[None, :]  # [NB, 8] byte offsets
        a = tl.load(a_ptr + pid_l * s_al + rows[:, None, None] * s_am + cols[None, :, :]).to(tl.int32)
        b = tl.load(b_ptr + pid_l * s_bl + cols).to(tl.int32)
        prod = _e2m1(a & 15) * _e2m1(b & 15)[None, :, :] + _e2m1(a >> 4) * _e2m1(b >> 4)[None, :, :]
        block_sum = tl.sum(prod, axis=2)  # [BLOCK_M, NB]
        sb = kb0 // 8 + blk
        sfa = tl.load(sfa_ptr + pid_l * s_sal + rows[:, None] * s_sam + sb[None, :]).to(tl.float32)
        sfb = tl.load(sfb_ptr + pid_l * s_sbl + sb).to(tl.float32)
        acc += tl.sum(block_sum * sfa * sfb[None, :], axis=1)
    tl.store(c_ptr + pid_l * s_cl + rows * s_cm, acc.to(tl.float16))


BLOCK_M = 16
NB = 16  # scale blocks per K step: 128 bytes of each row


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, c = data
    m, kb, l = a.shape
    a8, b8 = a.view(torch.uint8), b.view(torch.uint8)
    _gemv[(m // BLOCK_M, l)](
        a8, b8, sfa, sfb, c, m, kb,
        a8.stride(0), a8.stride(2), b8.stride(2), sfa.stride(0), sfa.stride(2), sfb.stride(2), c.stride(0), c.stride(2),
        BLOCK_M=BLOCK_M, NB=NB,
    )
    return c
