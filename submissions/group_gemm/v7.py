"""group_gemm v7 — half-size programs (64 x 64 tiles, 4 warps) so more share an SM.

Parent: v6. Idea: Nsight Compute on v6 (shape 1: 321 µs) showed 128 registers per thread with 8
warps, 23% occupancy (3.6 warps per scheduler, 1.1 eligible), 49% of issue slots busy and 9.3% of
DRAM bandwidth. v7 halves each program (BN = 64, one warpgroup) so more programs are resident per
SM to hide each other's load and MMA latency; the grouped tile count doubles.
Measured (H200, benchmark mode, L2 flushed): 394.8 / 204.6 / 72.5 / 56.0 µs on the 4 benchmark
shapes, geomean 134.6 µs = 6.77x SOL; speed-up over the parent 0.88x. Kept, a regression on the
geomean (119 -> 135 µs; only the 2-group shape 3 gained): unlike gemm and dual_gemm, the grouped
kernel already had two programs per SM, and halving them doubled the per-program fixed costs.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t

MAX_GROUPS = 8
NO_TILE = 1 << 30  # first tile of an absent group


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
def _pick(g, v0, v1, v2, v3, v4, v5, v6, v7):
    """The g-th of eight scalar arguments."""
    v = tl.where(g == 1, v1, v0)
    v = tl.where(g == 2, v2, v)
    v = tl.where(g == 3, v3, v)
    v = tl.where(g == 4, v4, v)
    v = tl.where(g == 5, v5, v)
    v = tl.where(g == 6, v6, v)
    return tl.where(g == 7, v7, v)


@triton.jit
def _group_gemm(a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7,
                c0, c1, c2, c3, c4, c5, c6, c7, sa0, sa1, sa2, sa3, sa4, sa5, sa6, sa7,
                sb0, sb1, sb2, sb3, sb4, sb5, sb6, sb7, m0, m1, m2, m3, m4, m5, m6, m7,
                n0, n1, n2, n3, n4, n5, n6, n7, k0, k1, k2, k3, k4, k5, k6, k7,
                t1, t2, t3, t4, t5, t6, t7, BM: tl.constexpr, BN: tl.constexpr, BKB: tl.constexpr):
    pid = tl.program_id(0)
    g = ((pid >= t1).to(tl.int32) + (pid >= t2).to(tl.int32) + (pid >= t3).to(tl.int32) + (pid >= t4).to(tl.int32)
         + (pid >= t5).to(tl.int32) + (pid >= t6).to(tl.int32) + (pid >= t7).to(tl.int32))
    a_ptr = tl.multiple_of(_pick(g, a0, a1, a2, a3, a4, a5, a6, a7).to(tl.pointer_type(tl.uint8)), 16)
    b_ptr = tl.multiple_of(_pick(g, b0, b1, b2, b3, b4, b5, b6, b7).to(tl.pointer_type(tl.uint8)), 16)
    c_ptr = _pick(g, c0, c1, c2, c3, c4, c5, c6, c7).to(tl.pointer_type(tl.float16))
    sfa_ptr = _pick(g, sa0, sa1, sa2, sa3, sa4, sa5, sa6, sa7).to(tl.pointer_type(tl.float8e4nv))
    sfb_ptr = _pick(g, sb0, sb1, sb2, sb3, sb4, sb5, sb6, sb7).to(tl.pointer_type(tl.float8e4nv))
    M = _pick(g, m0, m1, m2, m3, m4, m5, m6, m7)
    N = _pick(g, n0, n1, n2, n3, n4, n5, n6, n7)
    KB = tl.multiple_of(_pick(g, k0, k1, k2, k3, k4, k5, k6, k7) // 2, 16)  # the host checks k % 32 == 0
    tile = pid - _pick(g, 0, t1, t2, t3, t4, t5, t6, t7)
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


BM, BN, BKB = 64, 64, 64  # BKB: packed bytes per K step (128 K elements)


_compiled = {}  # launch signature -> compiled kernel
_checked = set()  # group shapes whose layout has been checked


def _check_layout(a, b, c, sfa_r, k):
    """The kernel assumes rows stored contiguously and the contest's MMA-layout scale buffer."""
    if not (a.stride(1) == 1 and a.stride(0) == k // 2 and b.stride(1) == 1 and b.stride(0) == k // 2
            and c.stride(1) == 1 and c.stride(0) == c.shape[1]):
        raise ValueError("group_gemm expects row-contiguous a, b and c as the contest creates them")
    if sfa_r.stride()[:5] != (16, 4, sfa_r.shape[4] * 512, 1, 512):
        raise ValueError("group_gemm expects the contest's (32, 4, rest_m, 4, rest_k, l) scale layout")


def custom_kernel(data: input_t) -> output_t:
    abc, _, sfasfb_reordered, sizes = data
    g = len(abc)
    if not 1 <= g <= MAX_GROUPS:
        raise ValueError(f"group_gemm v6 takes 1 to {MAX_GROUPS} groups, not {g}")
    shapes = tuple(sizes)
    if shapes not in _checked:
        for (a, b, c), (sfa_r, _), (m, n, k, l) in zip(abc, sfasfb_reordered, sizes):
            assert l == 1 and k % (2 * BKB) == 0
            _check_layout(a, b, c, sfa_r, k)
        _checked.add(shapes)
    fields = [[] for _ in range(8)]  # a, b, c, sfa, sfb, m, n, k
    starts, tiles = [], 0
    for (a, b, c), (sfa_r, sfb_r), (m, n, k, _) in zip(abc, sfasfb_reordered, sizes):
        for column, value in zip(fields, (a.data_ptr(), b.data_ptr(), c.data_ptr(), sfa_r.data_ptr(),
                                          sfb_r.data_ptr(), m, n, k)):
            column.append(value)
        starts.append(tiles)
        tiles += triton.cdiv(m, BM) * triton.cdiv(n, BN)
    for column in fields:
        column += [column[0]] * (MAX_GROUPS - g)
    starts += [NO_TILE] * (MAX_GROUPS - g)
    args = [x for column in fields for x in column] + starts[1:]
    if any(p % 16 for p in args[:2 * MAX_GROUPS]):
        raise ValueError("group_gemm expects 16-byte aligned a and b")
    key = tuple((x % 16 == 0) + 2 * (x == 1) for x in args) + (tiles,)
    kernel = _compiled.get(key)
    if kernel is None:
        _compiled[key] = _group_gemm[(tiles,)](*args, BM=BM, BN=BN, BKB=BKB, num_warps=4, num_stages=3)
    else:
        kernel.run(tiles, 1, 1, torch.cuda.current_stream().cuda_stream, kernel.function, kernel.packed_metadata,
                   None, None, None, *args, BM, BN, BKB)
    return [c for _, _, c in abc]
