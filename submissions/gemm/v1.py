"""gemm v1 — one Triton kernel: decode in registers, fp16 tensor cores, fp32 accumulate.

Parent: v0. Idea: replace the torch decode + fp32 matmul with one Triton kernel. Each program
owns a BN x BM tile of C^T (swap A/B: the wide operand B supplies the MMA's M dimension, the
128 rows of A its N dimension). Per K step it loads the packed bytes and the e4m3 scales of
both operands, decodes them to exact fp16 with integer bit tricks (an e2m1 code placed at fp16
bits 9..11 reads as its value times 2^-14; an e4m3 byte placed at bits 7..14 reads as its
value times 2^-8; both are exact), and multiplies by the scale (e2m1 x e4m3 is exact in fp16).
The low and high nibbles of a byte hold K elements 2j and 2j+1; instead of interleaving them,
the kernel issues two dots per step, low nibbles against low nibbles and high against high,
which is the same sum in another order.
Measured (H200, benchmark mode, L2 flushed): 316.2 / 160.4 / 54.7 µs on the 3 benchmark shapes,
geomean 140.5 µs = 14.68x SOL; speed-up over the parent 9.30x.
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
def _gemm(a_ptr, b_ptr, sfa_ptr, sfb_ptr, c_ptr, M, N, KB,
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
    b_rows = b_ptr + l * s_bl + rn[:, None] * s_bn
    sa_rows = sfa_ptr + l * s_sal + rm[:, None] * s_sam
    sb_rows = sfb_ptr + l * s_sbl + rn[:, None] * s_sbn
    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for k0 in range(0, KB, BKB):
        a = tl.load(a_rows + k0 + kb[None, :], mask=mask_m[:, None], other=0)
        b = tl.load(b_rows + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sa = tl.load(sa_rows + k0 // 8 + ks[None, :], mask=mask_m[:, None], other=0)
        sb = tl.load(sb_rows + k0 // 8 + ks[None, :], mask=mask_n[:, None], other=0)
        a_low, a_high = _decode(a, sa, BM, BKB)
        b_low, b_high = _decode(b, sb, BN, BKB)
        acc = tl.dot(b_low, tl.trans(a_low), acc)
        acc = tl.dot(b_high, tl.trans(a_high), acc)
    c = c_ptr + l * s_cl + rm[None, :] * s_cm + rn[:, None] * s_cn
    tl.store(c, acc.to(tl.float16), mask=mask_n[:, None] & mask_m[None, :])


BM, BN, BKB = 128, 128, 64  # BKB: packed bytes per K step (128 K elements)


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, c = data
    m, kb, l = a.shape
    n = b.shape[0]
    a8, b8 = a.view(torch.uint8), b.view(torch.uint8)
    sa8, sb8 = sfa.view(torch.uint8), sfb.view(torch.uint8)
    assert kb % BKB == 0 and a8.stride(1) == 1 and b8.stride(1) == 1 and sa8.stride(1) == 1 and sb8.stride(1) == 1
    grid = (triton.cdiv(m, BM) * triton.cdiv(n, BN), l)
    _gemm[grid](
        a8, b8, sa8, sb8, c, m, n, kb,
        a8.stride(0), a8.stride(2), b8.stride(0), b8.stride(2),
        sa8.stride(0), sa8.stride(2), sb8.stride(0), sb8.stride(2),
        c.stride(0), c.stride(1), c.stride(2),
        BM=BM, BN=BN, BKB=BKB, num_warps=8, num_stages=3,
    )
    return c
