#!POPCORN leaderboard nvfp4_gemv
#!POPCORN gpu B200
"""gemv v5 — CUDA C++ (torch load_inline): one native call per gemv, 16-byte loads, vector in shared memory.

Parent: v4. Idea: leave Triton's Python launcher. Measured on the H200 (scripts/launch_overhead.py),
v4 spent 18-23 µs of host time per call, and gemv is timed one call per sample, so that host time
sat on the clock of every shape (shape 3's kernel is far shorter). v5 is the same exact arithmetic
(codes j and j+4 of a 32-bit word -> one fp16x2 pair at value * 2^-14, vector pre-scaled by 2^12,
eight exact fp16x2 FMAs per 16-element block, fp32 from there) written as a CUDA kernel called
through one pybind function that reads pointers and strides in C++. Each CTA first decodes the
vector (and 4 * its scales) into shared memory once; each warp then owns ROWS rows, every lane
loading 16 bytes (two scale blocks) of each row per step, with two steps' loads in flight.
Measured: see the lineage (python run.py list --task gemv).
"""
import torch
from torch.utils.cpp_extension import load_inline
from task import input_t, output_t

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

constexpr int WARPS = 8;
constexpr int ROWS = 2;     // rows per warp
constexpr int UNROLL = 2;   // 512-byte steps of a row loaded ahead

// Codes j and j+4 of w -> fp16x2 pair j (value * 2^-14, exact).
__device__ __forceinline__ void split(uint32_t w, uint32_t p[4]) {
    p[0] = ((w << 9) & 0x0E000E00u) | ((w << 12) & 0x80008000u);
    p[1] = ((w << 5) & 0x0E000E00u) | ((w << 8) & 0x80008000u);
    p[2] = ((w << 1) & 0x0E000E00u) | ((w << 4) & 0x80008000u);
    p[3] = ((w >> 3) & 0x0E000E00u) | (w & 0x80008000u);
}

__device__ __forceinline__ uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t d;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

__device__ __forceinline__ uint32_t hmul2(uint32_t a, uint32_t b) {
    uint32_t d;
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}

__device__ __forceinline__ float lanes_sum(uint32_t h) {
    __half2 v = *reinterpret_cast<__half2*>(&h);
    return __low2float(v) + __high2float(v);
}

__device__ __forceinline__ float e4m3(uint8_t bits) {
    __nv_fp8_e4m3 v;
    v.__x = bits;
    return float(v);
}

// Exact sum of a 16-element block's products / 4: two words of A against eight vector pairs.
__device__ __forceinline__ float block_dot(uint32_t w0, uint32_t w1, const uint4& v0, const uint4& v1) {
    uint32_t p[4], q[4];
    split(w0, p);
    split(w1, q);
    uint32_t s = hmul2(p[0], v0.x);
    s = hfma2(p[1], v0.y, s);
    s = hfma2(p[2], v0.z, s);
    s = hfma2(p[3], v0.w, s);
    s = hfma2(q[0], v1.x, s);
    s = hfma2(q[1], v1.y, s);
    s = hfma2(q[2], v1.z, s);
    s = hfma2(q[3], v1.w, s);
    return lanes_sum(s);
}

__global__ void __launch_bounds__(WARPS * 32) gemv_kernel(
        const uint8_t* __restrict__ a, const uint8_t* __restrict__ b, const uint8_t* __restrict__ sfa,
        const uint8_t* __restrict__ sfb, __half* __restrict__ c, int m, int kb,
        long s_am, long s_al, long s_bl, long s_sam, long s_sal, long s_sbl, long s_cm, long s_cl) {
    extern __shared__ uint4 smem[];
    uint4* vec = smem;                                   // kb / 4 words, one uint4 of pairs each
    float* vscale = reinterpret_cast<float*>(smem + kb / 4);  // kb / 8 block scales * 4
    const int l = blockIdx.y;
    const uint32_t* bw = reinterpret_cast<const uint32_t*>(b + l * s_bl);
    const uint32_t two13 = 0x70007000u;  // fp16x2 (2^13, 2^13)
    for (int i = threadIdx.x; i < kb / 4; i += blockDim.x) {
        uint32_t p[4];
        split(__ldg(bw + i), p);
        vec[i] = make_uint4(hmul2(hmul2(p[0], two13), two13), hmul2(hmul2(p[1], two13), two13),
                            hmul2(hmul2(p[2], two13), two13), hmul2(hmul2(p[3], two13), two13));
    }
    for (int i = threadIdx.x; i < kb / 8; i += blockDim.x)
        vscale[i] = 4.0f * e4m3(sfb[l * s_sbl + i]);
    __syncthreads();

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = (blockIdx.x * WARPS + warp) * ROWS;
    float acc[ROWS];
    const uint8_t* arow[ROWS];
    const uint8_t* srow[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        acc[r] = 0.f;
        int row = min(row0 + r, m - 1);
        arow[r] = a + l * s_al + row * s_am;
        srow[r] = sfa + l * s_sal + row * s_sam;
    }
    for (int base = lane * 16; base < kb; base += 512 * UNROLL) {
        uint4 x[UNROLL][ROWS];
        uint16_t s[UNROLL][ROWS];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int off = base + u * 512;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                if (off < kb) {
                    x[u][r] = __ldcs(reinterpret_cast<const uint4*>(arow[r] + off));
                    s[u][r] = *reinterpret_cast<const uint16_t*>(srow[r] + off / 8);
                } else {
                    x[u][r] = make_uint4(0, 0, 0, 0);
                    s[u][r] = 0;
                }
            }
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int off = base + u * 512;
            if (off >= kb) break;
            const uint4 v0 = vec[off / 4], v1 = vec[off / 4 + 1], v2 = vec[off / 4 + 2], v3 = vec[off / 4 + 3];
            const float t0 = vscale[off / 8], t1 = vscale[off / 8 + 1];
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                acc[r] += block_dot(x[u][r].x, x[u][r].y, v0, v1) * (e4m3(s[u][r] & 0xFF) * t0);
                acc[r] += block_dot(x[u][r].z, x[u][r].w, v2, v3) * (e4m3(s[u][r] >> 8) * t1);
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

void gemv(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c) {
    const int m = a.size(0), kb = a.size(1), l = a.size(2);
    const int rows_per_cta = WARPS * ROWS;
    const size_t smem = size_t(kb / 4) * sizeof(uint4) + size_t(kb / 8) * sizeof(float);
    auto kernel = gemv_kernel;
    if (smem > 48 * 1024) cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    dim3 grid((m + rows_per_cta - 1) / rows_per_cta, l);
    kernel<<<grid, WARPS * 32, smem, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const uint8_t*>(a.data_ptr()), reinterpret_cast<const uint8_t*>(b.data_ptr()),
        reinterpret_cast<const uint8_t*>(sfa.data_ptr()), reinterpret_cast<const uint8_t*>(sfb.data_ptr()),
        reinterpret_cast<__half*>(c.data_ptr()), m, kb,
        a.stride(0), a.stride(2), b.stride(2), sfa.stride(0), sfa.stride(2), sfb.stride(2), c.stride(0), c.stride(2));
}
"""

CPP_SRC = "void gemv(torch::Tensor a, torch::Tensor b, torch::Tensor sfa, torch::Tensor sfb, torch::Tensor c);"

_module = None


def custom_kernel(data: input_t) -> output_t:
    global _module
    if _module is None:
        _module = load_inline("nvfp4_gemv_v5", CPP_SRC, cuda_sources=CUDA_SRC, functions=["gemv"],
                              extra_cuda_cflags=["-O3"], verbose=False)
    a, b, sfa, sfb, _, _, c = data
    _module.gemv(a, b, sfa, sfb, c)
    return c
