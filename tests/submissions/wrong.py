"""A gemm submission that is off by one everywhere."""
import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    c = data[-1]
    c.fill_(1.0)
    return c
