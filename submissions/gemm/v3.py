"""gemm v3 — split-K: enough programs to fill the 132 SMs on the thin shapes.

Parent: v2. Idea: with M = 128 and 128 x 128 tiles, the benchmark shapes have only 56, 32 and 56
tiles for 132 SMs, and each program is bound by its own decode work, so most SMs idled. K is now
split into the largest power of two of parts (at least 4 K steps each) that keeps the programs at
or under 264 (two per SM): 4 / 8 / 4 parts on the three shapes. Each part adds its fp32 partial
tile into a zeroed fp32 workspace with atomics; one cast writes c. Shapes with enough tiles keep
the single-pass fp16 store.
Measured (H200, benchmark mode, L2 flushed): 174.2 / 126.4 / 98.9 µs on the 3 benchmark shapes,
geomean 129.6 µs = 13.54x SOL; speed-up over the parent 0.88x. Kept, a regression on the geomean:
split-K gave shape 1 its first real gain (258 -> 174 µs), but the per-call torch.zeros and copy
added host time that shapes 2 and 3 could not hide (host-bound; v5 fixes that).
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
def _gemm(a_ptr, b_ptr, sfa_ptr, sfb_ptr, c_ptr, M, N, KB,
          s_am, s_al, s_bn, s_bl, s_sam, s_sal, s_sbn, s_sbl, s_cm, s_cn, s_cl,
          BM: tl.constexpr, BN: tl.constexpr, BKB: tl.constexpr, SPLIT: tl.constexpr):
    pid = tl.program_id(0)
    l = tl.program_id(1)
    part = KB // SPLIT  # packed bytes of K per split (a multiple of BKB)
    k_first = tl.program_id(2) * part
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
    for k0 in range(k_first, k_first + part, BKB):
        a = tl.load(a_rows + k0 + kb[None, :], mask=mask_m[:, None], other=0)
        b = tl.load(b_rows + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sa = tl.load(sa_rows + k0 // 8 + ks[None, :], mask=mask_m[:, None], other=0.0)
        sb = tl.load(sb_rows + k0 // 8 + ks[None, :], mask=mask_n[:, None], other=0.0)
        a_low, a_high = _decode(a, sa, BM, BKB)
        b_low, b_high = _decode(b, sb, BN, BKB)
        acc = tl.dot(b_low, tl.trans(a_low), acc)
        acc = tl.dot(b_high, tl.trans(a_high), acc)
    c = c_ptr + l * s_cl + rm[None, :] * s_cm + rn[:, None] * s_cn
    if SPLIT == 1:
        tl.store(c, acc.to(tl.float16), mask=mask_n[:, None] & mask_m[None, :])
    else:  # c_ptr is a zeroed fp32 workspace laid out like c
        tl.atomic_add(c, acc, mask=mask_n[:, None] & mask_m[None, :], sem="relaxed")


BM, BN, BKB = 128, 128, 64  # BKB: packed bytes per K step (128 K elements)
TARGET_PROGRAMS = 264  # two per SM on a 132-SM H200
MIN_STEPS = 4  # K steps per split at least


def _splits(tiles: int, steps: int) -> int:
    """Largest power of two <= TARGET_PROGRAMS / tiles that divides the K steps into >= MIN_STEPS each."""
    split = 1
    while tiles * split * 2 <= TARGET_PROGRAMS and steps % (split * 2) == 0 and steps // (split * 2) >= MIN_STEPS:
        split *= 2
    return split


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, c = data
    m, kb, l = a.shape
    n = b.shape[0]
    a8, b8 = a.view(torch.uint8), b.view(torch.uint8)
    sa8, sb8 = sfa, sfb
    assert kb % BKB == 0 and a8.stride(1) == 1 and b8.stride(1) == 1 and sa8.stride(1) == 1 and sb8.stride(1) == 1
    tiles = triton.cdiv(m, BM) * triton.cdiv(n, BN)
    split = _splits(tiles * l, kb // BKB)
    out = c if split == 1 else torch.zeros((l, m, n), dtype=torch.float32, device=c.device).permute(1, 2, 0)
    _gemm[(tiles, l, split)](
        a8, b8, sa8, sb8, out, m, n, kb,
        a8.stride(0), a8.stride(2), b8.stride(0), b8.stride(2),
        sa8.stride(0), sa8.stride(2), sb8.stride(0), sb8.stride(2),
        out.stride(0), out.stride(1), out.stride(2),
        BM=BM, BN=BN, BKB=BKB, SPLIT=split, num_warps=8, num_stages=3,
    )
    if split > 1:
        c.copy_(out)
    return c
