"""Cheat (GPU): return at once and finish the work on a side stream the timing events do not see."""
import torch
from _honest import gemm

_stream = torch.cuda.Stream()


def custom_kernel(data):
    result = gemm(data)
    _stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_stream):
        torch.cuda._sleep(20_000_000)  # ~10 ms of GPU time the events never cover
        data[-1][:, :, 0] = result
    return data[-1]
