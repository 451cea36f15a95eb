"""Shared by the red-team files: an honest plain-torch gemm they wrap, or another file's kernel named in the
environment; `acted`, by which an attack says what it did, and `logged`, by which it waits for a process of its own
(not a submission itself)."""
import importlib.util
import os
import sys
import time

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


_said = set()


def acted_line(name: str, what: str) -> str:
    """The line by which the attack `name` says it did `what`, as the tests read it."""
    return f"[{name}] {what}"


def acted(name: str, what: str) -> None:
    """Say once, on stderr, that the attack `name` did `what`: the evaluator forwards a worker's output to its own
    stderr, where a test reads that the attack acted (and was not merely ineffective)."""
    if (name, what) not in _said:
        _said.add((name, what))
        print(acted_line(name, what), file=sys.stderr, flush=True)


def logged(path: str, words: str, within_s: float) -> bool:
    """Whether the file at `path` holds `words`, waiting up to `within_s` seconds for a process to write them."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            with open(path) as f:
                if words in f.read():
                    return True
        except OSError:
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
