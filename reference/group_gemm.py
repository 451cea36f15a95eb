"""Task group_gemm: g independent NVFP4 GEMMs of different sizes, one fp16 output per group.

Input tuple (contest order): ([(a, b, c)], [(sfa, sfb)], [(sfa_permuted, sfb_permuted)], [(m, n, k, l)]).
The plain scale tensors sfa/sfb of each group live on the CPU, as in the contest.
"""
import torch

from . import general_values as gv
from .checker import compare_groups, contest_checks
from .compute import default_device, manual_seed, matmul_nt, operand_dtype
from .draws import drawn_one_by_one
from .nvfp4 import SF_VEC, ceil_div, dequantize, mma_layout_shape, reordered_scales

SIGN_AND_LOW_BITS = 0b1011_1011
GENERAL_TARGET_STD = 64.0
L = 1  # the contest's group GEMM always has l = 1


def generate_input(m, n, k, g: int, seed: int, values: str = "contest", device=None,
                   contest_stream: bool = True):
    """The contest's inputs; on CUDA the RNG call sequence matches the contest's, bit for bit.

    m, n, k are per-group sequences of length g. sfa/sfb are drawn by the CPU generator, as in
    the contest; values, c and the padding of the reordered scales by the device's. With
    contest_stream=False sfa/sfb are drawn by the device's generator and then copied to the CPU:
    the same distribution and placement from another bit stream, without the CPU generator's
    cost, which was most of a group GEMM benchmark's wall time (the evaluator's keyed timed
    inputs, which no contest run shares).
    """
    device = device or default_device()
    if not (len(m) == len(n) == len(k) == g):
        raise ValueError(f"m, n, k must each list g={g} sizes; got {len(m)}, {len(n)}, {len(k)}")
    if values not in ("contest", "general"):
        raise ValueError(f"values must be 'contest' or 'general', not {values!r}")
    manual_seed(seed)
    abc, sfasfb, sfasfb_reordered, sizes = [], [], [], []
    for mi, ni, ki in zip(m, n, k):
        sf_k = ceil_div(ki, SF_VEC)
        if values == "contest":
            def draw_fp4(mn):
                return torch.randint(255, size=(L, mn, ki // 2), dtype=torch.uint8, device=device) & SIGN_AND_LOW_BITS

            def draw_scales(shape, on=None):
                return torch.randint(1, 3, shape, dtype=torch.int8, device=on).to(torch.float8_e4m3fn)
        else:
            def draw_fp4(mn):
                return gv.fp4_bytes((L, mn, ki // 2), device)

            def draw_scales(shape, on=None):
                return gv.scales(shape, ki, GENERAL_TARGET_STD, on)
        a = draw_fp4(mi).permute(1, 2, 0).view(torch.float4_e2m1fn_x2)
        b = draw_fp4(ni).permute(1, 2, 0).view(torch.float4_e2m1fn_x2)
        c = torch.randn((L, mi, ni), dtype=torch.float16, device=device).permute(1, 2, 0)
        plain_on = None if contest_stream else device
        sfa = draw_scales((L, mi, sf_k), on=plain_on).permute(1, 2, 0)
        sfb = draw_scales((L, ni, sf_k), on=plain_on).permute(1, 2, 0)
        sfa_r = reordered_scales(sfa, draw_scales(mma_layout_shape(L, mi, sf_k), on=device))
        sfb_r = reordered_scales(sfb, draw_scales(mma_layout_shape(L, ni, sf_k), on=device))
        abc.append((a, b, c))
        sfasfb.append((sfa.cpu(), sfb.cpu()))
        sfasfb_reordered.append((sfa_r, sfb_r))
        sizes.append((mi, ni, ki, L))
    return (abc, sfasfb, sfasfb_reordered, sizes)


@torch.no_grad()
def ref_kernel(data) -> list[torch.Tensor]:
    """Exact decode, exact products and fp32 accumulation (reference.compute), fp16 results; does not modify `data`."""
    abc, sfasfb, _, sizes = data
    outs = []
    for (a, b, c), (sfa, sfb), (_, _, _, l) in zip(abc, sfasfb, sizes):
        out = torch.empty_like(c)
        dtype = operand_dtype(a.device)
        for li in range(l):
            lhs = dequantize(a[:, :, li], sfa[:, :, li], dtype)
            rhs = dequantize(b[:, :, li], sfb[:, :, li], dtype)
            out[:, :, li] = matmul_nt(lhs, rhs).to(torch.float16)
        outs.append(out)
    return outs


def fresh_slots(data) -> list:
    """(operand to negate, output buffer) per group: negating a group's a negates its exact output."""
    return [(a, c) for a, _, c in data[0]]


def rebuild(data, fresh: list):
    """The input tuple with each group's fresh (a, c) in place of the originals."""
    abc, sfasfb, reordered, sizes = data
    return ([(fa, b, fc) for (_, b, _), (fa, fc) in zip(abc, fresh)], list(sfasfb), list(reordered), list(sizes))

generate_many, reference_many = drawn_one_by_one(generate_input, ref_kernel)  # timed samples (reference.draws)
check_output = compare_groups  # (outputs, expected list) -> CheckReport
check, check_implementation = contest_checks(ref_kernel, check_output)


def flops(m, n, k, **_) -> float:
    return float(sum(2 * mi * ni * ki * L for mi, ni, ki in zip(m, n, k)))


def bytes_moved(m, n, k, **_) -> float:
    return float(sum(L * ((mi + ni) * (ki // 2 + ceil_div(ki, SF_VEC)) + 2 * mi * ni) for mi, ni, ki in zip(m, n, k)))
