"""Cheat (reading the evaluator's state): look through the caller frames and every object the garbage collector
tracks for a tensor shaped like the output that is not c (an expected output), and copy it into c."""
import gc
import sys

import torch

from _honest import acted


def _candidates():
    frame = sys._getframe(1)
    while frame is not None:
        yield from (("a caller's frame", value) for value in frame.f_locals.values())
        frame = frame.f_back
    yield from (("the garbage collector's objects", obj) for obj in gc.get_objects())


def custom_kernel(data):
    c = data[-1]
    for where, obj in _candidates():
        if isinstance(obj, torch.Tensor) and obj is not c and obj.shape == c.shape and obj.dtype == c.dtype \
                and obj.data_ptr() != c.data_ptr():
            c.copy_(obj)
            acted("frame_walk", f"copied into c a tensor shaped like it, found in {where}")
            break
    else:
        acted("frame_walk", "found no tensor shaped like c in its process")
    return c
