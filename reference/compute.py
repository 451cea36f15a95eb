"""Where reference tensors live and how they are multiplied: exact fp32 on any device."""
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


@contextlib.contextmanager
def full_fp32_matmul():
    """Disable TF32 and reduced-precision reductions while the block runs."""
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[0], saved[1]
        torch.set_float32_matmul_precision(saved[2])


def matmul_nt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp32 [..., m, k] @ [..., n, k]^T -> fp32 [..., m, n], with full fp32 products and sums (batched over any
    leading dimensions)."""
    with full_fp32_matmul():
        return a @ b.transpose(-2, -1)


DECODED_BYTES = 1 << 30  # the most decoded fp32 operands one step of a reference holds


def l_parts(l: int, bytes_per_l: int) -> list[slice]:
    """The batch dimension l cut into runs whose decoded operands (bytes_per_l each) fit DECODED_BYTES: a
    reference decodes and multiplies a run at once (its inputs may have many l: a timed sample's, drawn at once)."""
    step = max(1, DECODED_BYTES // max(1, bytes_per_l))
    return [slice(start, min(l, start + step)) for start in range(0, l, step)]
