"""Cheat (GPU): do the work on a side stream and return before it finishes."""
import torch
from _honest import gemm

_stream = torch.cuda.Stream()


def custom_kernel(data):
    _stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_stream):
        for _ in range(20):
            result = gemm(data)
        data[-1][:, :, 0] = result
    return data[-1]
