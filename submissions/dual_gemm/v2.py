"""dual_gemm v2 — packed decode: 4 bytes per inline-PTX call, fp16x2 arithmetic.

Parent: v1. Idea: v1 decoded byte by byte with 16-bit integer ops that the compiler expanded into
many PRMT/IMAD/LOP3 (about 20 instructions per element). Here each 32-bit word of packed codes is
decoded by inline PTX (tl.inline_asm_elementwise, pack=4): per fp16x2 result two shifts, two masks,
an or, and two fp16x2 multiplies (by 2^14, then by the scale), plus one byte permute per register:
about 3.5 instructions per element. (A first attempt emitted the codes in a permuted K order,
trusting both operands to group the same 4 elements per register; the compiler groups the
register operand of the MMA differently, and every output was wrong.)
Measured (H200, benchmark mode, L2 flushed): 175.1 / 332.4 / 98.9 / 331.0 µs on the 4 benchmark
shapes, geomean 208.9 µs = 6.46x SOL; speed-up over the parent 1.20x.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t


# One 32-bit register of 4 packed bytes -> 4 scaled fp16 (two fp16x2 registers), byte i -> result i
# (the low call decodes the low nibbles, the high call the high ones). Which elements share a
# register is up to the compiler, so the map must be strictly elementwise: a byte permute first
# puts bytes (0, 1) and (2, 3) 16 bits apart, so one shift moves both codes of an fp16x2 pair.
# Codes placed at fp16 bits 9..11 (sign at 15) read as value * 2^-14; multiplying by 2^14
# (0x7400) and then by the e4m3 scale is exact.
_LOW = tl.constexpr("""{ .reg .b32 w, t, u, k; mov.b32 k, 0x74007400; prmt.b32 w, $2, 0, 0x3120;
shl.b32 t, w, 9; and.b32 t, t, 0x0E000E00; shl.b32 u, w, 12; and.b32 u, u, 0x80008000; or.b32 t, t, u;
mul.rn.f16x2 t, t, k; mul.rn.f16x2 $0, t, $3;
shl.b32 t, w, 1; and.b32 t, t, 0x0E000E00; shl.b32 u, w, 4; and.b32 u, u, 0x80008000; or.b32 t, t, u;
mul.rn.f16x2 t, t, k; mul.rn.f16x2 $1, t, $4; }""")
_HIGH = tl.constexpr("""{ .reg .b32 w, t, u, k; mov.b32 k, 0x74007400; prmt.b32 w, $2, 0, 0x3120;
shl.b32 t, w, 5; and.b32 t, t, 0x0E000E00; shl.b32 u, w, 8; and.b32 u, u, 0x80008000; or.b32 t, t, u;
mul.rn.f16x2 t, t, k; mul.rn.f16x2 $0, t, $3;
shr.b32 t, w, 3; and.b32 t, t, 0x0E000E00; and.b32 u, w, 0x80008000; or.b32 t, t, u;
mul.rn.f16x2 t, t, k; mul.rn.f16x2 $1, t, $4; }""")


@triton.jit
def _decode(packed, raw_scales, ROWS: tl.constexpr, BYTES: tl.constexpr):
    """[ROWS, BYTES] packed e2m1 and [ROWS, BYTES // 8] e4m3 -> (low, high) nibbles as scaled fp16."""
    s = raw_scales.to(tl.float16)
    s = tl.reshape(tl.broadcast_to(s[:, :, None], (ROWS, BYTES // 8, 8)), (ROWS, BYTES))
    low = tl.inline_asm_elementwise(_LOW, "=r,=r,r,r,r", [packed, s], dtype=tl.float16, is_pure=True, pack=4)
    high = tl.inline_asm_elementwise(_HIGH, "=r,=r,r,r,r", [packed, s], dtype=tl.float16, is_pure=True, pack=4)
    return low, high


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
        sa = tl.load(sa_rows + k0 // 8 + ks[None, :], mask=mask_m[:, None], other=0.0)
        a_low, a_high = _decode(a, sa, BM, BKB)
        a_low, a_high = tl.trans(a_low), tl.trans(a_high)
        b1 = tl.load(b1_ptr + b_off + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sb1 = tl.load(sfb1_ptr + sb_off + k0 // 8 + ks[None, :], mask=mask_n[:, None], other=0.0)
        b1_low, b1_high = _decode(b1, sb1, BN, BKB)
        gate = tl.dot(b1_high, a_high, tl.dot(b1_low, a_low, gate))
        b2 = tl.load(b2_ptr + b_off + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sb2 = tl.load(sfb2_ptr + sb_off + k0 // 8 + ks[None, :], mask=mask_n[:, None], other=0.0)
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
    sa8, sb8, sb28 = sfa, sfb1, sfb2
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
