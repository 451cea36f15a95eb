"""gemm v4 — decode A once: a small pass writes A as fp16, the GEMM reads it instead of decoding it.

Parent: v3. Idea: every program decoded its whole 128-row A tile at every K step, as much decode
work as for its B tile, and the same A tiles were decoded again by every one of the n / 128 column
tiles. A first kernel now decodes A (128 x K, 2 bytes per element: 4 MB on shape 1) once into two
fp16 planes (low nibbles, high nibbles) in the layout the GEMM's two dots read; the GEMM loads
those tiles from L2 and decodes only B. The decode pass is one extra launch per call.
Measured (H200, benchmark mode, L2 flushed): 179.1 / 178.2 / 160.4 µs on the 3 benchmark shapes,
geomean 172.4 µs = 18.01x SOL; speed-up over the parent 0.75x. Kept, a regression: on shape 1 the
GPU time did not drop (174 -> 179 µs; reading fp16 A tiles from L2 cost about what decoding them
did), and the extra launch and allocation raised host time to about 130 µs per call
(scripts/launch_overhead.py), which shapes 2 and 3 then measured.
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
def _decode_rows(a_ptr, sfa_ptr, out_ptr, M, KB, s_am, s_al, s_sam, s_sal,
                 BM: tl.constexpr, BKB: tl.constexpr):
    """A [M, KB bytes, l] -> fp16 out [l, 2, M, KB]: plane 0 the low nibbles, plane 1 the high ones."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    k0 = tl.program_id(1) * BKB
    l = tl.program_id(2)
    mask = rm[:, None] < M
    kb = tl.arange(0, BKB)
    a = tl.load(a_ptr + l * s_al + rm[:, None] * s_am + k0 + kb[None, :], mask=mask, other=0)
    sa = tl.load(sfa_ptr + l * s_sal + rm[:, None] * s_sam + k0 // 8 + tl.arange(0, BKB // 8)[None, :],
                 mask=mask, other=0.0)
    low, high = _decode(a, sa, BM, BKB)
    out = out_ptr + (l * 2 * M + rm[:, None]) * KB + k0 + kb[None, :]
    tl.store(out, low, mask=mask)
    tl.store(out + M * KB, high, mask=mask)


@triton.jit
def _gemm(a_ptr, b_ptr, sfb_ptr, c_ptr, M, N, KB,
          s_bn, s_bl, s_sbn, s_sbl, s_cm, s_cn, s_cl,
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
    a_rows = a_ptr + (l * 2 * M + rm[:, None]) * KB  # decoded A: low plane, high plane at + M * KB
    b_rows = b_ptr + l * s_bl + rn[:, None] * s_bn
    sb_rows = sfb_ptr + l * s_sbl + rn[:, None] * s_sbn
    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for k0 in range(k_first, k_first + part, BKB):
        a_low = tl.load(a_rows + k0 + kb[None, :], mask=mask_m[:, None], other=0.0)
        a_high = tl.load(a_rows + M * KB + k0 + kb[None, :], mask=mask_m[:, None], other=0.0)
        b = tl.load(b_rows + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sb = tl.load(sb_rows + k0 // 8 + ks[None, :], mask=mask_n[:, None], other=0.0)
        b_low, b_high = _decode(b, sb, BN, BKB)
        acc = tl.dot(b_low, tl.trans(a_low), acc)
        acc = tl.dot(b_high, tl.trans(a_high), acc)
    c = c_ptr + l * s_cl + rm[None, :] * s_cm + rn[:, None] * s_cn
    if SPLIT == 1:
        tl.store(c, acc.to(tl.float16), mask=mask_n[:, None] & mask_m[None, :])
    else:  # c_ptr is a zeroed fp32 workspace laid out like c
        tl.atomic_add(c, acc, mask=mask_n[:, None] & mask_m[None, :], sem="relaxed")


BM, BN, BKB = 128, 128, 64  # BKB: packed bytes per K step (128 K elements)
DECODE_ROWS = 64  # rows of A per program of the decode pass
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
    a16 = torch.empty((l, 2, m, kb), dtype=torch.float16, device=c.device)
    _decode_rows[(triton.cdiv(m, DECODE_ROWS), kb // BKB, l)](
        a8, sa8, a16, m, kb, a8.stride(0), a8.stride(2), sa8.stride(0), sa8.stride(2),
        BM=DECODE_ROWS, BKB=BKB, num_warps=4)
    out = c if split == 1 else torch.zeros((l, m, n), dtype=torch.float32, device=c.device).permute(1, 2, 0)
    _gemm[(tiles, l, split)](
        a16, b8, sb8, out, m, n, kb,
        b8.stride(0), b8.stride(2), sb8.stride(0), sb8.stride(2),
        out.stride(0), out.stride(1), out.stride(2),
        BM=BM, BN=BN, BKB=BKB, SPLIT=split, num_warps=8, num_stages=3,
    )
    if split > 1:
        c.copy_(out)
    return c
