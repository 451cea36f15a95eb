"""Shared by the red-team files: an honest plain-torch gemm they wrap, or another file's kernel named in the
environment (not a submission itself)."""
import importlib.util
import os

import torch

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def dequant(packed, scales):
    codes = packed.view(torch.uint8)
    table = torch.tensor(E2M1, device=codes.device)
    vals = torch.stack((table[(codes & 15).long()], table[(codes >> 4).long()]), dim=-1).flatten(-2)
    return vals * scales.to(codes.device).float().repeat_interleave(16, dim=-1)


def gemm(data) -> torch.Tensor:
    """The exact product as a fresh [m, n] fp16 tensor."""
    a, b, sfa, sfb = data[:4]
    return (dequant(a[:, :, 0], sfa[:, :, 0]) @ dequant(b[:, :, 0], sfb[:, :, 0]).T).half()


def honest(data):
    c = data[-1]
    c[:, :, 0] = gemm(data)
    return c


def kernel_from(variable: str):
    """The custom_kernel of the submission file the environment variable names (a lineage version: a fast kernel to
    attack on a GPU, or another task's), else the honest gemm."""
    path = os.environ.get(variable)
    if not path:
        return honest
    spec = importlib.util.spec_from_file_location("attacked_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel


def refuse(breaches: list, what: str) -> None:
    """A sandbox probe's way to show a hole: the import fails, naming each thing the sandbox let the worker do."""
    if breaches:
        raise RuntimeError(f"the sandbox let the worker {what}: {'; '.join(breaches)}")
