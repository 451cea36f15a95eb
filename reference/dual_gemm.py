"""Task dual_gemm: c = fp16(silu(A @ B1) * (A @ B2)), both products in fp32, NVFP4 inputs.

Input tuple (contest order):
(a, b1, b2, sfa, sfb1, sfb2, sfa_permuted, sfb1_permuted, sfb2_permuted, c).
"""
import torch

from . import general_values as gv
from .checker import compare, contest_checks
from .compute import default_device, l_parts, manual_seed, matmul_nt, operand_dtype
from .draws import drawn_along_l
from .nvfp4 import SF_VEC, ceil_div, dequantize, l_first, mma_layout_shape, reordered_scales, single_output_slots

SIGN_AND_LOW_BITS = 0b1011_1011  # keeps e2m1 values in {+-0, +-0.5, +-1, +-1.5}
GENERAL_TARGET_STD = 8.0  # each product's spread; the output is a product of two such values


def generate_input(m: int, n: int, k: int, l: int, seed: int, values: str = "contest", device=None,
                   contest_stream: bool = True):
    """The contest's inputs; on CUDA the RNG call sequence matches the contest's, bit for bit.

    The contest leaves the padding of the reordered scales uninitialised (torch.empty); we fill it
    with zeros so inputs are deterministic. Contest shapes have no padding.

    contest_stream is for the interface every task shares: each draw here is on the device
    already, so both streams are the contest's.
    """
    device = device or default_device()
    manual_seed(seed)
    if values == "contest":
        def draw_fp4(mn):
            return torch.randint(255, size=(l, mn, k // 2), dtype=torch.uint8, device=device) & SIGN_AND_LOW_BITS

        def draw_scales(shape):
            return torch.rand(shape, dtype=torch.float32, device=device).to(torch.float8_e4m3fn)
    elif values == "general":
        def draw_fp4(mn):
            return gv.fp4_bytes((l, mn, k // 2), device)

        def draw_scales(shape):
            return gv.scales(shape, k, GENERAL_TARGET_STD, device)
    else:
        raise ValueError(f"values must be 'contest' or 'general', not {values!r}")
    a, b1, b2 = (draw_fp4(mn).permute(1, 2, 0).view(torch.float4_e2m1fn_x2) for mn in (m, n, n))
    c = torch.randn((l, m, n), dtype=torch.float16, device=device).permute(1, 2, 0)

    sf_k = ceil_div(k, SF_VEC)

    def scale_pair(mn):
        ref = draw_scales((l, mn, sf_k)).permute(1, 2, 0)
        fill = torch.zeros(mma_layout_shape(l, mn, sf_k), dtype=torch.float8_e4m3fn, device=device)
        return ref.clone(), reordered_scales(ref, fill)

    (sfa, sfa_p), (sfb1, sfb1_p), (sfb2, sfb2_p) = (scale_pair(mn) for mn in (m, n, n))
    return (a, b1, b2, sfa, sfb1, sfb2, sfa_p, sfb1_p, sfb2_p, c)


@torch.no_grad()
def ref_kernel(data) -> torch.Tensor:
    """Exact decode, both products with exact products and fp32 accumulation (reference.compute), silu * mul in
    fp32, then fp16; does not modify `data`."""
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    m, n, l = c.shape
    out = torch.empty_like(c)
    dtype = operand_dtype(a.device)
    for part in l_parts(l, (m + 2 * n) * a.shape[1] * 2 * dtype.itemsize):
        lhs = dequantize(l_first(a[:, :, part]), l_first(sfa[:, :, part]), dtype)
        gate = matmul_nt(lhs, dequantize(l_first(b1[:, :, part]), l_first(sfb1[:, :, part]), dtype))
        up = matmul_nt(lhs, dequantize(l_first(b2[:, :, part]), l_first(sfb2[:, :, part]), dtype))
        out[:, :, part] = (torch.nn.functional.silu(gate) * up).permute(1, 2, 0).to(torch.float16)
    return out


generate_many, reference_many = drawn_along_l(generate_input, ref_kernel)  # timed samples (reference.draws)
fresh_slots, rebuild = single_output_slots(2)  # negating b2 negates the exact output
check_output = compare  # (output, expected) -> CheckReport
check, check_implementation = contest_checks(ref_kernel, check_output)


def flops(m: int, n: int, k: int, l: int, **_) -> float:
    return 4.0 * m * n * k * l


def bytes_moved(m: int, n: int, k: int, l: int, **_) -> float:
    sf_k = ceil_div(k, SF_VEC)
    return float(l * ((m + 2 * n) * (k // 2 + sf_k) + 2 * m * n))
