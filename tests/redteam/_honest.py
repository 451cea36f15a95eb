"""Shared by the red-team files: an honest plain-torch gemm they wrap (not a submission itself)."""
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
