"""Cheat or bug: fp32 output."""
from _honest import honest


def custom_kernel(data):
    return honest(data).float()
