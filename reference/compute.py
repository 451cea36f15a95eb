"""Where reference tensors live and how they are multiplied: exact products and fp32 accumulation on any device
(decoded operands in fp16 on tensor cores on a GPU, in fp32 elsewhere)."""
import contextlib

import torch


def default_device() -> str:
    """The contest generates on CUDA; without a GPU we generate the same structure on the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def manual_seed(seed: int):
    """torch.manual_seed for the generators inputs are drawn from, CPU and CUDA: the same streams, without the
    lazy seeding of every other backend torch knows (which formats a stack trace per call, about 1.5 ms)."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def operand_dtype(device) -> torch.dtype:
    """The dtype a reference decodes operands to on `device`: fp16 on a GPU, where every decoded NVFP4 value is exact
    in it (reference.nvfp4) and the tensor cores multiply it with exact products and fp32 accumulation, at a small
    part of the cost of fp32 products; fp32 elsewhere, where fp16 products are no faster."""
    return torch.float16 if torch.device(device).type == "cuda" else torch.float32


@contextlib.contextmanager
def full_precision_matmul():
    """Disable TF32, reduced-precision reductions and fp16 accumulation (which cuBLAS would use for fp16 operands
    even with an fp32 result) while the block runs."""
    matmul = torch.backends.cuda.matmul
    saved = (matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision(),
             matmul.allow_fp16_reduced_precision_reduction, matmul.allow_fp16_accumulation)
    matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    matmul.allow_fp16_reduced_precision_reduction = False
    matmul.allow_fp16_accumulation = False
    try:
        yield
    finally:
        matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[0], saved[1]
        torch.set_float32_matmul_precision(saved[2])
        matmul.allow_fp16_reduced_precision_reduction, matmul.allow_fp16_accumulation = saved[3], saved[4]


def matmul_nt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[..., m, k] @ [..., n, k]^T -> fp32 [..., m, n] (2-D, or batched over one leading dimension), with exact
    products and fp32 accumulation: fp32 operands with TF32 off, or fp16 operands with an fp32 result (CUDA only)."""
    bt = b.transpose(-2, -1)
    with full_precision_matmul():
        if a.dtype == torch.float16:
            return (torch.bmm if a.dim() == 3 else torch.mm)(a, bt, out_dtype=torch.float32)
        return a @ bt


DECODED_BYTES = 1 << 30  # the most decoded operands one step of a reference holds


def l_parts(l: int, bytes_per_l: int) -> list[slice]:
    """The batch dimension l cut into runs whose decoded operands (bytes_per_l each) fit DECODED_BYTES: a
    reference decodes and multiplies a run at once (its inputs may have many l: a timed sample's, drawn at once)."""
    step = max(1, DECODED_BYTES // max(1, bytes_per_l))
    return [slice(start, min(l, start + step)) for start in range(0, l, step)]
