"""Cheat: compute into c but hand back an input tensor (b) as the output."""
from _honest import honest


def custom_kernel(data):
    honest(data)
    return data[1]
