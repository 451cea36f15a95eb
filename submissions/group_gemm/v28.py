"""group_gemm v28 — a loader warpgroup that gives its registers to the consumers (setmaxnreg), fragments pinned.

Parent: v27. Idea: dual_gemm v14's register split. The one loading warp becomes a warpgroup that drops to 40
registers while the two consumer warpgroups rise to 232 (setmaxnreg), and each K block's decoded B fragments
are read-write operands of the wgmmas, the fence and the wait that retires their group (two alternating arrays,
as dual_gemm v11 on): the compiler can no longer hand a running wgmma's fragment registers to the next block's
decode. Tiles, ring and epilogue are v27's. This is the register budget that v29's taller tiles need.
(The operands alone do not pin the fragments: ptxas sees no use of them after their wgmma in the PTX. This build
has no fragment written under a running wgmma, by scripts/compile_check.py's SASS check; v29 also folds them
after their wait, a later use that keeps them allocated past their wgmma.)
Measured (H200, arena timing, 3 interleaved rounds, results/h200/group_gemm_diff_v27_v28_v29.txt): 1.013x of v27
(95% CI 1.01-1.02), per shape 1.03 / 1.03 / 1.01 / 0.99x.
Benchmark mode (H200, arena timing): 135.5 / 84.5 / 31.3 / 17.2 µs, geomean 49.8 µs = 2.50x SOL (H100: 50.4 µs).
"""
import torch
from torch.utils.cpp_extension import load_inline
from task import input_t, output_t


def _wgmma(n: int) -> str:
    """C++ for one wgmma.m64n{n}k16 with f32 accumulators, A from registers, B from a descriptor, and the fence and
    waits that name the registers the wgmmas read and write."""
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
// registers while they run, and without this the compiler may give those registers to the next block's decode.
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
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda.h>
#include <cstring>

namespace {

constexpr int MAX_GROUPS = 8;
constexpr int WG = 2;                     // consumer warpgroups per CTA, 64 rows of B each
constexpr int BN = 64 * WG;               // rows of B (columns of c) per CTA
constexpr int BM = 128;                   // rows of A per CTA: the wgmma N
constexpr int BK = 128;                   // K per step: two 64-wide K blocks
constexpr int STAGES = 4;
constexpr int CONSUMERS = 128 * WG;        // consumer threads; one more warpgroup loads
constexpr int THREADS = CONSUMERS + 128;
// Registers per thread after setmaxnreg: 128 * 40 + 256 * 232 = the 384 * 168 the CTA starts with.
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;
constexpr int A_BLOCK = BM * 64 * 2;      // fp16 A for one 64-wide K block, 128-byte rows, 128-byte swizzle
constexpr int A_BYTES = 2 * A_BLOCK;
constexpr int B_BYTES = BN * BK / 2;      // packed B tile, 64-byte rows
constexpr int S_BYTES = BN * BK / 16;     // B scales: two 512-byte blocks of the contest layout
constexpr int STAGE_TX = A_BYTES + B_BYTES + S_BYTES;  // bytes the copy engine delivers per stage
// Shared memory: all A stages first (each 1024-byte aligned, as the 128-byte swizzle needs), then B, then
// scales, then the full / empty mbarrier pairs of the ring.
constexpr int B_OFFSET = STAGES * A_BYTES;
constexpr int S_OFFSET = B_OFFSET + STAGES * B_BYTES;
constexpr int C_ROWS = 32;                // rows of c per TMA store (a 64 x 32 box per warpgroup)
constexpr int C_BYTES = C_ROWS * 64 * 2;  // one staging box, 128-byte swizzle; two per warpgroup
constexpr int C_OFFSET = S_OFFSET + STAGES * S_BYTES;
constexpr int BAR_OFFSET = C_OFFSET + 2 * WG * C_BYTES;
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

// A 2-D box of shared memory out to the tensor map's tensor (rows past its end are dropped), in a bulk group.
__device__ __forceinline__ void tma_store(const CUtensorMap* map, uint32_t src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(x), "r"(y) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Contiguous bytes into shared memory through the copy engine.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, int bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
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

// Per-call group table, passed by value (the seed's __grid_constant__ GroupDesc), with each group's
// tensor maps for its fp16 A (128-byte swizzle, 64 x 128 boxes), packed B (32 x 128 byte boxes) and c.
struct Groups {
    CUtensorMap map_a[MAX_GROUPS];
    CUtensorMap map_b[MAX_GROUPS];
    CUtensorMap map_c[MAX_GROUPS];  // c, 64 x 32 boxes, 128-byte swizzle
    int count;
    int m[MAX_GROUPS], n[MAX_GROUPS], kb[MAX_GROUPS];
    int tile_start[MAX_GROUPS + 1];   // flattened (n / BN) x ceil(m / BM) tiles
    int chunk_start[MAX_GROUPS + 1];  // flattened m x (kb / 32) decode chunks
    long a16_off[MAX_GROUPS];         // element offset of the group's fp16 A (rows padded to BM)
    const uint8_t* a[MAX_GROUPS];
    const uint8_t* b[MAX_GROUPS];
    const uint8_t* sfa[MAX_GROUPS];   // the contest's (32, 4, rest_mn, 4, rest_k) scale layout
    const uint8_t* sfb[MAX_GROUPS];
    __half* c[MAX_GROUPS];
};

// Byte offset of the 4 scales of row r, K columns 64 * step .. 64 * step + 63, in the MMA scale layout.
__device__ __forceinline__ long scale_offset(int r, int step, int kb) {
    const int rest_k = (kb / 8 + 3) / 4;
    return (long(r / 128) * rest_k + step) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4;
}

__device__ __forceinline__ int find_group(const Groups& g, const int* start, int index) {
    int found = 0;
#pragma unroll
    for (int i = 1; i < MAX_GROUPS; ++i) found += (i < g.count && index >= start[i]);
    return found;
}

// Every group's A -> fp16, K permuted inside each 64-block to match the B fragments: position s*16 + c holds
// element (c%8)/2*16 + (c/8)*8 + s + 4*(c%2). A thread writes one 16-byte piece (positions 8i .. 8i+7 of a
// 64-block: element (t/2)*16 + (i%2)*8 + i/2 + 4*(t%2) at position 8i + t), so a warp's stores are contiguous;
// the 8 threads of a 64-block read the same 32 bytes of codes and 4 scales.
__global__ void decode_a(const __grid_constant__ Groups g, __half* __restrict__ out) {
    // A programmatic dependent of the kernel before it (the last call's main kernel, which reads the same buffer):
    // it lets the main kernel after it be placed at once, and waits for the one before it before touching memory.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    const int chunk = idx >> 3, i = idx & 7;
    if (chunk >= g.chunk_start[g.count]) return;
    const int gi = find_group(g, g.chunk_start, chunk);
    const int chunks = g.kb[gi] / 32, local = chunk - g.chunk_start[gi];
    const int row = local / chunks, ch = local % chunks;
    const uint4* src = reinterpret_cast<const uint4*>(g.a[gi] + long(row) * g.kb[gi] + ch * 32);
    const uint4 lo = src[0], hi = src[1];
    const uint32_t sc = *reinterpret_cast<const uint32_t*>(g.sfa[gi] + scale_offset(row, ch, g.kb[gi]));
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
    *reinterpret_cast<uint4*>(out + g.a16_off[gi] + long(row) * g.kb[gi] * 2 + ch * 64 + 8 * i) =
        make_uint4(words[0], words[1], words[2], words[3]);
}

__global__ void __launch_bounds__(THREADS, 1) group_main(const __grid_constant__ Groups g) {
    extern __shared__ uint8_t smem_raw[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    const int tid = threadIdx.x;
    const uint32_t full = smem_addr(smem + BAR_OFFSET), empty = full + STAGES * 8;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(full + 8 * s, 1);
            bar_init(empty + 8 * s, CONSUMERS / 32);  // one arrival per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // A programmatic dependent of the A decode: set up while it runs, then wait for it before touching memory.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    const int tiles = g.tile_start[g.count];

    if (tid >= CONSUMERS) {
        // Producer warpgroup: it gives its registers to the consumers, and one thread walks the same static
        // schedule and keeps the ring full, running ahead into the next tile while the consumers finish this one.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(PRODUCER_REGS));
        if (tid != CONSUMERS) return;
        int j = 0;  // ring position
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int gi = find_group(g, g.tile_start, t);
            const int tile = t - g.tile_start[gi];
            const int tiles_m = (g.m[gi] + BM - 1) / BM;
            const int n0 = (tile / tiles_m) * BN, m0 = (tile % tiles_m) * BM;
            const int kb = g.kb[gi], steps = kb / 64;
            const uint8_t* sfb = g.sfb[gi] + long(n0 / 128) * ((kb / 8 + 3) / 4) * 512;
            for (int step = 0; step < steps; ++step, ++j) {
                const int stage = j % STAGES;
                if (j >= STAGES) bar_wait(empty + 8 * stage, ((j / STAGES) + 1) & 1);
                const uint32_t bar = full + 8 * stage;
                bar_expect(bar, STAGE_TX);
                tma_load(smem_addr(smem + stage * A_BYTES), &g.map_a[gi], step * BK, m0, bar);
                tma_load(smem_addr(smem + stage * A_BYTES + A_BLOCK), &g.map_a[gi], step * BK + 64, m0, bar);
                tma_load(smem_addr(smem + B_OFFSET + stage * B_BYTES), &g.map_b[gi], step * 64, n0, bar);
                bulk_load(smem_addr(smem + S_OFFSET + stage * S_BYTES), sfb + step * 1024, S_BYTES, bar);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(CONSUMER_REGS));

    const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32, q = lane % 4;
    const int frag_row = wg * 64 + warp * 16 + lane / 4;  // this thread's B rows: frag_row, frag_row + 8
    // Scales arrive as the contest's 512-byte block of 128 rows: row r's 4 bytes sit at (r % 32) * 16 + (r / 32) * 4.
    const int s_row0 = (frag_row % 32) * 16 + (frag_row / 32) * 4, s_row1 = ((frag_row + 8) % 32) * 16 + ((frag_row + 8) / 32) * 4;
    const uint32_t c_boxes = smem_addr(smem + C_OFFSET + 2 * wg * C_BYTES);
    int chunk_count = 0;  // chunks this warpgroup has staged: chunk i uses box i % 2
    int j = 0;  // ring position
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int gi = find_group(g, g.tile_start, t);
        const int tile = t - g.tile_start[gi];
        const int tiles_m = (g.m[gi] + BM - 1) / BM;
        const int n0 = (tile / tiles_m) * BN, m0 = (tile % tiles_m) * BM;
        const int steps = g.kb[gi] / 64, m = g.m[gi];
        float d[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) d[i] = 0.f;
        // K block 0 of a stage is decoded into ra and block 1 into rb, each while the other's group may still run;
        // the fragments are operands of the wgmmas, the fence and the wait that retires their group.
        uint32_t ra[4][4] = {}, rb[4][4] = {};
        auto block = [&](uint32_t (&r)[4][4], uint32_t (&prev)[4][4], const uint8_t* bt, const uint8_t* sc, uint32_t a_block) {
            const uint2 x0 = *reinterpret_cast<const uint2*>(bt + frag_row * 64 + q * 8);
            const uint2 x1 = *reinterpret_cast<const uint2*>(bt + (frag_row + 8) * 64 + q * 8);
            const uint32_t s0 = scale2(sc[s_row0 + q]);
            const uint32_t s1 = scale2(sc[s_row1 + q]);
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
            for (int k16 = 0; k16 < 4; ++k16) wgmma_m64n128k16(d, r[k16], smem_desc(a_block + k16 * 32));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            wgmma_wait<1>(prev);
        };
        for (int i = 0; i < steps; ++i, ++j) {
            const int stage = j % STAGES;
            bar_wait(full + 8 * stage, (j / STAGES) & 1);
            const uint8_t* bt = smem + B_OFFSET + stage * B_BYTES;
            const uint8_t* sc = smem + S_OFFSET + stage * S_BYTES;
            const uint32_t a_addr = smem_addr(smem + stage * A_BYTES);
            block(ra, rb, bt, sc, a_addr);
            // Block 0's wait completes the previous stage's last group: that stage is free.
            if (i > 0 && lane == 0) bar_arrive(empty + 8 * ((j - 1) % STAGES));
            block(rb, ra, bt + 32, sc + 512, a_addr + A_BLOCK);
        }
        wgmma_wait_all(d, ra, rb);
        if (lane == 0) bar_arrive(empty + 8 * ((j - 1) % STAGES));  // the tile's last stage

        // d[4j + h] holds c[m0 + 8j + 2q + (h & 1), n0 + frag_row + 8 * (h >> 1)] / 128. Each warpgroup stages its
        // 64 columns in 32-row chunks through two boxes, so a chunk is converted while the copy engine still
        // stores the one before (the seed's V9); rows past m are dropped by the store.
#pragma unroll
        for (int chunk = 0; chunk < 4; ++chunk) {
            if (m0 + C_ROWS * chunk >= m) break;
            // At most one store in flight: the one reading the other box.
            if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
            asm volatile("bar.sync %0, 128;" :: "r"(1 + wg) : "memory");
            uint32_t box;  // opaque to the compiler, so the store addresses are not hoisted out of the tile loop
            asm volatile("mov.u32 %0, %1;" : "=r"(box) : "r"(c_boxes + (chunk_count % 2) * C_BYTES));
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                // Row 8jj + r of the box, column col: its 16-byte chunk is swizzled by r (= row % 8).
                const int r = 2 * q + (h & 1), col = warp * 16 + lane / 4 + 8 * (h >> 1);
                const uint32_t at = box + r * 128 + (((col / 8) ^ r) << 4) + (col % 8) * 2;
#pragma unroll
                for (int jj = 0; jj < 4; ++jj) {
                    const __half v = __float2half_rn(d[4 * (jj + 4 * chunk) + h] * 128.f);
                    asm volatile("st.shared.b16 [%0], %1;" :: "r"(at + jj * 1024), "h"(__half_as_ushort(v)) : "memory");
                }
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic writes -> the copy engine's reads
            asm volatile("bar.sync %0, 128;" :: "r"(1 + wg) : "memory");
            if (tid % 128 == 0) tma_store(&g.map_c[gi], box, n0 + 64 * wg, m0 + C_ROWS * chunk);
            ++chunk_count;
        }
    }
    if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // before shared memory goes
}

}  // namespace

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                                  const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// Per call, from Python: for each group the addresses of a, b, c, sfa, sfb and its m, n, k, then the fp16 A buffer's
// address and size. The layouts were checked on the Python side.
struct TableKey {
    int count = 0;
    int64_t ptr[MAX_GROUPS][5] = {};
    int64_t dims[MAX_GROUPS][3] = {};
    int64_t a16 = 0;
};

// The group table (sizes, addresses, 24 tensor maps) for this call. The last one is kept: a call on the same
// tensors, the usual case when a kernel is timed, reuses it without encoding a tensor map.
const Groups& group_table(const std::vector<int64_t>& ptrs, const std::vector<int64_t>& dims, int64_t a16,
                          int64_t a16_elements) {
    static TableKey last_key;
    static Groups g;
    TableKey key;
    key.count = int(dims.size() / 3);
    TORCH_CHECK(key.count >= 1 && key.count <= MAX_GROUPS && ptrs.size() == size_t(5 * key.count),
                "group_gemm v28 takes 1 to 8 groups");
    std::memcpy(key.ptr, ptrs.data(), ptrs.size() * sizeof(int64_t));
    std::memcpy(key.dims, dims.data(), dims.size() * sizeof(int64_t));
    key.a16 = a16;
    if (std::memcmp(&key, &last_key, sizeof(TableKey)) == 0) return g;

    const int count = key.count;
    g = Groups{};
    g.count = count;
    for (int i = 0; i < count; ++i) {
        g.m[i] = int(key.dims[i][0]);
        g.n[i] = int(key.dims[i][1]);
        g.kb[i] = int(key.dims[i][2] / 2);
        TORCH_CHECK(g.n[i] % BN == 0 && g.kb[i] % 64 == 0, "group_gemm v28 needs n % 128 == 0 and k % 128 == 0");
        g.a[i] = reinterpret_cast<const uint8_t*>(key.ptr[i][0]);
        g.b[i] = reinterpret_cast<const uint8_t*>(key.ptr[i][1]);
        g.c[i] = reinterpret_cast<__half*>(key.ptr[i][2]);
        g.sfa[i] = reinterpret_cast<const uint8_t*>(key.ptr[i][3]);
        g.sfb[i] = reinterpret_cast<const uint8_t*>(key.ptr[i][4]);
        g.tile_start[i + 1] = g.tile_start[i] + (g.n[i] / BN) * ((g.m[i] + BM - 1) / BM);
        g.chunk_start[i + 1] = g.chunk_start[i] + g.m[i] * (g.kb[i] / 32);
    }
    long offset = 0;
    for (int i = 0; i < count; ++i) {
        g.a16_off[i] = offset;
        offset += long((g.m[i] + BM - 1) / BM * BM) * g.kb[i] * 2;
    }
    TORCH_CHECK(a16_elements >= offset, "group_gemm v28: fp16 A buffer too small");
    __half* a16p = reinterpret_cast<__half*>(a16);
    static EncodeTiled encode = nullptr;
    if (encode == nullptr) {
        cudaDriverEntryPointQueryResult found;
        TORCH_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode), 12000,
                                                    cudaEnableDefault, &found) == cudaSuccess && encode != nullptr,
                    "group_gemm v28: cuTensorMapEncodeTiled not found");
    }
    for (int i = 0; i < count; ++i) {
        const cuuint32_t unit[2] = {1, 1};
        const cuuint64_t a_dims[2] = {cuuint64_t(g.kb[i]) * 2, cuuint64_t((g.m[i] + BM - 1) / BM * BM)};
        const cuuint64_t a_stride[1] = {cuuint64_t(g.kb[i]) * 4};
        const cuuint32_t a_box[2] = {64, BM};
        const cuuint64_t b_dims[2] = {cuuint64_t(g.kb[i]), cuuint64_t(g.n[i])};
        const cuuint64_t b_stride[1] = {cuuint64_t(g.kb[i])};
        const cuuint32_t b_box[2] = {BK / 2, BN};
        const cuuint64_t c_dims[2] = {cuuint64_t(g.n[i]), cuuint64_t(g.m[i])};
        const cuuint64_t c_stride[1] = {cuuint64_t(g.n[i]) * 2};
        const cuuint32_t c_box[2] = {64, C_ROWS};
        TORCH_CHECK(encode(&g.map_a[i], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, a16p + g.a16_off[i], a_dims, a_stride, a_box,
                           unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
                    encode(&g.map_b[i], CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<uint8_t*>(g.b[i]), b_dims, b_stride,
                           b_box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
                    encode(&g.map_c[i], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, g.c[i], c_dims, c_stride, c_box, unit,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS,
                    "group_gemm v28: tensor map encoding failed");
    }
    last_key = key;
    return g;
}

}  // namespace

void group_gemm(std::vector<int64_t> ptrs, std::vector<int64_t> dims, int64_t a16, int64_t a16_elements) {
    const Groups& g = group_table(ptrs, dims, a16, a16_elements);
    auto stream = at::cuda::getCurrentCUDAStream();
    // Both kernels are programmatic dependents of the kernel before them in the stream.
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    config.gridDim = dim3((g.chunk_start[g.count] * 8 + 255) / 256);
    config.blockDim = dim3(256);
    TORCH_CHECK(cudaLaunchKernelEx(&config, decode_a, g, reinterpret_cast<__half*>(a16)) == cudaSuccess,
                "group_gemm v28: decode launch failed");
    static int ctas = 0;
    if (ctas == 0) {
        cudaFuncSetAttribute(group_main, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        int sms = 0, per_sm = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, at::cuda::current_device());
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, group_main, THREADS, SMEM_BYTES);
        ctas = sms * per_sm;
    }
    config.gridDim = dim3(std::min(g.tile_start[g.count], ctas));
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = SMEM_BYTES;
    TORCH_CHECK(cudaLaunchKernelEx(&config, group_main, g) == cudaSuccess, "group_gemm v28: launch failed");
}
""".replace("WGMMA_FUNCTIONS", _wgmma(128))

CPP_SRC = "void group_gemm(std::vector<int64_t> ptrs, std::vector<int64_t> dims, int64_t a16, int64_t a16_elements);"

BM = 128
_module = None
_scratch = {}  # (device, sizes) -> fp16 A buffer for all groups, rows padded to 128 (padding stays zero)
_checked = None  # the last argument list whose layouts were checked


def _check_layouts(abc, sizes) -> None:
    for (a, b, c), (m, n, k, l) in zip(abc, sizes):
        if l != 1 or a.stride(0) != k // 2 or b.stride(0) != k // 2 or c.stride(0) != n:
            raise ValueError("group_gemm v28 needs l = 1 and row-contiguous a, b and c in every group")


def custom_kernel(data: input_t) -> output_t:
    global _module, _checked
    if _module is None:
        if torch.cuda.get_device_capability() != (9, 0):
            raise RuntimeError("this version is written for Hopper (wgmma, sm_90a); this GPU is sm_%d%d"
                               % torch.cuda.get_device_capability())
        _module = load_inline("nvfp4_group_gemm_v28", CPP_SRC, cuda_sources=CUDA_SRC, functions=["group_gemm"],
                              extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)
    abc, _, sfasfb_reordered, sizes = data
    c = [x[2] for x in abc]
    key = (c[0].device, tuple(sizes))
    if key not in _scratch:
        elements = sum(-(-m // BM) * BM * k for m, _, k, _ in sizes)
        _scratch[key] = torch.zeros(elements, dtype=torch.float16, device=c[0].device)
    a16 = _scratch[key]
    # Plain integers cross into C++ far faster than lists of tensors (the seed's V23).
    ptrs = [p for (a, b, cc), (sa, sb) in zip(abc, sfasfb_reordered)
            for p in (a.data_ptr(), b.data_ptr(), cc.data_ptr(), sa.data_ptr(), sb.data_ptr())]
    dims = [v for m, n, k, _ in sizes for v in (m, n, k)]
    if _checked != (ptrs, dims):
        _check_layouts(abc, sizes)
        _checked = (ptrs, dims)
    _module.group_gemm(ptrs, dims, a16.data_ptr(), a16.numel())
    return c
