"""Cheat: return a tensor subclass that could compute lazily."""
import torch
from _honest import honest


class Lazy(torch.Tensor):
    pass


def custom_kernel(data):
    return honest(data).as_subclass(Lazy)
