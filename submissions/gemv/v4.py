"""gemv v4 — register double buffering: the next chunk's loads are in flight during this chunk's math.

Parent: v3. Idea: Nsight Compute on v2/v3's kernel (shape 2: 94 µs, 1.42 TB/s, 29% of DRAM peak)
showed 4.2 active warps per scheduler, 0.76 eligible, and 60% of stall cycles waiting on global
loads (L1TEX scoreboard): each warp issued its loads and then sat idle until they returned. Here
the loop loads chunk i+1 of A and its scales before decoding chunk i, so every warp keeps one
chunk of loads outstanding while it computes.
Measured (H200, benchmark mode, L2 flushed): 90.4 / 99.5 / 68.8 µs on the 3 benchmark shapes,
geomean 85.2 µs = 6.19x SOL; speed-up over the parent 1.30x.
"""
import torch
import triton
import triton.language as tl
from task import input_t, output_t

# Lane j of a word: codes j (bits 4j..4j+3) and j+4 (bits 16+4j..) -> fp16x2 (value * 2^-14).
_SPLIT = """
shl.b32 t, {w}, 9;  and.b32 t, t, 0x0E000E00; shl.b32 u, {w}, 12; and.b32 u, u, 0x80008000; or.b32 p0, t, u;
shl.b32 t, {w}, 5;  and.b32 t, t, 0x0E000E00; shl.b32 u, {w}, 8;  and.b32 u, u, 0x80008000; or.b32 p1, t, u;
shl.b32 t, {w}, 1;  and.b32 t, t, 0x0E000E00; shl.b32 u, {w}, 4;  and.b32 u, u, 0x80008000; or.b32 p2, t, u;
shr.b32 t, {w}, 3;  and.b32 t, t, 0x0E000E00;                     and.b32 u, {w}, 0x80008000; or.b32 p3, t, u;
"""

# A word against the vector's four fp16x2 pairs -> exact fp32 sum of its 8 products / 4.
_WORD_DOT = tl.constexpr("{ .reg .b32 t, u, p0, p1, p2, p3, s; .reg .b16 lo, hi; .reg .f32 fl, fh;" + _SPLIT.format(w="$1") + """
mul.rn.f16x2 s, p0, $2; fma.rn.f16x2 s, p1, $3, s; fma.rn.f16x2 s, p2, $4, s; fma.rn.f16x2 s, p3, $5, s;
mov.b32 {lo, hi}, s; cvt.f32.f16 fl, lo; cvt.f32.f16 fh, hi; add.f32 $0, fl, fh; }""")

# A vector word -> its four fp16x2 pairs times 2^26 (value * 2^12), two exact multiplies by 2^13.
_VECTOR_PAIRS = tl.constexpr("{ .reg .b32 t, u, p0, p1, p2, p3, k; mov.b32 k, 0x70007000;" + _SPLIT.format(w="$4") + """
mul.rn.f16x2 p0, p0, k; mul.rn.f16x2 $0, p0, k; mul.rn.f16x2 p1, p1, k; mul.rn.f16x2 $1, p1, k;
mul.rn.f16x2 p2, p2, k; mul.rn.f16x2 $2, p2, k; mul.rn.f16x2 p3, p3, k; mul.rn.f16x2 $3, p3, k; }""")


@triton.jit
def _gemv(a_ptr, b_ptr, sfa_ptr, sfb_ptr, c_ptr, M, KW,
          s_am, s_al, s_bl, s_sam, s_sal, s_sbl, s_cm, s_cl,
          BLOCK_M: tl.constexpr, WORDS: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_l = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    words = tl.arange(0, WORDS)
    blocks = tl.arange(0, WORDS // 2)
    a_rows = a_ptr + pid_l * s_al + rows[:, None] * s_am + words[None, :]
    sa_rows = sfa_ptr + pid_l * s_sal + rows[:, None] * s_sam + blocks[None, :]
    acc = tl.zeros([BLOCK_M, WORDS], dtype=tl.float32)
    aw = tl.load(a_rows)
    sfa_raw = tl.load(sa_rows)
    for w0 in range(0, KW, WORDS):
        ahead = tl.multiple_of((w0 + WORDS) % KW, WORDS)  # next chunk (on the last step the first: in bounds, unused)
        aw_next = tl.load(a_rows + ahead)
        sfa_next = tl.load(sa_rows + ahead // 2)
        bw = tl.load(b_ptr + pid_l * s_bl + w0 + words)
        b0, b1, b2, b3 = tl.inline_asm_elementwise(
            _VECTOR_PAIRS, "=r,=r,=r,=r,r", [bw], dtype=(tl.int32, tl.int32, tl.int32, tl.int32),
            is_pure=True, pack=1)
        part = tl.inline_asm_elementwise(
            _WORD_DOT, "=f,r,r,r,r,r",
            [aw, tl.broadcast_to(b0[None, :], aw.shape), tl.broadcast_to(b1[None, :], aw.shape),
             tl.broadcast_to(b2[None, :], aw.shape), tl.broadcast_to(b3[None, :], aw.shape)],
            dtype=tl.float32, is_pure=True, pack=1)
        sfb = tl.load(sfb_ptr + pid_l * s_sbl + w0 // 2 + blocks).to(tl.float32)
        scale = sfa_raw.to(tl.float32) * (sfb * 4.0)[None, :]
        scale = tl.reshape(tl.broadcast_to(scale[:, :, None], (BLOCK_M, WORDS // 2, 2)), (BLOCK_M, WORDS))
        acc += part * scale
        aw = aw_next
        sfa_raw = sfa_next
    tl.store(c_ptr + pid_l * s_cl + rows * s_cm, tl.sum(acc, axis=1).to(tl.float16))


BLOCK_M = 32
_compiled = {}  # launch signature -> compiled kernel


def _words(packed: torch.Tensor) -> torch.Tensor:
    """[rows, k/2, l] packed bytes -> [l, rows, k/8] int32 words (a view)."""
    return packed.view(torch.uint8).permute(2, 0, 1).view(torch.int32)


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, c = data
    m, kb, l = a.shape
    kw = kb // 4
    words = 64 if kw % 64 == 0 else 32  # 32-bit words of each row per K step
    assert m % BLOCK_M == 0 and kw % words == 0 and a.stride(1) == 1 and b.stride(1) == 1 and sfa.stride(1) == 1
    ptrs = (a.data_ptr(), b.data_ptr(), sfa.data_ptr(), sfb.data_ptr(), c.data_ptr())
    ints = (m, kw, a.stride(0) // 4, a.stride(2) // 4, b.stride(2) // 4, sfa.stride(0), sfa.stride(2), sfb.stride(2),
            c.stride(0), c.stride(2))
    key = ints + tuple(p % 16 for p in ptrs)
    kernel = _compiled.get(key)
    if kernel is None:
        _compiled[key] = _gemv[(m // BLOCK_M, l)](_words(a), _words(b), sfa, sfb, c, *ints,
                                                  BLOCK_M=BLOCK_M, WORDS=words, num_warps=4)
    else:
        kernel.run(m // BLOCK_M, l, 1, torch.cuda.current_stream().cuda_stream, kernel.function,
                   kernel.packed_metadata, None, None, None, *ptrs, *ints, BLOCK_M, words)
    return c
