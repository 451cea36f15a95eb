"""Cheat (weak input checks): compute honestly, then swap two 4-byte words of a (a checksum that adds words would
not see it), as a kernel that scribbles on its inputs would."""
import torch

from _honest import honest


def custom_kernel(data):
    out = honest(data)
    words = data[0].view(torch.uint8).permute(2, 0, 1).reshape(-1).view(torch.int32)  # a view: a is stored (l, m, k/2)
    for i in range(1, words.numel()):
        if bool(words[i] != words[0]):
            first, other = words[0].clone(), words[i].clone()
            words[0], words[i] = other, first
            break
    return out
