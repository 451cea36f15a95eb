"""dual_gemm v13 — A multicast to a cluster of two CTAs: each A tile is read from L2 once per 128 rows of B.

Parent: v10. Idea: every CTA of v10 read its own copy of the fp16 A tile for 64 rows of B (B1 and B2), so A
crossed from L2 into shared memory n / 64 times: 470 MB on m=512 n=4096 k=7168, 4.2 TB/s in v10's 112 µs main
kernel. Here the two CTAs of a cluster take the two 64-row halves of one 128-row block of B for the same rows
of A: each loads half of every A stage and multicasts it into both CTAs' shared memory
(cp.async.bulk.tensor ... multicast::cluster), so A crosses n / 128 times. A stage is refilled only when the
consumer warps of both CTAs have released it (each warp arrives on its own CTA's barrier and on the peer's).
The A fragments decoded in registers are named by the wgmma_wait that retires their group (v11's finding:
without that the compiler may hand their registers to the next decode while the wgmmas still read them).
Measured (H200, benchmark mode, arena timing): 61.8 / 114.6 / 40.4 / 104.6 µs, geomean 74.0 µs = 2.29x SOL.
Interleaved against v10 (3 rounds, results/h200/dual_gemm_diff_v10_v13.txt): 0.98x (95% CI 0.98-0.99).
Nsight Compute on m=512 n=4096 k=7168 (results/profiles/dual_gemm_v13_shape1.ncu.txt): main kernel 113.5 µs
against v10's 112.3 µs with half the A traffic, so L2 bandwidth is not what bounds v10. A first draft that
arrived with mbarrier.arrive.release.cluster paid a memory barrier per arrival: 0.71x of v10.
Kept as a measured non-result.
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
'''


CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda.h>
#include <cstring>

namespace {

constexpr int WG = 2;                     // consumer warpgroups per CTA, 64 rows of B each
constexpr int BN = 64 * WG;               // rows of B per stage: 64 of B1, then the same 64 of B2
constexpr int BM = 128;                   // rows of A per CTA: the wgmma N
constexpr int BK = 128;                   // K per step: two 64-wide K blocks
constexpr int STAGES = 4;
constexpr int CONSUMERS = 128 * WG;        // consumer threads; one more warp loads
constexpr int THREADS = CONSUMERS + 32;
constexpr int A_BLOCK = BM * 64 * 2;      // fp16 A for one 64-wide K block, 128-byte rows, 128-byte swizzle
constexpr int A_BYTES = 2 * A_BLOCK;
constexpr int B_BYTES = BN * BK / 2;      // packed B tile, 64-byte rows
constexpr int S_BYTES = 2 * 1024;         // B1 then B2 scales: each two 512-byte blocks of the contest layout
constexpr int STAGE_TX = A_BYTES + B_BYTES + S_BYTES;  // bytes the copy engine delivers per stage
// Shared memory: all A stages first (each 1024-byte aligned, as the 128-byte swizzle needs), then B, then
// scales, then the full / empty mbarrier pairs of the ring.
constexpr int B_OFFSET = STAGES * A_BYTES;
constexpr int S_OFFSET = B_OFFSET + STAGES * B_BYTES;
constexpr int X_OFFSET = S_OFFSET + STAGES * S_BYTES;  // warpgroup 1 -> 0: 64 floats per thread
constexpr int BAR_OFFSET = X_OFFSET + 64 * 128 * 4;
constexpr int SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 1024;

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

// A 2-D tile from a tensor map into the same shared-memory offset of both CTAs of the cluster; each CTA's barrier
// at `bar`'s offset counts the bytes that land in it.
__device__ __forceinline__ void tma_load_both(uint32_t dst, const CUtensorMap* map, int x, int y, uint32_t bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(bar), "h"(uint16_t(3)) : "memory");
}

// An arrival on the barrier at `bar`'s offset in CTA `rank` of the cluster. The default (CTA-scope) release: the
// stage's readers are wgmmas this warp has already waited for, so no cluster-wide fence is needed before the peer
// overwrites it (with .release.cluster every arrival cost a memory barrier: 0.71x of v10 in a first draft).
__device__ __forceinline__ void bar_arrive_at(uint32_t bar, uint32_t rank) {
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" :: "r"(bar), "r"(rank) : "memory");
}

// All threads of the cluster that have not exited: shared-memory writes and barrier inits before it are visible after it.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
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

// Codes s and s+4 of w -> fp16x2 (value * 2^-14, exact).
template <int S>
__device__ __forceinline__ uint32_t pair(uint32_t w) {
    const uint32_t mag = S < 3 ? (w << (9 - 4 * S)) : (w >> 3);
    const uint32_t sgn = S < 3 ? (w << (12 - 4 * S)) : w;
    return (mag & 0x0E000E00u) | (sgn & 0x80008000u);
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
    int m, n, kb, tiles_m, pairs, split, steps;  // pairs: (m / 128) x (n / 128) tile pairs x split; steps: per slice
    const uint8_t* sfb1;                  // the contest's (32, 4, rest_n, 4, rest_k) scale layout
    const uint8_t* sfb2;
    __half* c;
    float* ws1;                                  // split > 1: fp32 m x n sums of each product, zero between calls
    float* ws2;
};

// A -> fp16, K permuted inside each 64-block to match the B fragments: position s*16 + c holds element
// (c%8)/2*16 + (c/8)*8 + s + 4*(c%2). A thread writes one 16-byte piece (positions 8i .. 8i+7 of a 64-block:
// element (t/2)*16 + (i%2)*8 + i/2 + 4*(t%2) at position 8i + t), so a warp's stores are contiguous; the 8
// threads of a block read the same 32 bytes of codes and 4 scales.
__global__ void decode_a(const uint8_t* __restrict__ a, const uint8_t* __restrict__ sfa, __half* __restrict__ out,
                         int m, int kb, long s_am, long s_sam) {
    const int chunks = kb / 32;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    const int chunk = idx >> 3, i = idx & 7;
    if (chunk >= m * chunks) return;
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

__global__ void __launch_bounds__(THREADS, 1) dual_main(const __grid_constant__ Params p) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    const int tid = threadIdx.x;
    const uint32_t full = smem_addr(smem + BAR_OFFSET), empty = full + STAGES * 8;
    // The two CTAs of a cluster take the two 64-row halves of B of one 128-row block, for the same rows of A: each
    // loads half of every A stage and multicasts it to both, so a stage is free only when both CTAs are done with it.
    uint32_t rank;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(full + 8 * s, 1);
            bar_init(empty + 8 * s, 2 * CONSUMERS / 32);  // one arrival per consumer warp of either CTA
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();  // the peer's barriers are initialised before anything lands in them

    if (tid >= CONSUMERS) {
        // Producer warp: one thread walks the same static schedule and keeps the ring full, running
        // ahead into the next tile while the consumers finish this one.
        if (tid != CONSUMERS) return;
        int j = 0;  // ring position
        for (int u = cluster; u < p.pairs; u += clusters) {
            const int t = u / p.split, first = (u % p.split) * p.steps;
            const int n0 = ((t / p.tiles_m) * 2 + rank) * 64, m0 = (t % p.tiles_m) * BM;
            const long s_off = long(n0 / 128) * ((p.kb / 8 + 3) / 4) * 512;
            for (int step = first; step < first + p.steps; ++step, ++j) {
                const int stage = j % STAGES;
                if (j >= STAGES) bar_wait(empty + 8 * stage, ((j / STAGES) + 1) & 1);
                const uint32_t bar = full + 8 * stage;
                bar_expect(bar, STAGE_TX);
                const uint32_t half = rank * (A_BLOCK / 2);  // this CTA's 64 rows of the 128
                tma_load_both(smem_addr(smem + stage * A_BYTES) + half, &p.map_a, step * BK, m0 + 64 * rank, bar);
                tma_load_both(smem_addr(smem + stage * A_BYTES + A_BLOCK) + half, &p.map_a, step * BK + 64, m0 + 64 * rank, bar);
                tma_load(smem_addr(smem + B_OFFSET + stage * B_BYTES), &p.map_b1, step * 64, n0, bar);
                tma_load(smem_addr(smem + B_OFFSET + stage * B_BYTES + 64 * 64), &p.map_b2, step * 64, n0, bar);
                bulk_load(smem_addr(smem + S_OFFSET + stage * S_BYTES), p.sfb1 + s_off + step * 1024, 1024, bar);
                bulk_load(smem_addr(smem + S_OFFSET + stage * S_BYTES + 1024), p.sfb2 + s_off + step * 1024, 1024, bar);
            }
        }
        return;
    }

    const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, q = lane % 4;
    const int frag_row = wg * 64 + warp * 16 + lane / 4;  // this thread's B rows: frag_row, frag_row + 8
    const int local = tid % 128;                          // warpgroup 1 hands its sums to thread `local` of 0
    float* xchg = reinterpret_cast<float*>(smem + X_OFFSET);
    int j = 0;  // ring position
    for (int u = cluster; u < p.pairs; u += clusters) {
        const int t = u / p.split;
        const int n0 = ((t / p.tiles_m) * 2 + rank) * 64, m0 = (t % p.tiles_m) * BM;
        const int steps = p.steps;
        // Scales arrive as the contest's 512-byte block of 128 rows: row r's 4 bytes sit at (r % 32) * 16 + (r / 32) * 4;
        // this warpgroup's rows start at n0 % 128 of the block, its product's block at wg * 1024 of the stage.
        const int r0 = n0 % 128 + frag_row - wg * 64, r1 = r0 + 8;
        const int s_row0 = wg * 1024 + (r0 % 32) * 16 + (r0 / 32) * 4, s_row1 = wg * 1024 + (r1 % 32) * 16 + (r1 / 32) * 4;
        float d[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) d[i] = 0.f;
        uint32_t ra[4][4] = {}, rb[4][4] = {};  // the fragments of K blocks 0 and 1 of a stage
        for (int i = 0; i < steps; ++i, ++j) {
            const int stage = j % STAGES;
            bar_wait(full + 8 * stage, (j / STAGES) & 1);
            const uint8_t* bt = smem + B_OFFSET + stage * B_BYTES;
            const uint8_t* sc = smem + S_OFFSET + stage * S_BYTES;
            const uint32_t a_addr = smem_addr(smem + stage * A_BYTES);
#pragma unroll
            for (int blk = 0; blk < 2; ++blk) {
                // Each 64-wide K block is decoded while the previous block's MMAs still run; one group stays in flight.
                const uint2 x0 = *reinterpret_cast<const uint2*>(bt + frag_row * 64 + blk * 32 + q * 8);
                const uint2 x1 = *reinterpret_cast<const uint2*>(bt + (frag_row + 8) * 64 + blk * 32 + q * 8);
                const uint32_t s0 = scale2(sc[blk * 512 + s_row0 + q]);
                const uint32_t s1 = scale2(sc[blk * 512 + s_row1 + q]);
                const uint32_t block = a_addr + blk * A_BLOCK;
                // This block's fragments go to r while the other block's (prev) may still be read by running wgmmas.
                uint32_t (&r)[4][4] = blk == 0 ? ra : rb;
                uint32_t (&prev)[4][4] = blk == 0 ? rb : ra;
                const uint32_t w[4] = {x0.x, x1.x, x0.y, x1.y};
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const uint32_t sf = e % 2 == 0 ? s0 : s1;
                    r[0][e] = hmul2(pair<0>(w[e]), sf);
                    r[1][e] = hmul2(pair<1>(w[e]), sf);
                    r[2][e] = hmul2(pair<2>(w[e]), sf);
                    r[3][e] = hmul2(pair<3>(w[e]), sf);
                }
                wgmma_fence(d, r);
#pragma unroll
                for (int k16 = 0; k16 < 4; ++k16) wgmma_m64n128k16(d, r[k16], smem_desc(block + k16 * 32));
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                wgmma_wait<1>(prev);
                // Block 0's wait completes the previous stage's last group: that stage is free.
                if (blk == 0 && i > 0 && lane == 0) {
                    bar_arrive(empty + 8 * ((j - 1) % STAGES));
                    bar_arrive_at(empty + 8 * ((j - 1) % STAGES), rank ^ 1);
                }
            }
        }
        wgmma_wait<0>(ra);
        wgmma_wait<0>(rb);
        if (lane == 0) {  // the tile's last stage
            bar_arrive(empty + 8 * ((j - 1) % STAGES));
            bar_arrive_at(empty + 8 * ((j - 1) % STAGES), rank ^ 1);
        }

        // d[4j + h] holds (A @ B^T)[m0 + 8j + 2q + (h & 1), n0 + frag_row % 64 + 8 * (h >> 1)] / 128, B = B1 in
        // warpgroup 0 and B2 in warpgroup 1, at the same positions for threads with the same `local`. A K-slice
        // adds into its product's workspace; finish() combines them.
        if (p.split > 1) {
            float* ws = wg == 0 ? p.ws1 : p.ws2;
#pragma unroll
            for (int jj = 0; jj < 16; ++jj)
#pragma unroll
                for (int h = 0; h < 4; ++h) {
                    const int mm = m0 + 8 * jj + 2 * q + (h & 1), nn = n0 + frag_row - wg * 64 + 8 * (h >> 1);
                    atomicAdd(ws + long(mm) * p.n + nn, d[4 * jj + h] * 128.f);
                }
            continue;
        }
        if (wg == 1) {
#pragma unroll
            for (int i = 0; i < 64; ++i) xchg[i * 128 + local] = d[i];
        }
        asm volatile("bar.sync 1, %0;" :: "n"(CONSUMERS) : "memory");
        if (wg == 0) {
#pragma unroll
            for (int jj = 0; jj < 16; ++jj)
#pragma unroll
                for (int h = 0; h < 4; ++h) {
                    const float x1 = d[4 * jj + h] * 128.f, x2 = xchg[(4 * jj + h) * 128 + local] * 128.f;
                    const int mm = m0 + 8 * jj + 2 * q + (h & 1), nn = n0 + frag_row + 8 * (h >> 1);
                    if (mm < p.m) p.c[long(mm) * p.n + nn] = __float2half_rn(x1 / (1.f + __expf(-x1)) * x2);
                }
        }
        asm volatile("bar.sync 1, %0;" :: "n"(CONSUMERS) : "memory");  // the exchange buffer is free again
    }
    cluster_sync();  // the peer no longer arrives on this CTA's barriers
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
const Params& params(const std::vector<int64_t>& ptrs, int m, int n, int k, int ctas) {
    static std::vector<int64_t> last_ptrs;
    static int last_dims[3] = {0, 0, 0};
    static Params p;
    if (ptrs == last_ptrs && last_dims[0] == m && last_dims[1] == n && last_dims[2] == k) return p;
    TORCH_CHECK(m % BM == 0 && n % 128 == 0 && k % 128 == 0, "dual_gemm v13 needs m % 128 == 0, n % 128 == 0 and k % 128 == 0");
    p = Params{};
    p.m = m; p.n = n; p.kb = k / 2;
    p.tiles_m = m / BM;
    const int tiles = (n / 64) * p.tiles_m;
    p.split = choose_split(tiles, p.kb / 64, ctas);
    p.pairs = tiles / 2 * p.split;
    p.steps = p.kb / 64 / p.split;
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
                    "dual_gemm v13: cuTensorMapEncodeTiled not found");
    }
    const cuuint32_t unit[2] = {1, 1};
    const cuuint64_t a_dims[2] = {cuuint64_t(p.kb) * 2, cuuint64_t(p.tiles_m * BM)};
    const cuuint64_t a_stride[1] = {cuuint64_t(p.kb) * 4};
    const cuuint32_t a_box[2] = {64, BM / 2};  // each CTA of a cluster loads half the rows
    const cuuint64_t b_dims[2] = {cuuint64_t(p.kb), cuuint64_t(n)};
    const cuuint64_t b_stride[1] = {cuuint64_t(p.kb)};
    const cuuint32_t b_box[2] = {BK / 2, 64};
    TORCH_CHECK(encode(&p.map_a, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, a16, a_dims, a_stride, a_box, unit,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
                encode(&p.map_b1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(b1), b_dims, b_stride, b_box, unit,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
                encode(&p.map_b2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(b2), b_dims, b_stride, b_box, unit,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS,
                "dual_gemm v13: tensor map encoding failed");
    last_ptrs = ptrs;
    last_dims[0] = m; last_dims[1] = n; last_dims[2] = k;
    return p;
}

}  // namespace

// ptrs: a, b1, b2, c, sfa (rows of k / 16 scales), sfb1, sfb2 (the contest's permuted layout), fp16 A buffer,
// two fp32 workspaces.
void dual_gemm(std::vector<int64_t> ptrs, int64_t m, int64_t n, int64_t k) {
    static int ctas = 0;  // CTAs of the clusters of 2 that fit on the GPU at once
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2; attr.val.clusterDim.y = 1; attr.val.clusterDim.z = 1;
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = SMEM_BYTES;
    config.attrs = &attr; config.numAttrs = 1;
    if (ctas == 0) {
        cudaFuncSetAttribute(dual_main, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        int clusters = 0;
        config.gridDim = dim3(2);
        TORCH_CHECK(cudaOccupancyMaxActiveClusters(&clusters, dual_main, &config) == cudaSuccess && clusters > 0,
                    "dual_gemm v13: cluster occupancy query failed");
        ctas = 2 * clusters;
    }
    const Params& p = params(ptrs, int(m), int(n), int(k), ctas);
    auto stream = at::cuda::getCurrentCUDAStream();
    const int chunks = int(m) * (p.kb / 32);
    decode_a<<<(chunks * 8 + 255) / 256, 256, 0, stream>>>(
        reinterpret_cast<const uint8_t*>(ptrs[0]), reinterpret_cast<const uint8_t*>(ptrs[4]),
        reinterpret_cast<__half*>(ptrs[7]), int(m), p.kb, p.kb, p.kb / 8);
    config.gridDim = dim3(2 * std::min(p.pairs, ctas / 2));
    config.stream = stream;
    TORCH_CHECK(cudaLaunchKernelEx(&config, dual_main, p) == cudaSuccess, "dual_gemm v13: launch failed");
    if (p.split > 1) {
        const long count = m * n;
        finish<<<(count / 4 + 255) / 256, 256, 0, stream>>>(p.ws1, p.ws2, reinterpret_cast<__half*>(ptrs[3]), count);
    }
}
""".replace("WGMMA_FUNCTIONS", _wgmma(128))

CPP_SRC = "void dual_gemm(std::vector<int64_t> ptrs, int64_t m, int64_t n, int64_t k);"

_module = None
_scratch = {}  # (device, m, n, kb) -> fp16 A buffer, two fp32 workspaces kept zero
_checked = None  # the last argument list whose layouts were checked


def custom_kernel(data: input_t) -> output_t:
    global _module, _checked
    if _module is None:
        if torch.cuda.get_device_capability() != (9, 0):
            raise RuntimeError("this version is written for Hopper (wgmma, sm_90a); this GPU is sm_%d%d"
                               % torch.cuda.get_device_capability())
        _module = load_inline("nvfp4_dual_gemm_v13", CPP_SRC, cuda_sources=CUDA_SRC, functions=["dual_gemm"],
                              extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)
    a, b1, b2, sfa, _, _, _, sfb1_permuted, sfb2_permuted, c = data
    m, kb, _ = a.shape
    n = b1.shape[0]
    key = (c.device, m, n, kb)
    if key not in _scratch:
        _scratch[key] = (torch.empty((m, 2 * kb), dtype=torch.float16, device=c.device),
                         torch.zeros((m, n), dtype=torch.float32, device=c.device),
                         torch.zeros((m, n), dtype=torch.float32, device=c.device))
    a16, ws1, ws2 = _scratch[key]
    ptrs = [a.data_ptr(), b1.data_ptr(), b2.data_ptr(), c.data_ptr(), sfa.data_ptr(), sfb1_permuted.data_ptr(),
            sfb2_permuted.data_ptr(), a16.data_ptr(), ws1.data_ptr(), ws2.data_ptr()]
    if _checked != (ptrs, m, n, kb):
        if (a.shape[2] != 1 or a.stride(0) != kb or b1.stride(0) != kb or b2.stride(0) != kb or c.stride(0) != n
                or sfa.stride(0) != kb // 8):
            raise ValueError("dual_gemm v13 needs l = 1 and row-contiguous a, b1, b2, c and sfa")
        _checked = (ptrs, m, n, kb)
    _module.dual_gemm(ptrs, m, n, 2 * kb)
    return c
