"""Contest-compatible type names for submissions: `from task import input_t, output_t`.

The contest ships one task.py per problem; a submission only uses these names in annotations,
so one module serves all four problems here and a contest file runs against it unchanged.
The per-problem tuple layouts are spelled out below for readers and type checkers.
"""
from typing import Any, TypedDict, TypeVar

import torch

Tensor = torch.Tensor

# gemv / gemm: (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c)
GemmInput = tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]
# dual_gemm: (a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, sfb2_permuted, c)
DualGemmInput = tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]
# group_gemm: ([(a, b, c)], [(sfa, sfb)] on the CPU, [(sfa_permuted, sfb_permuted)], [(m, n, k, l)])
GroupGemmInput = tuple[
    list[tuple[Tensor, Tensor, Tensor]],
    list[tuple[Tensor, Tensor]],
    list[tuple[Tensor, Tensor]],
    list[tuple[int, int, int, int]],
]

input_t = TypeVar("input_t", bound=Any)
output_t = TypeVar("output_t", bound=Any)


class TestSpec(TypedDict, total=False):
    m: Any
    n: Any
    k: Any
    l: int
    g: int
    seed: int
