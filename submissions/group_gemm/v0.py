"""group_gemm v0 — root of the group GEMM lineage (the seed's V0: a torch loop over groups).

Parent: none. Idea: plain torch. For each group, decode A and B to fp32 (16-entry e2m1 table
times the e4m3 scales, which live on the CPU), one fp32 matmul, cast to fp16 into that group's c.
Measured (H200, benchmark mode, L2 flushed): 18257.0 / 11031.6 / 2798.5 / 2147.3 µs on the 4
benchmark shapes, geomean 5898.2 µs = 296.50x SOL.
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
    abc, sfasfb, _, sizes = data
    outs = []
    for (a, b, c), (sfa, sfb), (_, _, _, l) in zip(abc, sfasfb, sizes):
        for i in range(l):
            c[:, :, i] = (_dequant(a[:, :, i], sfa[:, :, i]) @ _dequant(b[:, :, i], sfb[:, :, i]).T).to(torch.float16)
        outs.append(c)
    return outs
