"""dual_gemm v1 — one Triton kernel: both products from one decoded A tile, silu * up in the epilogue.

Parent: v0. Idea: replace torch's decode + two fp32 matmuls + silu·mul with one Triton kernel.
Each program owns a BN x BM tile of C^T (swap A/B: the n rows of B1/B2 supply the MMA's M
dimension, the rows of A its N dimension). Per K step it decodes the A tile once (exact fp16:
an e2m1 code placed at fp16 bits 9..11 reads as its value times 2^-14, an e4m3 byte placed at
bits 7..14 as its value times 2^-8; e2m1 x e4m3 is exact in fp16) and feeds it to two fp16
dots with fp32 accumulators, gate (B1) and up (B2). Low and high nibbles go to separate dots
(same sum, no interleave). The epilogue computes silu(gate) * up in fp32 and stores fp16.
Measured (H200, benchmark mode, L2 flushed): 210.2 / 402.3 / 117.7 / 400.7 µs on the 4 benchmark
shapes, geomean 251.3 µs = 7.77x SOL; speed-up over the parent 8.39x.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def _scales(raw):
    """e4m3 bytes (int16) -> exact fp16 values."""
    bits = ((raw & 0x7F) << 7) | ((raw & 0x80) << 8)
    return bits.to(tl.float16, bitcast=True) * 256.0


@triton.jit
def _decode(packed, raw_scales, ROWS: tl.constexpr, BYTES: tl.constexpr):
    """[ROWS, BYTES] packed e2m1 and [ROWS, BYTES // 8] e4m3 -> (low, high) nibbles as scaled fp16."""
    x = packed.to(tl.int16)
    low = (((x & 0x7) << 9) | ((x & 0x8) << 12)).to(tl.float16, bitcast=True) * 16384.0
    high = (((x & 0x70) << 5) | ((x & 0x80) << 8)).to(tl.float16, bitcast=True) * 16384.0
    s = _scales(raw_scales.to(tl.int16))
    s = tl.reshape(tl.broadcast_to(s[:, :, None], (ROWS, BYTES // 8, 8)), (ROWS, BYTES))
    return low * s, high * s


@triton.jit
def _dual_gemm(a_ptr, b1_ptr, b2_ptr, sfa_ptr, sfb1_ptr, sfb2_ptr, c_ptr, M, N, KB,
               s_am, s_al, s_bn, s_bl, s_sam, s_sal, s_sbn, s_sbl, s_cm, s_cn, s_cl,
               BM: tl.constexpr, BN: tl.constexpr, BKB: tl.constexpr):
    pid = tl.program_id(0)
    l = tl.program_id(1)
    tiles_m = tl.cdiv(M, BM)
    rm = (pid % tiles_m) * BM + tl.arange(0, BM)
    rn = (pid // tiles_m) * BN + tl.arange(0, BN)
    mask_m = rm < M
    mask_n = rn < N
    kb = tl.arange(0, BKB)
    ks = tl.arange(0, BKB // 8)
    a_rows = a_ptr + l * s_al + rm[:, None] * s_am
    b_off = l * s_bl + rn[:, None] * s_bn
    sa_rows = sfa_ptr + l * s_sal + rm[:, None] * s_sam
    sb_off = l * s_sbl + rn[:, None] * s_sbn
    gate = tl.zeros((BN, BM), dtype=tl.float32)
    up = tl.zeros((BN, BM), dtype=tl.float32)
    for k0 in range(0, KB, BKB):
        a = tl.load(a_rows + k0 + kb[None, :], mask=mask_m[:, None], other=0)
        sa = tl.load(sa_rows + k0 // 8 + ks[None, :], mask=mask_m[:, None], other=0)
        a_low, a_high = _decode(a, sa, BM, BKB)
        a_low, a_high = tl.trans(a_low), tl.trans(a_high)
        b1 = tl.load(b1_ptr + b_off + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sb1 = tl.load(sfb1_ptr + sb_off + k0 // 8 + ks[None, :], mask=mask_n[:, None], other=0)
        b1_low, b1_high = _decode(b1, sb1, BN, BKB)
        gate = tl.dot(b1_high, a_high, tl.dot(b1_low, a_low, gate))
        b2 = tl.load(b2_ptr + b_off + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sb2 = tl.load(sfb2_ptr + sb_off + k0 // 8 + ks[None, :], mask=mask_n[:, None], other=0)
        b2_low, b2_high = _decode(b2, sb2, BN, BKB)
        up = tl.dot(b2_high, a_high, tl.dot(b2_low, a_low, up))
    acc = gate / (1.0 + tl.exp(-gate)) * up
    c = c_ptr + l * s_cl + rm[None, :] * s_cm + rn[:, None] * s_cn
    tl.store(c, acc.to(tl.float16), mask=mask_n[:, None] & mask_m[None, :])


BM, BN, BKB = 64, 128, 64  # BKB: packed bytes per K step (128 K elements)


def custom_kernel(data: input_t) -> output_t:
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    m, kb, l = a.shape
    n = b1.shape[0]
    a8, b8, b28 = a.view(torch.uint8), b1.view(torch.uint8), b2.view(torch.uint8)
    sa8, sb8, sb28 = sfa.view(torch.uint8), sfb1.view(torch.uint8), sfb2.view(torch.uint8)
    assert kb % BKB == 0 and all(t.stride(1) == 1 for t in (a8, b8, b28, sa8, sb8, sb28))
    assert b8.stride() == b28.stride() and sb8.stride() == sb28.stride()
    grid = (triton.cdiv(m, BM) * triton.cdiv(n, BN), l)
    _dual_gemm[grid](
        a8, b8, b28, sa8, sb8, sb28, c, m, n, kb,
        a8.stride(0), a8.stride(2), b8.stride(0), b8.stride(2),
        sa8.stride(0), sa8.stride(2), sb8.stride(0), sb8.stride(2),
        c.stride(0), c.stride(1), c.stride(2),
        BM=BM, BN=BN, BKB=BKB, num_warps=8, num_stages=3,
    )
    return c
