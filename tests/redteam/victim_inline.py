"""Victim (honest, not an attack): the plain-torch gemm, with the matrix product in a small C++ extension built by
torch.utils.cpp_extension.load_inline, as the lineage's own v8/v23/v27 do for their CUDA kernels. Used by
ext_cache_poison.py to show that one file's run can change another file's later verdict."""
import torch
from torch.utils.cpp_extension import load_inline

from _honest import dequant

CPP_SRC = "torch::Tensor mm(torch::Tensor a, torch::Tensor b) { return torch::matmul(a, b); }"
_ext = load_inline("redteam_victim_ext", CPP_SRC, functions=["mm"])


def custom_kernel(data):
    (a, b, sfa, sfb), c = data[:4], data[-1]
    c[:, :, 0] = _ext.mm(dequant(a[:, :, 0], sfa[:, :, 0]), dequant(b[:, :, 0], sfb[:, :, 0]).T).half()
    return c
