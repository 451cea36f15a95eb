"""Cheat: call the evaluator's own reference."""
from _honest import acted
from reference import get_task


def custom_kernel(data):
    out = get_task("gemm").ref_kernel(data)
    data[-1].copy_(out)
    acted("reference_call", "computed its output with the reference's ref_kernel")
    return data[-1]
