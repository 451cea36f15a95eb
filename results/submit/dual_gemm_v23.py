#!POPCORN leaderboard nvfp4_dual_gemm
#!POPCORN gpu B200
"""dual_gemm v23 — the high nibbles' select moves magnitudes down, not signs up: pair 3 takes one mask, 15 instructions per word.

Parent: v22. Idea: the parent's pair 3 (codes 3 and 7, the high nibbles of bytes 1 and 3) took a shift and two masks, because
the select that serves the other high nibbles moved signs up, past bit 31 for code 7. Here that select moves the
high nibbles' magnitudes down under their signs instead, (w & 0x80808080) | (w >> 3 & ~0x80808080): pair 3 is then
in place and takes one mask, pair 1 one shift and one mask. 15 instructions per word of eight codes, not 16. Carried from group_gemm v34.
Measured (H200, arena timing, 3 interleaved rounds, tree 955895c + this file as a draft,
results/h200/dual_gemm_diff_v22_v23.txt): 1.008x of v22 (95% CI 1.00-1.01); per shape 1.007 / 1.01 (not
significant) / 1.009 / 1.009x.
Benchmark mode (H200, arena timing, tree af020f1): 45.59 / 79.73 / 29.57 / 69.79 µs, geomean 52.33 µs = 1.62x SOL.
"""
import torch
from torch.utils.cpp_extension import load_inline
from task import input_t, output_t


def _wgmma(n: int) -> str:
    """C++ for one wgmma.m64n{n}k16 with f32 accumulators, A from registers, B from a descriptor."""
    regs = n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    a = ", ".join(f"%{regs + i}" for i in range(4))  # the fragment: read-write operands after the accumulators
    acc = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    frags = ", ".join(f'"+r"(r[{i // 4}][{i % 4}])' for i in range(16))
    frags_s = ", ".join(f'"+r"(s[{i // 4}][{i % 4}])' for i in range(16))
    return f'''
__device__ __forceinline__ void wgmma_m64n{n}k16(float (&d)[{regs}], uint32_t (&a)[4], uint64_t desc) {{
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{outs}}}, {{{a}}}, %{regs + 4}, p, 1, 1, 0;\\n}}\\n"
                 : {acc}, "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3])
                 : "l"(desc), "r"(1) : "memory");
}}

// wgmma.fence, with the accumulators and the next four A fragments as its operands: the compiler must then have
// written them (the zeroing, the decode) before the fence, not between the wgmmas that read them.
__device__ __forceinline__ void wgmma_fence(float (&d)[{regs}], uint32_t (&r)[4][4]) {{
    asm volatile("wgmma.fence.sync.aligned;"
                 : {acc}, {frags} :: "memory");
}}

// wgmma.wait_group N, naming the fragments of the group it completes: the wgmmas read their A fragments from
// registers while they run, and without this the compiler gives those registers to the next step's decode.
template <int N>
__device__ __forceinline__ void wgmma_wait(uint32_t (&r)[4][4]) {{
    asm volatile("wgmma.wait_group.sync.aligned %16;"
                 : {frags} : "n"(N) : "memory");
}}

// wgmma.wait_group 0 at the end of a tile, naming the accumulators and both fragment sets: every group is
// complete, so the epilogue's reads of d (and the next tile's zeroing) cannot move above it.
__device__ __forceinline__ void wgmma_wait_all(float (&d)[{regs}], uint32_t (&r)[4][4], uint32_t (&s)[4][4]) {{
    asm volatile("wgmma.wait_group.sync.aligned 0;"
                 : {acc}, {frags}, {frags_s} :: "memory");
}}
'''


CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda.h>
#include <cstring>

namespace {

constexpr int WG = 2;                     // consumer warpgroups per CTA: 0 multiplies by B1, 1 by B2
constexpr int BN = 64 * WG;               // rows of B per stage: 64 of B1, then the same 64 of B2
constexpr int BM = 256;                   // rows of A per CTA: the wgmma N
constexpr int BK = 64;                    // K per step: one 64-wide K block
constexpr int STAGES = 4;
constexpr int CONSUMERS = 128 * WG;        // consumer threads; one more warpgroup loads
constexpr int THREADS = CONSUMERS + 128;
// Registers per thread after setmaxnreg: 128 * 40 + 256 * 232 = the 384 * 168 the CTA starts with.
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;
constexpr int A_BYTES = BM * BK * 2;      // fp16 A for one K block, 128-byte rows, 128-byte swizzle
constexpr int B_BYTES = BN * BK / 2;      // packed B1 then B2, 32-byte rows
constexpr int S_BYTES = 2 * 512;          // B1 then B2 scales: one 512-byte block of the contest layout each
constexpr int STAGE_TX = A_BYTES + B_BYTES + S_BYTES;  // bytes the copy engine delivers per stage
// Shared memory: all A stages first (each 1024-byte aligned, as the 128-byte swizzle needs), then B, then
// scales, then the two exchange halves, then the full / empty mbarrier pairs of the ring.
constexpr int B_OFFSET = STAGES * A_BYTES;
constexpr int S_OFFSET = B_OFFSET + STAGES * B_BYTES;
constexpr int X_OFFSET = S_OFFSET + STAGES * S_BYTES;  // each warpgroup -> the other: 64 floats per thread
constexpr int BAR_OFFSET = X_OFFSET + 2 * 64 * 128 * 4;
constexpr int SMEM_BYTES = BAR_OFFSET + (2 * STAGES + 1) * 8 + 1024;
constexpr int X_BYTES = 2 * 64 * 128 * 4;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void bar_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}

__device__ __forceinline__ void bar_expect(uint32_t bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}

// Wait until the barrier's phase of the given parity has completed.
__device__ __forceinline__ void bar_wait(uint32_t bar, int parity) {
    asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}

// 2-D tile from a tensor map into shared memory; completion is counted on the barrier.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar) : "memory");
}

// Contiguous bytes into shared memory through the copy engine.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, int bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

__device__ __forceinline__ int cluster_rank() {
    int r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// K-major operand in shared memory, 128-byte rows, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
    return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

// Shared-memory loads by address: a generic load of shared memory takes the long-latency path (LD.E).
__device__ __forceinline__ uint2 lds64(uint32_t addr) {
    uint2 v;
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr) : "memory");
    return v;
}

__device__ __forceinline__ uint8_t lds8(uint32_t addr) {
    uint32_t v;
    asm volatile("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return uint8_t(v);
}

// (a & MASK) | (b & ~MASK) as one LOP3: written as C, ptxas splits it in two where it proves bits dead.
template <uint32_t MASK>
__device__ __forceinline__ uint32_t select_bits(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("lop3.b32 %0, %1, %2, %3, 0xE4;" : "=r"(d) : "r"(a), "r"(b), "n"(MASK));
    return d;
}

// The eight e2m1 codes of w -> four fp16x2 pairs, pair s holding codes s and s + 4 (value * 2^-14, exact). fp16
// wants a code's sign 6 bits above its magnitude's low bit. One select per word moves every low nibble's sign there
// (even); another moves every high nibble's magnitude down under its sign (odd), where pair 3 already sits. Pairs 0-2
// then take one shift and one mask each, pair 3 one mask.
__device__ __forceinline__ void pairs(uint32_t w, uint32_t (&p)[4]) {
    const uint32_t even = select_bits<0x07070707u>(w, w << 3);  // low nibble of byte j: magnitude at 8j, sign at 8j + 6
    const uint32_t odd = select_bits<0x80808080u>(w, w >> 3);   // high nibble: magnitude at 8j + 1, sign at 8j + 7
    p[0] = (even << 9) & 0x8E008E00u;
    p[1] = (odd << 8) & 0x8E008E00u;
    p[2] = (even << 1) & 0x8E008E00u;
    p[3] = odd & 0x8E008E00u;
}

// e4m3 scale -> fp16x2 (scale * 2^7, scale * 2^7); exact, at most 448 * 128.
__device__ __forceinline__ uint32_t scale2(uint8_t s) {
    __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(s | (s << 8)), __NV_E4M3);
    uint32_t v = uint32_t(h.x) | (uint32_t(h.y) << 16);
    return hmul2(v, 0x58005800u);
}

WGMMA_FUNCTIONS

// Per call, passed by value: the tensor maps of fp16 A (128-byte swizzle, 64 x 128 boxes) and packed B1, B2
// (64 x 64 byte boxes).
struct Params {
    CUtensorMap map_a, map_b1, map_b2;
    int m, n, kb, tiles_m, units, split, steps;  // units: (m / 256) x (n / 64) tiles x split; steps: per slice
    int cluster;                                 // split = 2, one unit per CTA: the slices of a tile are a cluster
    const uint8_t* sfb1;                  // the contest's (32, 4, rest_n, 4, rest_k) scale layout
    const uint8_t* sfb2;
    __half* c;
    float* ws1;                                  // split > 1: fp32 m x n sums of each product, zero between calls
    float* ws2;
    int stream;                                  // stream-K: CTA b takes K steps [total * b / grid, total * (b + 1) / grid)
    int total;                                   // tiles x steps, the tiles' K steps end to end
    float* part;                                 // stream-K: a slot of 2 x 128 x 128 floats per CTA
    int* flags;                                  // stream-K: per CTA, 1 once its slot holds its first segment's sums
};

// The first of CTA b's K steps in the tiles' end-to-end order.
__device__ __forceinline__ int share_begin(const Params& p, int b) {
    return int(unsigned(p.total) * unsigned(b) / gridDim.x);  // the host keeps total x grid below 2^31
}

// Calls f(tile, first step, steps) for each piece of work of this CTA, in order: whole tiles or K-slices of them
// (u = blockIdx.x, blockIdx.x + gridDim.x, ...), or under stream-K the pieces of tiles its share covers.
template <bool STREAM, class F>
__device__ __forceinline__ void for_each_segment(const Params& p, F&& f) {
    if constexpr (STREAM) {
        const int end = share_begin(p, blockIdx.x + 1);
        for (int pos = share_begin(p, blockIdx.x); pos < end;) {
            const int t = pos / p.steps, first = pos % p.steps, count = min(p.steps - first, end - pos);
            f(t, first, count);
            pos += count;
        }
    } else {
        for (int u = blockIdx.x; u < p.units; u += gridDim.x) f(u / p.split, (u % p.split) * p.steps, p.steps);
    }
}

// A -> fp16, K permuted inside each 64-block to match the B fragments: position s*16 + c holds element
// (c%8)/2*16 + (c/8)*8 + s + 4*(c%2). A thread writes one 16-byte piece (positions 8i .. 8i+7 of a 64-block:
// element (t/2)*16 + (i%2)*8 + i/2 + 4*(t%2) at position 8i + t), so a warp's stores are contiguous; the 8
// threads of a block read the same 32 bytes of codes and 4 scales.
// One 16-byte piece of fp16 A (chunk `chunk` of 32 code bytes, part i).
__device__ __forceinline__ void decode_piece(const uint8_t* __restrict__ a, const uint8_t* __restrict__ sfa,
                                             __half* __restrict__ out, int kb, long s_am, long s_sam, int chunk, int i) {
    const int chunks = kb / 32;
    const int row = chunk / chunks, ch = chunk % chunks;
    const uint4* src = reinterpret_cast<const uint4*>(a + row * s_am + ch * 32);
    const uint4 lo = src[0], hi = src[1];
    const uint32_t sc = *reinterpret_cast<const uint32_t*>(sfa + row * s_sam + ch * 4);
    // Word t/2 of the output takes its two codes from code word 2*(t/2) + i%2, nibbles i/2 and i/2 + 4.
    const uint32_t odd = i & 1, shift = 4 * (i >> 1);
    const uint32_t src_word[4] = {(odd ? lo.y : lo.x) >> shift, (odd ? lo.w : lo.z) >> shift,
                                  (odd ? hi.y : hi.x) >> shift, (odd ? hi.w : hi.z) >> shift};
    uint32_t words[4];
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        const uint32_t w = src_word[p], n0 = w & 0xF, n1 = (w >> 16) & 0xF;
        // e2m1 code -> fp16 bits of value * 2^-14 (exact), for both codes of the pair.
        const uint32_t tiny = ((n0 & 7) << 9) | ((n0 & 8) << 12) | ((n1 & 7) << 25) | ((n1 & 8) << 28);
        __half2_raw s2 = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(((sc >> (8 * p)) & 0xFF) * 0x101u), __NV_E4M3);
        words[p] = hmul2(hmul2(tiny, 0x74007400u), uint32_t(s2.x) | (uint32_t(s2.y) << 16));  // * 2^14, * scale
    }
    *reinterpret_cast<uint4*>(out + long(row) * kb * 2 + ch * 64 + 8 * i) = make_uint4(words[0], words[1], words[2], words[3]);
}

__global__ void decode_a(const uint8_t* __restrict__ a, const uint8_t* __restrict__ sfa, __half* __restrict__ out,
                         int m, int kb, long s_am, long s_sam) {
    const int chunks = kb / 32;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    const int chunk = idx >> 3, i = idx & 7;
    if (chunk < m * chunks) decode_piece(a, sfa, out, kb, s_am, s_sam, chunk, i);
    // A programmatic dependent of the last call's main kernel, which reads the other A buffer: it runs beside that
    // kernel's last CTAs and only then lets this call's main kernel go, and it completes only after that kernel
    // has, so a main kernel past its wait implies that every earlier kernel of ours is complete.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
}

__device__ __forceinline__ float ld_shared(uint32_t addr) {
    float v;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
    return v;
}

// The epilogue of 2 * NJ row groups of a tile, J0 .. J0 + 2 * NJ - 1, in warpgroup H: d[4j + h] holds the sums of
// tile row 8j + 2q + (h & 1) (a row of A) and column 8 * (h >> 1) from this thread's first (a row of B1 for H = 0,
// of B2 for H = 1). Warpgroup H finishes groups J0 + NJ * H .. + NJ - 1: it sends its sums of the other NJ groups
// to the other warpgroup and takes that one's sums of its own. c points at the tile's row 0 and this thread's
// first column.
template <int H, int J0, int NJ>
__device__ __forceinline__ void finish_rows(const float (&d)[128], uint32_t send, uint32_t recv, __half* c, int n, int q) {
    constexpr int OWN = 4 * (J0 + NJ * H), OTHER = 4 * (J0 + NJ * (1 - H));
#pragma unroll
    for (int i = 0; i < 4 * NJ; ++i) asm volatile("st.shared.f32 [%0], %1;" :: "r"(send + i * 512), "f"(d[OTHER + i]) : "memory");
    asm volatile("barrier.sync 1, %0;" :: "n"(CONSUMERS) : "memory");
    // One pointer stepped by 8 rows: 64 precomputed 64-bit store addresses would push the accumulators out of registers.
    c += long(8 * (J0 + NJ * H) + 2 * q) * n;
#pragma unroll
    for (int jj = 0; jj < NJ; ++jj, c += 8 * n)
#pragma unroll
        for (int h = 0; h < 4; ++h) {
            const int i = 4 * jj + h;
            const float own = d[OWN + i] * 128.f, other = ld_shared(recv + i * 512) * 128.f;
            const float x1 = H == 0 ? own : other, x2 = H == 0 ? other : own;
            c[(h & 1) * n + 8 * (h >> 1)] = __float2half_rn(x1 / (1.f + __expf(-x1)) * x2);
        }
    asm volatile("barrier.sync 1, %0;" :: "n"(CONSUMERS) : "memory");  // the exchange buffer is free again
}

// Four floats into the shared memory of CTA `rank` of this cluster, at the address `addr` has in this CTA, as an
// asynchronous store that counts its 16 bytes on that CTA's barrier at the address `bar` has here: no fence.
__device__ __forceinline__ void st_async(uint32_t addr, uint32_t bar, int rank, float x, float y, float z, float w) {
    uint32_t remote, remote_bar;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(bar), "r"(rank));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
                 :: "r"(remote), "f"(x), "f"(y), "f"(z), "f"(w), "r"(remote_bar) : "memory");
}

// The two K-slices of a tile are the CTAs of one cluster, and slice R owns tile rows 128R .. 128R + 127 (row groups
// 16R .. 16R + 15). Each consumer thread stores its sums of the other slice's rows into the same thread's place in
// that CTA's exchange area with st.async, counted on that CTA's `arrived` barrier, as soon as its own main loop is
// done; then it waits for the other slice's 64 KB on its own barrier and adds them. The exchange area is used
// for nothing else until then, so neither CTA waits for the other's main loop.
template <int R>
__device__ __forceinline__ void reduce_slices(float (&d)[128], uint32_t inbox, uint32_t arrived, int tid) {
#pragma unroll
    for (int i4 = 0; i4 < 16; ++i4) {
        const int i = 64 * (1 - R) + 4 * i4;
        st_async(inbox + (i4 * CONSUMERS + tid) * 16, arrived, 1 - R, d[i], d[i + 1], d[i + 2], d[i + 3]);
    }
    bar_wait(arrived, 0);
#pragma unroll
    for (int i4 = 0; i4 < 16; ++i4) {
        float x, y, z, w;
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x), "=f"(y), "=f"(z), "=f"(w)
                     : "r"(inbox + (i4 * CONSUMERS + tid) * 16) : "memory");
        const int i = 64 * R + 4 * i4;
        d[i] += x; d[i + 1] += y; d[i + 2] += z; d[i + 3] += w;
    }
    asm volatile("barrier.sync 1, %0;" :: "n"(CONSUMERS) : "memory");  // the exchange area is free for finish_rows
}

// Stream-K: consumer thread tid's 128 sums as 32 float4, 2 KB apart so that each store of a warp is contiguous, in
// this CTA's slot; then, once every consumer's stores are done, this CTA's flag is raised with release semantics.
__device__ __forceinline__ void store_part(const float (&d)[128], float* part, int* flags, int tid) {
    float4* slot = reinterpret_cast<float4*>(part) + long(blockIdx.x) * 32 * CONSUMERS + tid;
#pragma unroll
    for (int i = 0; i < 32; ++i) __stcg(slot + i * CONSUMERS, make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]));
    asm volatile("barrier.sync 1, %0;" :: "n"(CONSUMERS) : "memory");
    if (tid == 0) asm volatile("fence.acq_rel.gpu;\nst.relaxed.gpu.global.u32 [%0], 1;" :: "l"(flags + blockIdx.x) : "memory");
}

// Stream-K, in the CTA whose segment starts tile t: add the sums of the CTAs after it whose shares cover the rest of
// the tile, each once its flag is up (then lowered for the next call, which starts after this kernel completes).
__device__ __forceinline__ void add_parts(float (&d)[128], const Params& p, int t, int tid) {
    for (int b = blockIdx.x + 1; b < gridDim.x && share_begin(p, b) < (t + 1) * p.steps; ++b) {
        if (tid == 0) {
            int up = 0;
            do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(up) : "l"(p.flags + b) : "memory");
            while (up == 0);
            p.flags[b] = 0;
        }
        asm volatile("barrier.sync 1, %0;" :: "n"(CONSUMERS) : "memory");
        const float4* slot = reinterpret_cast<const float4*>(p.part) + long(b) * 32 * CONSUMERS + tid;
#pragma unroll
        for (int i0 = 0; i0 < 32; i0 += 4) {
            float4 v[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) v[i] = __ldcg(slot + (i0 + i) * CONSUMERS);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                d[4 * (i0 + i)] += v[i].x; d[4 * (i0 + i) + 1] += v[i].y;
                d[4 * (i0 + i) + 2] += v[i].z; d[4 * (i0 + i) + 3] += v[i].w;
            }
        }
    }
}

// STREAM: the stream-K schedule (a separate build, so that the other schedules' code is v19's).
template <bool STREAM>
__global__ void __launch_bounds__(THREADS, 1) dual_main(const __grid_constant__ Params p) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    const int tid = threadIdx.x;
    const uint32_t full = smem_addr(smem + BAR_OFFSET), empty = full + STAGES * 8, arrived = empty + STAGES * 8;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(full + 8 * s, 1);
            bar_init(empty + 8 * s, CONSUMERS / 32);  // one arrival per consumer warp
        }
        bar_init(arrived, 1);
        if (p.cluster) bar_expect(arrived, X_BYTES);  // the other slice's part: complete when it has arrived
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // The cluster's barriers are initialised before any CTA of it stores into another: every thread arrives here
    // and the consumers wait just before their first remote store.
    if (p.cluster) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    // A programmatic dependent of the A decode: set up while it runs, then wait for it before touching memory, and
    // only then let the next call's decode start (into the other A buffer; see decode_a).
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

    if (tid >= CONSUMERS) {
        // Producer warpgroup: it gives its registers to the consumers, and one thread walks the same static
        // schedule and keeps the ring full, running ahead into the next tile while the consumers finish this one.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (tid != CONSUMERS) return;
        int j = 0;  // ring position
        for_each_segment<STREAM>(p, [&](int t, int first, int count) {
            const int n0 = (t / p.tiles_m) * 64, m0 = (t % p.tiles_m) * BM;
            const long s_off = long(n0 / 128) * (p.kb / 32) * 512;
            for (int step = first; step < first + count; ++step, ++j) {
                const int stage = j % STAGES;
                if (j >= STAGES) bar_wait(empty + 8 * stage, ((j / STAGES) + 1) & 1);
                const uint32_t bar = full + 8 * stage;
                bar_expect(bar, STAGE_TX);
                tma_load(smem_addr(smem + stage * A_BYTES), &p.map_a, step * BK, m0, bar);
                tma_load(smem_addr(smem + B_OFFSET + stage * B_BYTES), &p.map_b1, step * 32, n0, bar);
                tma_load(smem_addr(smem + B_OFFSET + stage * B_BYTES + 64 * 32), &p.map_b2, step * 32, n0, bar);
                bulk_load(smem_addr(smem + S_OFFSET + stage * S_BYTES), p.sfb1 + s_off + step * 512, 512, bar);
                bulk_load(smem_addr(smem + S_OFFSET + stage * S_BYTES + 512), p.sfb2 + s_off + step * 512, 512, bar);
            }
        });
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));
    // Step g's MMAs are done in this warp: its stage is free.
    auto release = [&](int g) {
        if (tid % 32 == 0) bar_arrive(empty + 8 * (g % STAGES));
    };

    const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, q = lane % 4;
    const int frag_row = wg * 64 + warp * 16 + lane / 4;  // this thread's B rows: frag_row, frag_row + 8
    const int local = tid % 128;                          // the warpgroups swap sums between threads `local`
    // Warpgroup 0 finishes A rows m0 .. m0 + 127 of the tile and 1 the rest: each hands the other its sums there.
    const uint32_t send = smem_addr(smem + X_OFFSET) + (wg * 64 * 128 + local) * 4;
    const uint32_t recv = smem_addr(smem + X_OFFSET) + ((1 - wg) * 64 * 128 + local) * 4;
    int j = 0;  // ring position
    for_each_segment<STREAM>(p, [&](int t, int first, int steps) {
        const int n0 = (t / p.tiles_m) * 64, m0 = (t % p.tiles_m) * BM;
        // Scales arrive as the contest's 512-byte block of 128 rows: row r's 4 bytes sit at (r % 32) * 16 + (r / 32) * 4;
        // this warpgroup's rows start at n0 % 128 of the block, its product's block at wg * 512 of the stage.
        const int r0 = n0 % 128 + frag_row - wg * 64, r1 = r0 + 8;
        const int s_row0 = wg * 512 + (r0 % 32) * 16 + (r0 / 32) * 4, s_row1 = wg * 512 + (r1 % 32) * 16 + (r1 / 32) * 4;
        float d[128];
#pragma unroll
        for (int i = 0; i < 128; ++i) d[i] = 0.f;
        uint32_t ra[4][4] = {}, rb[4][4] = {};
        // One step: decode this K block's fragments into r while the previous step's group (its fragments in prev)
        // may still run, issue four wgmmas, and wait for prev's group. r and prev alternate between two arrays.
        auto step = [&](uint32_t (&r)[4][4], uint32_t (&prev)[4][4], int i) {
            const int stage = j % STAGES;
            bar_wait(full + 8 * stage, (j / STAGES) & 1);
            const uint32_t bt = smem_addr(smem + B_OFFSET + stage * B_BYTES);
            const uint32_t sc = smem_addr(smem + S_OFFSET + stage * S_BYTES);
            const uint32_t block = smem_addr(smem + stage * A_BYTES);
            const uint2 x0 = lds64(bt + frag_row * 32 + q * 8);
            const uint2 x1 = lds64(bt + (frag_row + 8) * 32 + q * 8);
            const uint32_t s0 = scale2(lds8(sc + s_row0 + q));
            const uint32_t s1 = scale2(lds8(sc + s_row1 + q));
            const uint32_t w[4] = {x0.x, x1.x, x0.y, x1.y};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const uint32_t sf = e % 2 == 0 ? s0 : s1;
                uint32_t p[4];
                pairs(w[e], p);
#pragma unroll
                for (int s = 0; s < 4; ++s) r[s][e] = hmul2(p[s], sf);
            }
            wgmma_fence(d, r);
#pragma unroll
            for (int k16 = 0; k16 < 4; ++k16) wgmma_m64n256k16(d, r[k16], smem_desc(block + k16 * 32));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            wgmma_wait<1>(prev);
            // The wait completes the previous stage's group: that stage is free.
            if (i > 0) release(j - 1);
        };
        for (int i = 0; i < steps; ++i, ++j) {
            if (i % 2 == 0) step(ra, rb, i);
            else step(rb, ra, i);
        }
        wgmma_wait_all(d, ra, rb);
        release(j - 1);  // the tile's last stage

        // d[4j + h] holds (A @ B^T)[m0 + 8j + 2q + (h & 1), n0 + frag_row % 64 + 8 * (h >> 1)] / 128, B = B1 in
        // warpgroup 0 and B2 in warpgroup 1, at the same positions for threads with the same `local`. A K-slice
        // adds into its product's workspace; finish() combines them.
        const int nn0 = n0 + frag_row - wg * 64;  // this thread's first column of c
        __half* c = p.c + long(m0) * p.n + nn0;
        if (p.cluster) {  // one unit per CTA: the tile's two slices reduce in the cluster, each finishes its rows
            const uint32_t inbox = smem_addr(smem + X_OFFSET);
            asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
            if (cluster_rank() == 0) {
                reduce_slices<0>(d, inbox, arrived, tid);
                if (wg == 0) finish_rows<0, 0, 8>(d, send, recv, c, p.n, q);
                else finish_rows<1, 0, 8>(d, send, recv, c, p.n, q);
            } else {
                reduce_slices<1>(d, inbox, arrived, tid);
                if (wg == 0) finish_rows<0, 16, 8>(d, send, recv, c, p.n, q);
                else finish_rows<1, 16, 8>(d, send, recv, c, p.n, q);
            }
            return;
        }
        if (STREAM && first > 0) {  // this CTA's first segment, inside a tile: its sums go to the tile's first CTA
            store_part(d, p.part, p.flags, tid);
            return;
        }
        if (STREAM && steps < p.steps) add_parts(d, p, t, tid);
        if (p.split > 1) {
            float* ws = wg == 0 ? p.ws1 : p.ws2;
#pragma unroll
            for (int jj = 0; jj < 32; ++jj)
#pragma unroll
                for (int h = 0; h < 4; ++h) {
                    const int mm = m0 + 8 * jj + 2 * q + (h & 1), nn = nn0 + 8 * (h >> 1);
                    atomicAdd(ws + long(mm) * p.n + nn, d[4 * jj + h] * 128.f);
                }
            return;
        }
        if (wg == 0) finish_rows<0, 0, 16>(d, send, recv, c, p.n, q);
        else finish_rows<1, 0, 16>(d, send, recv, c, p.n, q);
    });
}

__global__ void finish(float* __restrict__ ws1, float* __restrict__ ws2, __half* __restrict__ c, long count) {
    const long i = (long(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
    if (i >= count) return;
    const float4 x1 = *reinterpret_cast<float4*>(ws1 + i), x2 = *reinterpret_cast<float4*>(ws2 + i);
    *reinterpret_cast<float4*>(ws1 + i) = make_float4(0.f, 0.f, 0.f, 0.f);
    *reinterpret_cast<float4*>(ws2 + i) = make_float4(0.f, 0.f, 0.f, 0.f);
    __half2* out = reinterpret_cast<__half2*>(c + i);
    out[0] = __floats2half2_rn(x1.x / (1.f + __expf(-x1.x)) * x2.x, x1.y / (1.f + __expf(-x1.y)) * x2.y);
    out[1] = __floats2half2_rn(x1.z / (1.f + __expf(-x1.z)) * x2.z, x1.w / (1.f + __expf(-x1.w)) * x2.w);
}

}  // namespace

namespace {

// What a stream-K share's part stores and additions cost, in K steps of one tile: its first draft (which took
// stream-K wherever the share was a tenth shorter) ran the m=512 n=3072 shape's 82-step shares in the time of
// about 98 (H100, dual_gemm_diff_v19_v20.txt), and lost on m=256 n=3072 with 24-step shares against 32.
constexpr int FIXUP_STEPS = 16;

// Two K-slices per tile when their rounds of `ctas` units take less time than whole tiles' rounds, else one.
int choose_split(int tiles, int steps, int ctas) {
    if (steps % 2 != 0 || steps / 2 < 4) return 1;
    const int whole = (tiles + ctas - 1) / ctas, halves = (2 * tiles + ctas - 1) / ctas;
    return halves < 2 * whole ? 2 : 1;
}

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                                  const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The parameter block for this call; the last one is kept, so a call on the same tensors (the usual case
// when a kernel is timed) encodes no tensor map.
const Params& params(const std::vector<int64_t>& ptrs, int m, int n, int k, int ctas, int pairs) {
    static std::vector<int64_t> last_ptrs[2];  // two entries: the A buffer alternates between calls
    static int last_dims[2][3] = {};
    static Params cache[2];
    static int next = 0;  // the entry the next miss replaces
    for (int e = 0; e < 2; ++e)
        if (ptrs == last_ptrs[e] && last_dims[e][0] == m && last_dims[e][1] == n && last_dims[e][2] == k) return cache[e];
    Params& p = cache[next];
    TORCH_CHECK(m % BM == 0 && n % 64 == 0 && k % 64 == 0, "dual_gemm v21 needs m % 256 == 0, n % 64 == 0 and k % 64 == 0");
    p = Params{};
    p.m = m; p.n = n; p.kb = k / 2;
    p.tiles_m = m / BM;
    const int tiles = (n / 64) * p.tiles_m;
    p.split = choose_split(tiles, p.kb / 32, ctas);
    p.units = tiles * p.split;
    // A tile's two slices reduce in a cluster when a cluster per tile fits on the GPU at once; otherwise they add
    // into the workspaces and finish() combines them.
    p.cluster = p.split == 2 && tiles <= pairs;
    p.steps = p.kb / 32 / p.split;
    // Stream-K instead where its share of K steps plus the fixup (storing and adding 128 KB parts, counted as
    // FIXUP_STEPS) is below the most loaded CTA's steps under the schedule above.
    const int steps = p.kb / 32, total = tiles * steps;
    const int load = (p.units + ctas - 1) / ctas * p.steps, share = (total + ctas - 1) / ctas;
    if (total >= ctas && (long long)total * ctas < (1ll << 31) && share + FIXUP_STEPS < load) {
        p.stream = 1;
        p.split = 1; p.units = tiles; p.cluster = 0; p.steps = steps; p.total = total;
    }
    p.part = reinterpret_cast<float*>(ptrs[10]);
    p.flags = reinterpret_cast<int*>(ptrs[11]);
    const uint8_t* b1 = reinterpret_cast<const uint8_t*>(ptrs[1]);
    const uint8_t* b2 = reinterpret_cast<const uint8_t*>(ptrs[2]);
    p.c = reinterpret_cast<__half*>(ptrs[3]);
    p.sfb1 = reinterpret_cast<const uint8_t*>(ptrs[5]);
    p.sfb2 = reinterpret_cast<const uint8_t*>(ptrs[6]);
    __half* a16 = reinterpret_cast<__half*>(ptrs[7]);
    p.ws1 = reinterpret_cast<float*>(ptrs[8]);
    p.ws2 = reinterpret_cast<float*>(ptrs[9]);
    static EncodeTiled encode = nullptr;
    if (encode == nullptr) {
        cudaDriverEntryPointQueryResult found;
        TORCH_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                                    cudaEnableDefault, &found) == cudaSuccess && encode != nullptr,
                    "dual_gemm v21: cuTensorMapEncodeTiled not found");
    }
    const cuuint32_t unit[2] = {1, 1};
    const cuuint64_t a_dims[2] = {cuuint64_t(p.kb) * 2, cuuint64_t(p.tiles_m * BM)};
    const cuuint64_t a_stride[1] = {cuuint64_t(p.kb) * 4};
    const cuuint32_t a_box[2] = {64, BM};
    const cuuint64_t b_dims[2] = {cuuint64_t(p.kb), cuuint64_t(n)};
    const cuuint64_t b_stride[1] = {cuuint64_t(p.kb)};
    const cuuint32_t b_box[2] = {BK / 2, 64};  // 32 bytes of codes x 64 rows
    TORCH_CHECK(encode(&p.map_a, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, a16, a_dims, a_stride, a_box, unit,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
                encode(&p.map_b1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(b1), b_dims, b_stride, b_box, unit,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
                encode(&p.map_b2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(b2), b_dims, b_stride, b_box, unit,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS,
                "dual_gemm v21: tensor map encoding failed");
    last_ptrs[next] = ptrs;
    last_dims[next][0] = m; last_dims[next][1] = n; last_dims[next][2] = k;
    next ^= 1;
    return p;
}

}  // namespace

// ptrs: a, b1, b2, c, sfa (rows of k / 16 scales), sfb1, sfb2 (the contest's permuted layout), fp16 A buffer,
// two fp32 workspaces, the stream-K slots (2 x 128 x 128 floats per CTA) and their flags (one int per CTA, zero).
void dual_gemm(std::vector<int64_t> ptrs, int64_t m, int64_t n, int64_t k) {
    static int ctas = 0, pairs = 0;  // CTAs, and clusters of two CTAs, that fit on the GPU at once
    if (ctas == 0) {
        cudaFuncSetAttribute(dual_main<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        cudaFuncSetAttribute(dual_main<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        int sms = 0, per_sm = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, at::cuda::current_device());
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, dual_main<true>, THREADS, SMEM_BYTES);
        TORCH_CHECK(per_sm == 1, "dual_gemm v21: one CTA per SM expected (the stream-K slots are per SM)");
        ctas = sms;
        cudaLaunchConfig_t config = {};
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = 2; attr.val.clusterDim.y = 1; attr.val.clusterDim.z = 1;
        config.gridDim = dim3(2 * ctas); config.blockDim = dim3(THREADS); config.dynamicSmemBytes = SMEM_BYTES;
        config.attrs = &attr; config.numAttrs = 1;
        TORCH_CHECK(cudaOccupancyMaxActiveClusters(&pairs, dual_main<false>, &config) == cudaSuccess,
                    "dual_gemm v21: cluster occupancy query failed");
    }
    const Params& p = params(ptrs, int(m), int(n), int(k), ctas, pairs);
    auto stream = at::cuda::getCurrentCUDAStream();
    // Both kernels are programmatic dependents of the kernel before them in the stream.
    cudaLaunchAttribute attrs[2];
    attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[0].val.programmaticStreamSerializationAllowed = 1;
    attrs[1].id = cudaLaunchAttributeClusterDimension;
    attrs[1].val.clusterDim.x = 2; attrs[1].val.clusterDim.y = 1; attrs[1].val.clusterDim.z = 1;
    cudaLaunchConfig_t config = {};
    config.stream = stream;
    config.attrs = attrs;
    config.numAttrs = 1;
    const int chunks = int(m) * (p.kb / 32);
    config.gridDim = dim3((chunks * 8 + 255) / 256);
    config.blockDim = dim3(256);
    TORCH_CHECK(cudaLaunchKernelEx(&config, decode_a, reinterpret_cast<const uint8_t*>(ptrs[0]),
                                   reinterpret_cast<const uint8_t*>(ptrs[4]), reinterpret_cast<__half*>(ptrs[7]), int(m),
                                   p.kb, long(p.kb), long(p.kb / 8)) == cudaSuccess, "dual_gemm v21: decode launch failed");
    config.gridDim = dim3(p.stream ? ctas : p.cluster ? p.units : std::min(p.units, ctas));
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = SMEM_BYTES;
    config.numAttrs = p.cluster ? 2 : 1;
    TORCH_CHECK(cudaLaunchKernelEx(&config, p.stream ? dual_main<true> : dual_main<false>, p) == cudaSuccess, "dual_gemm v21: launch failed");
    if (p.split > 1 && !p.cluster) {
        const long count = m * n;
        finish<<<(count / 4 + 255) / 256, 256, 0, stream>>>(p.ws1, p.ws2, reinterpret_cast<__half*>(ptrs[3]), count);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
}
""".replace("WGMMA_FUNCTIONS", _wgmma(256))

CPP_SRC = "void dual_gemm(std::vector<int64_t> ptrs, int64_t m, int64_t n, int64_t k);"

_module = None
_scratch = {}  # (device, m, n, kb) -> two fp16 A buffers, two fp32 workspaces kept zero
_calls = {}  # (device, m, n, kb) -> calls so far: consecutive calls decode A into alternate buffers
_checked = None  # the last argument list whose layouts were checked


def custom_kernel(data: input_t) -> output_t:
    global _module, _checked
    if _module is None:
        if torch.cuda.get_device_capability() != (9, 0):
            raise RuntimeError("this version is written for Hopper (wgmma, sm_90a); this GPU is sm_%d%d"
                               % torch.cuda.get_device_capability())
        _module = load_inline("nvfp4_dual_gemm_v21", CPP_SRC, cuda_sources=CUDA_SRC, functions=["dual_gemm"],
                              extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)
    a, b1, b2, sfa, _, _, _, sfb1_permuted, sfb2_permuted, c = data
    m, kb, _ = a.shape
    n = b1.shape[0]
    key = (c.device, m, n, kb)
    if key not in _scratch:
        sms = torch.cuda.get_device_properties(c.device).multi_processor_count
        _scratch[key] = ([torch.empty((m, 2 * kb), dtype=torch.float16, device=c.device) for _ in range(2)],
                         torch.zeros((m, n), dtype=torch.float32, device=c.device),
                         torch.zeros((m, n), dtype=torch.float32, device=c.device),
                         torch.empty((sms, 2 * 128 * 128), dtype=torch.float32, device=c.device),
                         torch.zeros(sms, dtype=torch.int32, device=c.device))
        _calls[key] = 0
    buffers, ws1, ws2, part, flags = _scratch[key]
    a16 = buffers[_calls[key] % 2]  # the last call's main kernel may still read the other one
    _calls[key] += 1
    ptrs = [a.data_ptr(), b1.data_ptr(), b2.data_ptr(), c.data_ptr(), sfa.data_ptr(), sfb1_permuted.data_ptr(),
            sfb2_permuted.data_ptr(), a16.data_ptr(), ws1.data_ptr(), ws2.data_ptr(), part.data_ptr(), flags.data_ptr()]
    if _checked != (ptrs, m, n, kb):
        if (a.shape[2] != 1 or a.stride(0) != kb or b1.stride(0) != kb or b2.stride(0) != kb or c.stride(0) != n
                or sfa.stride(0) != kb // 8):
            raise ValueError("dual_gemm v21 needs l = 1 and row-contiguous a, b1, b2, c and sfa")
        _checked = (ptrs, m, n, kb)
    _module.dual_gemm(ptrs, m, n, 2 * kb)
    return c
