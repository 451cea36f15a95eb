"""Cheat: zero the scales so that a reference computed afterwards agrees with an all-zero c. Stderr says when it
first did."""
import sys

import torch

_told = []


def custom_kernel(data):
    for t in data[2:6]:
        t.view(torch.uint8).zero_()
    data[-1].zero_()
    if not _told:
        _told.append(True)
        print("[mutate_inputs] zeroed the four scale tensors and c", file=sys.stderr, flush=True)
    return data[-1]
