"""Bug: one NaN in the output."""
from _honest import honest


def custom_kernel(data):
    c = honest(data)
    c[0, 0, 0] = float("nan")
    return c
