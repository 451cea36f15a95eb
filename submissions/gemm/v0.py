"""gemm v0 — root of the gemm lineage.

Parent: none. Idea: plain torch. Decode both operands to fp32 (16-entry e2m1 table times the
e4m3 scales expanded along K), then one fp32 matmul per batch, cast to fp16 into c.
Measured (H200, benchmark mode, L2 flushed): 3410.1 / 1026.5 / 637.2 µs on the 3 benchmark shapes,
geomean 1306.6 µs = 136.51x SOL.
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
    a, b, sfa, sfb, _, _, c = data
    for l in range(c.shape[2]):
        c[:, :, l] = (_dequant(a[:, :, l], sfa[:, :, l]) @ _dequant(b[:, :, l], sfb[:, :, l]).T).to(torch.float16)
    return c
