"""dual_gemm v0 — root of the dual GEMM lineage.

Parent: none. Idea: plain torch. Decode A, B1, B2 to fp32, two fp32 matmuls, silu(first) * second
in fp32, cast to fp16 into c.
Measured (H200, benchmark mode, L2 flushed): 2289.4 / 2832.4 / 1292.1 / 2363.8 µs on the 4 benchmark
shapes, geomean 2109.6 µs = 65.20x SOL.
"""
import torch
from task import input_t, output_t

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _dequant(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    codes = packed.view(torch.uint8)
    table = torch.tensor(E2M1, dtype=torch.float32, device=codes.device)
    vals = torch.stack((table[(codes & 15).long()], table[(codes >> 4).long()]), dim=-1).flatten(-2)
    return vals * scales.to(device=codes.device, dtype=torch.float32).repeat_interleave(16, dim=-1)


def custom_kernel(data: input_t) -> output_t:
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    for l in range(c.shape[2]):
        x = _dequant(a[:, :, l], sfa[:, :, l])
        gate = x @ _dequant(b1[:, :, l], sfb1[:, :, l]).T
        up = x @ _dequant(b2[:, :, l], sfb2[:, :, l]).T
        c[:, :, l] = (torch.nn.functional.silu(gate) * up).to(torch.float16)
    return c
