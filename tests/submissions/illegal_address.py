"""GPU only: writes through a null device pointer (CUDA illegal address), via CuPy."""
import cupy
import numpy

_KERNEL = cupy.RawKernel(r'extern "C" __global__ void poke(int* p) { p[threadIdx.x] = 1; }', "poke")


def custom_kernel(data):
    _KERNEL((1,), (32,), (numpy.uint64(0),))
    cupy.cuda.runtime.deviceSynchronize()
    return data[-1]
