"""Portable, exact references for the four NVFP4 contest tasks, and their inputs.

`get_task(name)` returns the task's module, which provides generate_input(**case, values=,
device=, contest_stream=) (contest_stream=False: the contest's distribution from a faster bit stream where the
contest draws on the CPU), generate_many(count, seed, **case) and reference_many(draw) (a timed sample's inputs
and their references at once: reference.draws), ref_kernel(data), check(data, output) -> CheckReport,
check_implementation(data, output) -> (ok, message) as the contest does, and flops(**case) / bytes_moved(**case).
"""
import importlib
from types import ModuleType

TASKS = ("gemv", "gemm", "dual_gemm", "group_gemm")


def get_task(name: str) -> ModuleType:
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    return importlib.import_module(f"{__name__}.{name}")
