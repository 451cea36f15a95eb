"""gemv v9 — v8's CuTe DSL kernel called through Apache TVM FFI instead of the DSL's default JIT call path.

Parent: v8. Idea: v8's kernel is v7's, yet its benchmark was 2-3x slower: gemv is timed one call per
sample, so the host time of each call sits on the clock, and the DSL's default compiled-function call
(building cute pointers and converting 13 arguments in Python on every call) is slow. Compiled with
`--enable-tvm-ffi`, the function takes plain Python integers (addresses, sizes, strides) through TVM
FFI's C calling path; the output pointer is built inside the JIT function. Needs nvidia-cutlass-dsl
and apache-tvm-ffi.
Measured (H200, benchmark mode): 37.8 / 56.9 / 28.2 µs on the 3 benchmark shapes, geomean 39.3 µs
= 2.85x SOL (leaderboard mode 41.3 µs); host time per call 7.2 µs (v8: 42.2, v7: 9.0), queued GPU
time on shape 1 21.6 µs, the same as v7's kernel; interleaved against v7: 1.20x faster (95% interval
1.02-1.42, results/h200/gemv_diff_v7_v9.txt).
"""
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op
from cutlass.memory.smem import SmemAllocator

from task import input_t, output_t

WARPS = 16
ROWS = 2     # rows per warp
UNROLL = 2   # 512-byte steps of a row in flight


def _asm(ret_type, operands, text, constraints, pure=True):
    return llvm.inline_asm(ret_type, operands, text, constraints, has_side_effects=not pure,
                           is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)


@dsl_user_op
def mag4(sel, *, loc=None, ip=None):
    """Four codes (sel[15:0]) -> bytes 2|a|; a code with its sign bit set yields 0 (sign-replicate)."""
    return Int32(_asm(T.i32(), [Int32(0x03020100).ir_value(), Int32(0x0C080604).ir_value(),
                                Int32(sel).ir_value(loc=loc, ip=ip)], "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r"))


@dsl_user_op
def dp4a(x, y, acc, *, loc=None, ip=None):
    return Int32(_asm(T.i32(), [Int32(x).ir_value(loc=loc, ip=ip), Int32(y).ir_value(loc=loc, ip=ip),
                                Int32(acc).ir_value(loc=loc, ip=ip)], "dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r"))


@dsl_user_op
def ld_stream_v4(addr, *, loc=None, ip=None):
    """16 bytes from global memory, not kept in L1: four Int32 words."""
    st = llvm.StructType.get_literal([T.i32()] * 4)
    v = _asm(st, [Int64(addr).ir_value(loc=loc, ip=ip)],
             "ld.global.nc.L1::no_allocate.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l", pure=False)
    return [Int32(llvm.extractvalue(T.i32(), v, [i], loc=loc, ip=ip)) for i in range(4)]


@dsl_user_op
def ld_u32(addr, *, loc=None, ip=None):
    return Int32(_asm(T.i32(), [Int64(addr).ir_value(loc=loc, ip=ip)], "ld.global.nc.u32 $0, [$1];", "=r,l", pure=False))


@dsl_user_op
def ld_u16(addr, *, loc=None, ip=None):
    return Int32(_asm(T.i32(), [Int64(addr).ir_value(loc=loc, ip=ip)],
                      "ld.global.nc.L1::no_allocate.u16 $0, [$1];", "=r,l", pure=False))


@dsl_user_op
def e4m3x2(bits16, *, loc=None, ip=None):
    """Two e4m3 scales (bits16[7:0], bits16[15:8]) -> two Float32 (exact, through f16x2)."""
    st = llvm.StructType.get_literal([T.f32()] * 2)
    v = _asm(st, [Int32(bits16).ir_value(loc=loc, ip=ip)],
             "{ .reg .b16 s, lo, hi; .reg .b32 h2; cvt.u16.u32 s, $2; cvt.rn.f16x2.e4m3x2 h2, s; "
             "mov.b32 {lo, hi}, h2; cvt.f32.f16 $0, lo; cvt.f32.f16 $1, hi; }", "=f,=f,r")
    return Float32(llvm.extractvalue(T.f32(), v, [0], loc=loc, ip=ip)), Float32(llvm.extractvalue(T.f32(), v, [1], loc=loc, ip=ip))


@cute.jit
def block_idot(w0, w1, b0, b1, b2, b3):
    """Exact sum over one 16-element block of (2a)(2b): words w0, w1 of A against signed bytes b0..b3."""
    x0 = w0 ^ Int32(0x88888888 - (1 << 32))
    x1 = w1 ^ Int32(0x88888888 - (1 << 32))
    p = dp4a(mag4(w0), b0, Int32(0))
    p = dp4a(mag4(w0 >> 16), b1, p)
    p = dp4a(mag4(w1), b2, p)
    p = dp4a(mag4(w1 >> 16), b3, p)
    n = dp4a(mag4(x0), b0, Int32(0))
    n = dp4a(mag4(x0 >> 16), b1, n)
    n = dp4a(mag4(x1), b2, n)
    n = dp4a(mag4(x1 >> 16), b3, n)
    return p - n


@cute.jit
def vec_bytes(w):
    """Four codes (w[15:0]) of the vector -> four signed bytes 2b (p and n never share a byte)."""
    p = mag4(w)
    n = mag4(w ^ Int32(0x8888))
    return p | ((Int32(0x80808080 - (1 << 32)) - n) ^ Int32(0x80808080 - (1 << 32)))


@cute.kernel
def gemv_kernel(a_addr: Int64, b_addr: Int64, sfa_addr: Int64, sfb_addr: Int64, c: cute.Tensor,
                m: Int32, s_am: Int64, s_al: Int64, s_bl: Int64, s_sam: Int64, s_sal: Int64, s_sbl: Int64,
                kb: cutlass.Constexpr):
    nch = kb // 16
    tidx, _, _ = cute.arch.thread_idx()
    bidx, bidy, _ = cute.arch.block_idx()
    smem = SmemAllocator()
    vb = smem.allocate_tensor(Int32, cute.make_layout(8 * nch), byte_alignment=16)   # [2][nch][4]
    vsc = smem.allocate_tensor(Float32, cute.make_layout(2 * nch), byte_alignment=16)  # [nch][2]
    l = bidy
    bbase = b_addr + Int64(l) * s_bl
    for i in range(tidx, 2 * nch, WARPS * 32):
        w0 = ld_u32(bbase + Int64(i) * 8)
        w1 = ld_u32(bbase + Int64(i) * 8 + 4)
        base = ((i % 2) * nch + i // 2) * 4
        vb[base + 0] = vec_bytes(w0)
        vb[base + 1] = vec_bytes(w0 >> 16)
        vb[base + 2] = vec_bytes(w1)
        vb[base + 3] = vec_bytes(w1 >> 16)
    sbase = sfb_addr + Int64(l) * s_sbl
    for i in range(tidx, nch, WARPS * 32):
        f0, f1 = e4m3x2(ld_u16(sbase + Int64(i) * 2))
        vsc[2 * i] = Float32(0.25) * f0
        vsc[2 * i + 1] = Float32(0.25) * f1
    cute.arch.sync_threads()

    warp = tidx // 32
    lane = tidx % 32
    row0 = (bidx * WARPS + warp) * ROWS
    acc = cute.make_rmem_tensor(cute.make_layout(ROWS), Float32)
    arow = cute.make_rmem_tensor(cute.make_layout(ROWS), Int64)
    srow = cute.make_rmem_tensor(cute.make_layout(ROWS), Int64)
    for r in cutlass.range_constexpr(ROWS):
        acc[r] = Float32(0.0)
        row = cutlass.min(row0 + r, m - 1)
        arow[r] = a_addr + Int64(l) * s_al + Int64(row) * s_am
        srow[r] = sfa_addr + Int64(l) * s_sal + Int64(row) * s_sam
    for ch0 in range(lane, nch, 32 * UNROLL):
        x = cute.make_rmem_tensor(cute.make_layout((4, ROWS, UNROLL)), Int32)
        s = cute.make_rmem_tensor(cute.make_layout((ROWS, UNROLL)), Int32)
        for u in cutlass.range_constexpr(UNROLL):
            ch = ch0 + u * 32
            for r in cutlass.range_constexpr(ROWS):
                if ch < nch:
                    w = ld_stream_v4(arow[r] + Int64(ch) * 16)
                    for q in cutlass.range_constexpr(4):
                        x[q, r, u] = w[q]
                    s[r, u] = ld_u16(srow[r] + Int64(ch) * 2)
                else:
                    for q in cutlass.range_constexpr(4):
                        x[q, r, u] = Int32(0)
                    s[r, u] = Int32(0)
        for u in cutlass.range_constexpr(UNROLL):
            ch = ch0 + u * 32
            if ch < nch:
                b0 = [vb[ch * 4 + q] for q in range(4)]
                b1 = [vb[(nch + ch) * 4 + q] for q in range(4)]
                t0 = vsc[2 * ch]
                t1 = vsc[2 * ch + 1]
                for r in cutlass.range_constexpr(ROWS):
                    sa0, sa1 = e4m3x2(s[r, u])
                    d0 = block_idot(x[0, r, u], x[1, r, u], b0[0], b0[1], b0[2], b0[3])
                    d1 = block_idot(x[2, r, u], x[3, r, u], b1[0], b1[1], b1[2], b1[3])
                    acc[r] = acc[r] + Float32(d0) * (sa0 * t0) + Float32(d1) * (sa1 * t1)
    for r in cutlass.range_constexpr(ROWS):
        v = cute.arch.warp_reduction(acc[r], lambda p, q: p + q)
        if lane == 0 and row0 + r < m:
            c[row0 + r, 0, l] = v.to(cutlass.Float16)


@cute.jit
def launch(a_addr: Int64, b_addr: Int64, sfa_addr: Int64, sfb_addr: Int64, c_addr: Int64,
           m: Int32, l: Int32, s_am: Int64, s_al: Int64, s_bl: Int64, s_sam: Int64, s_sal: Int64, s_sbl: Int64,
           kb: cutlass.Constexpr):
    c_ptr = cute.make_ptr(cutlass.Float16, c_addr, cute.AddressSpace.gmem, assumed_align=2)
    c = cute.make_tensor(c_ptr, cute.make_layout((m, 1, l), stride=(1, m, m)))
    rows_per_cta = WARPS * ROWS
    smem_bytes = (kb // 16) * 40 + 64
    gemv_kernel(a_addr, b_addr, sfa_addr, sfb_addr, c, m, s_am, s_al, s_bl, s_sam, s_sal, s_sbl, kb).launch(
        grid=((m + rows_per_cta - 1) // rows_per_cta, l, 1), block=(WARPS * 32, 1, 1), smem=smem_bytes)


_compiled = {}


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, c = data
    m, kb, l = a.shape
    assert c.stride(0) == 1 and c.stride(2) == m, "c is expected as the contest lays it out: (m, 1, l), m-contiguous"
    args = (a.data_ptr(), b.data_ptr(), sfa.data_ptr(), sfb.data_ptr(), c.data_ptr(), m, l,
            a.stride(0), a.stride(2), b.stride(2), sfa.stride(0), sfa.stride(2), sfb.stride(2))
    fn = _compiled.get(kb)
    if fn is None:
        fn = cute.compile(launch, *args, kb, options="--enable-tvm-ffi")
        _compiled[kb] = fn
    fn(*args)
    return c
