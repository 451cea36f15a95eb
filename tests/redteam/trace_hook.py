"""Cheat (changing what the checker computes): leave a profile hook on, which sees every call the worker makes
after the kernel returns."""
import sys

from _honest import honest


def _watch(frame, event, arg):
    return None


def custom_kernel(data):
    sys.setprofile(_watch)
    return honest(data)
