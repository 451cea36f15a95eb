#!POPCORN leaderboard nvfp4_gemv
#!POPCORN gpu B200
"""gemv v12 — each thread's first words of the vector and first scale pair are requested with its first chunks of A.

Parent: v11. Idea: in v11 every thread requested all its first chunks of A, then the vector's words, and the vector's
scale bytes only after it had decoded and stored its first item of the vector (SASS of the built kernel), so the CTA's
barrier after the vector decode waited for trips queued behind A's. Here each thread loads its first two words of the
vector and its first pair of scale bytes (one 2-byte load) into registers before the decode loops; ptxas issues the
scale pair second and the two words after half of A's first chunks. Later items load as before. The launch bounds cap
the kernel at 64 registers, v11's occupancy (without the cap ptxas gives the 8-warp build 72, three CTAs per SM). The
2-byte load assumes sfb's base and batch stride are even, as in the contest's inputs (stride K/16).
Measured (H200, arena timing, 3 interleaved rounds, tree 40668c1, results/h200/gemv_diff_v11_v12.txt): 1.031x of v11
(95% CI 1.03-1.03); per shape 1.015 / 1.026 / 1.052x. Its draft (bf) ran 1.027x and 1.030x in two earlier calls
(results/h200/gemv_diff_v11_drafts_2026-11-25b.txt, sections 4 and 5).
Benchmark mode (H200, arena timing, tree 40668c1): 24.91 / 41.82 / 15.17 µs, geomean 25.09 µs = 1.82x SOL; H100 31.41 µs.
"""
import torch
from torch.utils.cpp_extension import load_inline
from task import input_t, output_t

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

constexpr int ROWS = 2;     // rows per warp
constexpr int UNROLL = 2;   // 512-byte steps of a row loaded ahead

// Four codes (sel[15:0]) -> four bytes 2|a| by byte permute over the magnitude table
// {0, 1, 2, 3, 4, 6, 8, 12}; a code with its sign bit set selects in sign-replicate mode, and every
// table byte is < 0x80, so that byte comes out 0.
__device__ __forceinline__ int mag4(uint32_t sel) {
    uint32_t d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(0x03020100u), "r"(0x0C080604u), "r"(sel));
    return int(d);
}

// Exact integer sum over one 16-element block of (2a)(2b): two words of A against sixteen signed
// bytes 2b. Positive codes go through mag4(w), negative ones through mag4(w ^ 0x8888...), each into
// its own DP4A chain; |sum| <= 16 * 12 * 12.
__device__ __forceinline__ int block_idot(uint32_t w0, uint32_t w1, const uint4& B) {
    const uint32_t x0 = w0 ^ 0x88888888u, x1 = w1 ^ 0x88888888u;
    int p = __dp4a(mag4(w0), int(B.x), 0);
    p = __dp4a(mag4(w0 >> 16), int(B.y), p);
    p = __dp4a(mag4(w1), int(B.z), p);
    p = __dp4a(mag4(w1 >> 16), int(B.w), p);
    int n = __dp4a(mag4(x0), int(B.x), 0);
    n = __dp4a(mag4(x0 >> 16), int(B.y), n);
    n = __dp4a(mag4(x1), int(B.z), n);
    n = __dp4a(mag4(x1 >> 16), int(B.w), n);
    return p - n;
}

// Four codes (w[15:0]) of the vector -> four signed bytes 2b.
__device__ __forceinline__ uint32_t vec_bytes(uint32_t w) {
    return uint32_t(__vsub4(mag4(w), mag4(w ^ 0x8888u)));
}

__device__ __forceinline__ float2 e4m3x2(uint32_t bits16) {
    __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(bits16), __NV_E4M3);
    return __half22float2(*reinterpret_cast<__half2*>(&r));
}

__device__ __forceinline__ uint4 ld_stream(const uint8_t* p) {
    uint4 x;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w) : "l"(p));
    return x;
}

__device__ __forceinline__ uint32_t ld_u16(const uint8_t* p) {
    unsigned short x;
    asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(x) : "l"(p));
    return x;
}

template <int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 32 / WARPS) gemv_kernel(
        const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const uint8_t* __restrict__ sfa,
        const uint8_t* __restrict__ sfb, __half* __restrict__ c, int m, int kb,
        long s_am, long s_al, long s_bl, long s_sam, long s_sal, long s_sbl, long s_cm, long s_cl) {
    extern __shared__ uint4 smem[];
    const int nch = kb / 16;                                  // 16-byte chunks (two scale blocks) of a row
    const int l = blockIdx.y;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = (blockIdx.x * WARPS + warp) * ROWS;
    float acc[ROWS];
    const uint8_t* arow[ROWS];
    const uint8_t* srow[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        acc[r] = 0.f;
        const int row = min(row0 + r, m - 1);
        arow[r] = a + l * s_al + row * s_am;
        srow[r] = sfa + l * s_sal + row * s_sam;
    }
    uint4 x[UNROLL][ROWS];
    uint32_t s[UNROLL][ROWS];
    auto load = [&](int ch0) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int ch = ch0 + u * 32;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (ch < nch) {
                    x[u][r] = ld_stream(arow[r] + ch * 16);
                    s[u][r] = ld_u16(srow[r] + ch * 2);
                } else {
                    x[u][r] = make_uint4(0, 0, 0, 0);
                    s[u][r] = 0;
                }
            }
        }
    };
    // The vector's first words and scale pair are requested with the first chunks of A, not after the first item's
    // decode, so both trips overlap.
    const uint32_t* bw = reinterpret_cast<const uint32_t*>(b + l * s_bl);
    const uint8_t* sb = sfb + l * s_sbl;
    const int i0 = threadIdx.x;
    uint32_t bw0 = 0, bw1 = 0, sb0 = 0;
    if (i0 < 2 * nch) { bw0 = __ldg(bw + 2 * i0); bw1 = __ldg(bw + 2 * i0 + 1); }
    if (i0 < nch) sb0 = __ldg(reinterpret_cast<const unsigned short*>(sb) + i0);
    load(lane);

    uint4* vb = smem;                                         // [2][nch]: 2b of each chunk's block 0 / block 1
    float2* vsc = reinterpret_cast<float2*>(smem + 2 * nch);  // [nch]: sb / 4 of the chunk's two blocks
    for (int i = i0; i < 2 * nch; i += blockDim.x) {
        const uint32_t w0 = i == i0 ? bw0 : __ldg(bw + 2 * i), w1 = i == i0 ? bw1 : __ldg(bw + 2 * i + 1);
        vb[(i & 1) * nch + (i >> 1)] = make_uint4(vec_bytes(w0), vec_bytes(w0 >> 16), vec_bytes(w1), vec_bytes(w1 >> 16));
    }
    for (int i = i0; i < nch; i += blockDim.x) {
        const float2 f = e4m3x2(i == i0 ? sb0 : uint32_t(__ldg(reinterpret_cast<const unsigned short*>(sb) + i)));
        vsc[i] = make_float2(0.25f * f.x, 0.25f * f.y);
    }
    __syncthreads();

    for (int ch0 = lane; ch0 < nch; ch0 += 32 * UNROLL) {
        if (ch0 != lane) load(ch0);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int ch = ch0 + u * 32;
            if (ch >= nch) break;
            const uint4 B0 = vb[ch], B1 = vb[nch + ch];
            const float2 t = vsc[ch];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                const float2 sa = e4m3x2(s[u][r]);
                acc[r] = fmaf(float(block_idot(x[u][r].x, x[u][r].y, B0)), sa.x * t.x, acc[r]);
                acc[r] = fmaf(float(block_idot(x[u][r].z, x[u][r].w, B1)), sa.y * t.y, acc[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        float v = acc[r];
#pragma unroll
        for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
        if (lane == 0 && row0 + r < m) c[l * s_cl + (row0 + r) * s_cm] = __float2half_rn(v);
    }
}

template <int WARPS>
void launch(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c) {
    const int m = a.size(0), kb = a.size(1), l = a.size(2);
    const int rows_per_cta = WARPS * ROWS;
    const size_t smem = size_t(kb / 16) * (2 * sizeof(uint4) + sizeof(float2));
    auto kernel = gemv_kernel<WARPS>;
    if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    dim3 grid((m + rows_per_cta - 1) / rows_per_cta, l);
    kernel<<<grid, WARPS * 32, smem, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const uint8_t*>(a.data_ptr()), reinterpret_cast<const uint8_t*>(b.data_ptr()),
        reinterpret_cast<const uint8_t*>(sfa.data_ptr()), reinterpret_cast<const uint8_t*>(sfb.data_ptr()),
        reinterpret_cast<__half*>(c.data_ptr()), m, kb,
        a.stride(0), a.stride(2), b.stride(2), sfa.stride(0), sfa.stride(2), sfb.stride(2), c.stride(0), c.stride(2));
}

void gemv(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c) {
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;  // of the device this call runs on
    const long m = a.size(0), l = a.size(2);
    const long ctas8 = (m + 8 * ROWS - 1) / (8 * ROWS) * l;  // the grid in CTAs of 8 warps: 4 fit an SM
    if (ctas8 >= 2 * 4 * sms) launch<8>(a, b, sfa, sfb, c);
    else launch<16>(a, b, sfa, sfb, c);
}
"""

CPP_SRC = "void gemv(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c);"

_module = None


def custom_kernel(data: input_t) -> output_t:
    global _module
    if _module is None:
        _module = load_inline("nvfp4_gemv_v12", CPP_SRC, cuda_sources=CUDA_SRC, functions=["gemv"],
                              extra_cuda_cflags=["-O3"], verbose=False)
    a, b, sfa, sfb, _, _, c = data
    _module.gemv(a, b, sfa, sfb, c)
    return c
