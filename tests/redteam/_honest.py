"""Shared by the red-team files: an honest plain-torch gemm they wrap, `acted`, by which an attack says what it
did, and `logged`, by which it waits for a process of its own (not a submission itself)."""
import sys
import time

import torch

ACTED_MARK = "[red team] "  # the start of the line `acted` writes; tests/test_redteam.py reads what follows
_said = set()


def acted(name: str, what: str) -> None:
    """Say once, on stderr, that the attack `name` did `what`: the evaluator forwards a worker's output to its own
    stderr, where a test reads that the attack acted (and was not merely ineffective)."""
    if (name, what) not in _said:
        _said.add((name, what))
        print(f"{ACTED_MARK}{name}: {what}", file=sys.stderr, flush=True)


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
