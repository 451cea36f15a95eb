"""group_gemm v1 — one Triton launch for all groups (the seed's V1: one kernel, flattened tile index).

Parent: v0. Idea: replace the per-group torch loop with a single kernel launch. The host writes
a small table per call (each group's a/b/c/scale addresses, m, n, k and first tile index) and
copies it to the GPU; each program finds its group by the flattened tile index, then computes
a BN x BM tile of that group's C^T (swap A/B: the group's n rows of B supply the MMA's M
dimension, its few rows of A the N dimension, so small m pads only to BM = 64). Operands are
decoded in registers to exact fp16 (e2m1 code at fp16 bits 9..11 = value x 2^-14; e4m3 byte
at bits 7..14 = value x 2^-8; e2m1 x e4m3 is exact in fp16) and fed to fp16 tensor cores with
fp32 accumulation, low and high nibbles as two dots. Scales are read from the contest's
device-side MMA-layout copies (the plain ones live on the CPU).
Measured (H200, benchmark mode, L2 flushed): 875.2 / 464.4 / 211.2 / 93.1 µs on the 4 benchmark
shapes, geomean 299.0 µs = 15.03x SOL; speed-up over the parent 19.73x.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t

FIELDS = tl.constexpr(9)  # per group: a, b, c, sfa, sfb addresses; m, n, k; first tile


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
    sfa_ptr = tl.load(row + 3).to(tl.pointer_type(tl.uint8))
    sfb_ptr = tl.load(row + 4).to(tl.pointer_type(tl.uint8))
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
                     mask=mask_m[:, None], other=0)
        sb = tl.load(sfb_ptr + _mma_scale_offsets(rn[:, None], k0 // 8 + ks[None, :], sf_cols),
                     mask=mask_n[:, None], other=0)
        a_low, a_high = _decode(a, sa, BM, BKB)
        b_low, b_high = _decode(b, sb, BN, BKB)
        acc = tl.dot(b_low, tl.trans(a_low), acc)
        acc = tl.dot(b_high, tl.trans(a_high), acc)
    c = c_ptr + rm[None, :] * N + rn[:, None]
    tl.store(c, acc.to(tl.float16), mask=mask_n[:, None] & mask_m[None, :])


BM, BN, BKB = 64, 128, 64  # BKB: packed bytes per K step (128 K elements)


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
