"""gemm v6 — half-size programs (64 x 128 tiles, 4 warps) so two or more share an SM.

Parent: v5. Idea: Nsight Compute on v5 (shape 1: 160 µs) showed 221 registers per thread, so one
8-warp program per SM (12% occupancy, 2 warps per scheduler, 0.5 eligible), 29% of issue slots
busy and 9.6% of DRAM bandwidth: load, decode, shared-memory staging and the MMA of the single
program ran one after another with nothing to overlap them. v6 halves the program (BN = 64 rows of
B, one warpgroup, half the accumulator), doubling the programs (split-K adapts) so that several
fit per SM and one's decode overlaps another's loads and MMAs.
Measured (H200, benchmark mode, L2 flushed): 176.7 / 48.3 / 51.5 µs on the 3 benchmark shapes,
geomean 76.0 µs = 7.94x SOL; speed-up over the parent 1.14x.
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


@triton.jit
def _finish(ws_ptr, c_ptr, M, N, s_cm, s_cn, s_cl, BLOCK: tl.constexpr):
    """fp32 workspace [l, M, N] -> fp16 c; leaves the workspace zeroed for the next call."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    l = tl.program_id(1)
    mask = offs < M * N
    ws = ws_ptr + l * M * N + offs
    tl.store(c_ptr + l * s_cl + (offs // N) * s_cm + (offs % N) * s_cn, tl.load(ws, mask=mask).to(tl.float16), mask=mask)
    tl.store(ws, tl.zeros([BLOCK], dtype=tl.float32), mask=mask)


BM, BN, BKB = 128, 64, 64  # BKB: packed bytes per K step (128 K elements)
TARGET_PROGRAMS = 264  # two per SM on a 132-SM H200
MIN_STEPS = 4  # K steps per split at least


def _splits(tiles: int, steps: int) -> int:
    """Largest power of two <= TARGET_PROGRAMS / tiles that divides the K steps into >= MIN_STEPS each."""
    split = 1
    while tiles * split * 2 <= TARGET_PROGRAMS and steps % (split * 2) == 0 and steps // (split * 2) >= MIN_STEPS:
        split *= 2
    return split


FINISH_BLOCK = 2048
_compiled = {}  # (kernel name, launch signature) -> compiled kernel
_workspaces = {}  # (device, l, m, n) -> fp32 buffer, all zeros between calls


def _launch(jit_fn, grid, tensors, ints, constexprs, num_warps):
    """Launch jit_fn; after the first call of a signature, straight through the compiled launcher."""
    ptrs = tuple(t.data_ptr() for t in tensors)
    key = (jit_fn.__name__, grid, ints, tuple(constexprs.values()), tuple(p % 16 for p in ptrs))
    kernel = _compiled.get(key)
    if kernel is None:
        _compiled[key] = jit_fn[grid](*tensors, *ints, **constexprs, num_warps=num_warps)
    else:
        kernel.run(*grid, torch.cuda.current_stream().cuda_stream, kernel.function, kernel.packed_metadata,
                   None, None, None, *ptrs, *ints, *constexprs.values())


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, c = data
    m, kb, l = a.shape
    n = b.shape[0]
    assert kb % BKB == 0 and a.stride(1) == 1 and b.stride(1) == 1 and sfa.stride(1) == 1 and sfb.stride(1) == 1
    tiles = triton.cdiv(m, BM) * triton.cdiv(n, BN)
    split = _splits(tiles * l, kb // BKB)
    if split == 1:
        out, out_strides = c, c.stride()
    else:
        key = (c.device, l, m, n)
        if key not in _workspaces:
            _workspaces[key] = torch.zeros((l, m, n), dtype=torch.float32, device=c.device)
        out, out_strides = _workspaces[key], (n, 1, m * n)
    a8, b8 = a.view(torch.uint8), b.view(torch.uint8)
    ints = (m, n, kb, a.stride(0), a.stride(2), b.stride(0), b.stride(2), sfa.stride(0), sfa.stride(2),
            sfb.stride(0), sfb.stride(2), *out_strides)
    _launch(_gemm, (tiles, l, split), (a8, b8, sfa, sfb, out), ints,
            dict(BM=BM, BN=BN, BKB=BKB, SPLIT=split), num_warps=4)
    if split > 1:
        _launch(_finish, (triton.cdiv(m * n, FINISH_BLOCK), l, 1), (out, c), (m, n, *c.stride()),
                dict(BLOCK=FINISH_BLOCK), num_warps=4)
    return c
