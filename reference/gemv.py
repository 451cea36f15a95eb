"""Task gemv: batched NVFP4 matrix-vector product, c[m, 0, l] = sum_k A[m, k, l] * b[0, k, l].

Input tuple (contest order): (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c), with b and sfb padded
to 128 rows (only row 0 is used) and c of shape [m, 1, l] in fp16.
"""
import torch

from . import general_values as gv
from .checker import compare, contest_checks
from .compute import default_device, l_parts, manual_seed, matmul_nt, operand_dtype
from .draws import drawn_along_l
from .nvfp4 import SF_VEC, ceil_div, dequantize, l_first, mma_layout_shape, reordered_scales, single_output_slots

B_ROWS = 128  # b is padded to 128 rows so the contest's _scaled_mm can run
GENERAL_TARGET_STD = 64.0


def generate_input(m: int, k: int, l: int, seed: int, values: str = "contest", device=None,
                   contest_stream: bool = True):
    """The contest's inputs; on CUDA the RNG call sequence matches the contest's, bit for bit.

    contest_stream is for the interface every task shares: each draw here is on the device
    already, so both streams are the contest's.
    """
    device = device or default_device()
    manual_seed(seed)
    if values == "contest":
        a = torch.randint(0, 4, (l, m, k // 2), dtype=torch.uint8, device=device)
        b = torch.randint(0, 4, (l, B_ROWS, k // 2), dtype=torch.uint8, device=device)

        def draw_scales(shape):
            return torch.randint(0, 3, shape, dtype=torch.int8, device=device).to(torch.float8_e4m3fn)
    elif values == "general":
        a = gv.fp4_bytes((l, m, k // 2), device)
        b = gv.fp4_bytes((l, B_ROWS, k // 2), device)

        def draw_scales(shape):
            return gv.scales(shape, k, GENERAL_TARGET_STD, device)
    else:
        raise ValueError(f"values must be 'contest' or 'general', not {values!r}")
    a = a.permute(1, 2, 0).view(torch.float4_e2m1fn_x2)
    b = b.permute(1, 2, 0).view(torch.float4_e2m1fn_x2)
    c = torch.randn((l, m, 1), dtype=torch.float16, device=device).permute(1, 2, 0)

    sf_k = ceil_div(k, SF_VEC)

    def scale_pair(mn):
        ref = draw_scales((l, mn, sf_k)).permute(1, 2, 0)
        reordered = reordered_scales(ref, draw_scales(mma_layout_shape(l, mn, sf_k)))
        return ref.clone(), reordered

    sfa, sfa_permuted = scale_pair(m)
    sfb, sfb_permuted = scale_pair(B_ROWS)
    return (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c)


@torch.no_grad()
def ref_kernel(data) -> torch.Tensor:
    """Exact decode, exact products and fp32 accumulation (reference.compute), fp16 result; does not modify `data`."""
    a, b, sfa, sfb, _, _, c = data
    m, _, l = c.shape
    out = torch.empty_like(c)
    dtype = operand_dtype(a.device)
    for part in l_parts(l, (m + 1) * a.shape[1] * 2 * dtype.itemsize):
        mat = dequantize(l_first(a[:, :, part]), l_first(sfa[:, :, part]), dtype)
        vec = dequantize(l_first(b[:1, :, part]), l_first(sfb[:1, :, part]), dtype)
        out[:, :, part] = matmul_nt(mat, vec).permute(1, 2, 0).to(torch.float16)
    return out


generate_many, reference_many = drawn_along_l(generate_input, ref_kernel)  # timed samples (reference.draws)
fresh_slots, rebuild = single_output_slots(0)  # negating a negates the exact output
check_output = compare  # (output, expected) -> CheckReport
check, check_implementation = contest_checks(ref_kernel, check_output)


def flops(m: int, k: int, l: int, **_) -> float:
    return 2.0 * m * k * l


def bytes_moved(m: int, k: int, l: int, **_) -> float:
    """Each input read once (b's single used row only), c written once."""
    sf_k = ceil_div(k, SF_VEC)
    return float(l * ((m + 1) * (k // 2 + sf_k) + 2 * m))
