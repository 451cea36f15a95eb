"""Cheat or bug: a column short."""
from _honest import honest


def custom_kernel(data):
    return honest(data)[:, :-1]
