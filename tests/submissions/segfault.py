#!POPCORN leaderboard nvfp4_gemm
#!POPCORN gpu B200
"""Dereferences a null pointer."""
import ctypes


def custom_kernel(data):
    ctypes.string_at(0)
