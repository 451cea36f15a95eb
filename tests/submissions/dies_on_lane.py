"""Correct (plain torch), except that it kills its own process on the sweep lane named by
$SWEEP_TEST_DIE_ON (a lane's name, or 'any'): a GPU that fails under whatever runs there."""
import os

import torch

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def _dequant(packed, scales):
    codes = packed.view(torch.uint8)
    table = torch.tensor(E2M1, device=codes.device)
    vals = torch.stack((table[(codes & 15).long()], table[(codes >> 4).long()]), dim=-1).flatten(-2)
    return vals * scales.float().repeat_interleave(16, dim=-1)


def custom_kernel(data):
    die_on = os.environ.get("SWEEP_TEST_DIE_ON")
    if die_on and die_on in (os.environ.get("NVFP4_ARENA_LANE"), "any"):
        os._exit(3)
    a, b, sfa, sfb, _, _, c = data
    c[:, :, 0] = (_dequant(a[:, :, 0], sfa[:, :, 0]) @ _dequant(b[:, :, 0], sfb[:, :, 0]).T).half()
    return c
