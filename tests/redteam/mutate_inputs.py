"""Cheat: zero the scales so that a reference computed afterwards agrees with an all-zero c."""
import torch

from _honest import acted


def custom_kernel(data):
    for t in data[2:6]:
        t.view(torch.uint8).zero_()
    data[-1].zero_()
    if not any(t.view(torch.uint8).any() for t in data[2:6]):
        acted("mutate_inputs", "zeroed the scale factors in its input tensors, and c")
    return data[-1]
