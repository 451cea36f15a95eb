"""An honest gemm submission that spends far longer on the host than its work takes: a slow launcher."""
import time

from task import input_t, output_t

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def dequant(packed, scales):
    import torch
    codes = packed.view(torch.uint8)
    table = torch.tensor(E2M1, device=codes.device)
    vals = torch.stack((table[(codes & 15).long()], table[(codes >> 4).long()]), dim=-1).flatten(-2)
    return vals * scales.to(codes.device).float().repeat_interleave(16, dim=-1)


def custom_kernel(data: input_t) -> output_t:
    deadline = time.perf_counter() + 0.002
    while time.perf_counter() < deadline:  # 2 ms of host work per call, as a slow Python launcher spends
        pass
    a, b, sfa, sfb, c = data[0], data[1], data[2], data[3], data[-1]
    c[:, :, 0] = (dequant(a[:, :, 0], sfa[:, :, 0]) @ dequant(b[:, :, 0], sfb[:, :, 0]).T).half()
    return c
