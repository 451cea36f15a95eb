"""gemv v0 — root of the gemv lineage.

Parent: none. Idea: plain torch. Decode e2m1 through a 16-entry table, multiply by the e4m3
scales expanded along K, and take fp32 matrix-vector products, one batch at a time.
Measured (H200, benchmark mode, L2 flushed): 2976.6 / 6998.4 / 2452.8 µs on the 3 benchmark shapes,
geomean 3710.8 µs = 269.36x SOL.
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
        mat = _dequant(a[:, :, l], sfa[:, :, l])
        vec = _dequant(b[0, :, l], sfb[0, :, l])
        c[:, 0, l] = (mat @ vec).to(torch.float16)
    return c
