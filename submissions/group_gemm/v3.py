"""group_gemm v3 — taller tiles: each decoded B tile serves 128 rows of the group's A instead of 64.

Parent: v2. Idea: decode dominates; a group's B tiles are decoded again by each of its
ceil(m / BM) row tiles. With BM = 128, BN = 64 (was 64 x 128) the groups of the benchmark
(m from 40 to 320) decode B 1-3 times instead of 1-5, at the price of more padded MMA rows for
the smallest groups (the tensor cores are not the bottleneck).
Measured (H200, benchmark mode, L2 flushed): 1242.4 / 723.1 / 255.0 / 109.0 µs on the 4 benchmark
shapes, geomean 397.6 µs = 19.98x SOL; speed-up over the parent 0.63x. Kept, a regression on every
shape (geomean 250 -> 398 µs), for the same reason as dual_gemm v3; v5 returns to 64 x 128.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t

FIELDS = tl.constexpr(9)  # per group: a, b, c, sfa, sfb addresses; m, n, k; first tile


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
def _mma_scale_offsets(rows, cols, sf_cols):
    """Byte offsets of scale (row, col) in the contest's (32, 4, rest_mn, 4, rest_k) atom layout."""
    rest_k = (sf_cols + 3) // 4
    atom = (rows // 128) * rest_k + cols // 4
    return atom * 512 + (rows % 32) * 16 + ((rows % 128) // 32) * 4 + cols % 4


@triton.jit
def _group_gemm(table, G, BM: tl.constexpr, BN: tl.constexpr, BKB: tl.constexpr):
    pid = tl.program_id(0)
    g = 0
    for i in range(1, G):
        g = tl.where(pid >= tl.load(table + i * FIELDS + 8), i, g)
    row = table + g * FIELDS
    a_ptr = tl.load(row + 0).to(tl.pointer_type(tl.uint8))
    b_ptr = tl.load(row + 1).to(tl.pointer_type(tl.uint8))
    c_ptr = tl.load(row + 2).to(tl.pointer_type(tl.float16))
    sfa_ptr = tl.load(row + 3).to(tl.pointer_type(tl.float8e4nv))
    sfb_ptr = tl.load(row + 4).to(tl.pointer_type(tl.float8e4nv))
    M = tl.load(row + 5).to(tl.int32)
    N = tl.load(row + 6).to(tl.int32)
    KB = tl.load(row + 7).to(tl.int32) // 2
    tile = pid - tl.load(row + 8).to(tl.int32)
    tiles_m = tl.cdiv(M, BM)
    rm = (tile % tiles_m) * BM + tl.arange(0, BM)
    rn = (tile // tiles_m) * BN + tl.arange(0, BN)
    mask_m = rm < M
    mask_n = rn < N
    kb = tl.arange(0, BKB)
    ks = tl.arange(0, BKB // 8)
    sf_cols = KB // 8
    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for k0 in range(0, KB, BKB):
        a = tl.load(a_ptr + rm[:, None] * KB + k0 + kb[None, :], mask=mask_m[:, None], other=0)
        b = tl.load(b_ptr + rn[:, None] * KB + k0 + kb[None, :], mask=mask_n[:, None], other=0)
        sa = tl.load(sfa_ptr + _mma_scale_offsets(rm[:, None], k0 // 8 + ks[None, :], sf_cols),
                     mask=mask_m[:, None], other=0.0)
        sb = tl.load(sfb_ptr + _mma_scale_offsets(rn[:, None], k0 // 8 + ks[None, :], sf_cols),
                     mask=mask_n[:, None], other=0.0)
        a_low, a_high = _decode(a, sa, BM, BKB)
        b_low, b_high = _decode(b, sb, BN, BKB)
        acc = tl.dot(b_low, tl.trans(a_low), acc)
        acc = tl.dot(b_high, tl.trans(a_high), acc)
    c = c_ptr + rm[None, :] * N + rn[:, None]
    tl.store(c, acc.to(tl.float16), mask=mask_n[:, None] & mask_m[None, :])


BM, BN, BKB = 128, 64, 64  # BKB: packed bytes per K step (128 K elements)


def _check_layout(a, b, c, sfa_r, k):
    """The kernel assumes rows stored contiguously and the contest's MMA-layout scale buffer."""
    if not (a.stride(1) == 1 and a.stride(0) == k // 2 and b.stride(1) == 1 and b.stride(0) == k // 2
            and c.stride(1) == 1 and c.stride(0) == c.shape[1]):
        raise ValueError("group_gemm v1 expects row-contiguous a, b and c as the contest creates them")
    if sfa_r.stride()[:5] != (16, 4, sfa_r.shape[4] * 512, 1, 512):
        raise ValueError("group_gemm v1 expects the contest's (32, 4, rest_m, 4, rest_k, l) scale layout")


def custom_kernel(data: input_t) -> output_t:
    abc, _, sfasfb_reordered, sizes = data
    rows, tiles = [], 0
    for (a, b, c), (sfa_r, sfb_r), (m, n, k, l) in zip(abc, sfasfb_reordered, sizes):
        assert l == 1 and k % (2 * BKB) == 0
        _check_layout(a, b, c, sfa_r, k)
        rows += [a.data_ptr(), b.data_ptr(), c.data_ptr(), sfa_r.data_ptr(), sfb_r.data_ptr(), m, n, k, tiles]
        tiles += triton.cdiv(m, BM) * triton.cdiv(n, BN)
    device = abc[0][0].device
    table = torch.tensor(rows, dtype=torch.int64).to(device, non_blocking=True)
    _group_gemm[(tiles,)](table, len(abc), BM=BM, BN=BN, BKB=BKB, num_warps=8, num_stages=3)
    return [c for _, _, c in abc]
