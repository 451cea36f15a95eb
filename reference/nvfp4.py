"""NVFP4 building blocks shared by the four tasks: exact decoding and the scale layouts.

NVFP4 packs two e2m1 values per byte, the element with the lower K index in the low nibble.
Each run of 16 consecutive K elements shares one float8 e4m3 scale. Decoding here is exact in fp32 and in fp16:
an e2m1 value has 2 significant bits and an e4m3 value 4, so their product has at most 6, its lowest at 2^-10 or
above (0.5 times e4m3's smallest, 2^-9) and its magnitude at most 6 * 448 = 2688: fp16's normal range and 11 bits
hold every such product.
"""
import functools

import torch

SF_VEC = 16  # K elements per scale factor
ATOM_M = (32, 4)  # rows of one 128-row scale atom, as (mm32, mm4)
ATOM_K = 4  # scale columns per atom
MMA_PERMUTE = (3, 4, 1, 5, 2, 0)  # (l, rest_mn, rest_k, 32, 4, 4) -> (32, 4, rest_mn, 4, rest_k, l)

# e2m1 code -> value: sign bit 3, exponent bits 2..1 (bias 1), mantissa bit 0.
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """View a float4_e2m1fn_x2 (or any 1-byte) tensor as uint8 without copying."""
    return t.view(torch.uint8)


@functools.cache
def byte_pairs(device: torch.device) -> torch.Tensor:
    """[256, 2] float32: the two e2m1 values of each byte (low nibble first), built once per device."""
    return torch.tensor([[E2M1_VALUES[byte & 0x0F], E2M1_VALUES[byte >> 4]] for byte in range(256)],
                        dtype=torch.float32, device=device)


def decode_e2m1(packed: torch.Tensor) -> torch.Tensor:
    """[..., k/2] packed e2m1 pairs -> [..., k] float32 values: one lookup per byte in a table of value pairs."""
    codes = as_bytes(packed)
    return byte_pairs(codes.device)[codes.int()].flatten(-2)


def l_first(t: torch.Tensor) -> torch.Tensor:
    """[mn, x, l] -> [l, mn, x], a view: a batch of 2-D operands."""
    return t.permute(2, 0, 1)


def decode_e4m3(scales: torch.Tensor) -> torch.Tensor:
    """float8_e4m3fn -> float32 (exact)."""
    return scales.to(torch.float32)


PAIR_WORDS = {torch.float16: torch.int32, torch.float32: torch.int64}  # one word holds a byte's two values


@functools.cache
def scaled_byte_pairs(device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """[256 * 256] words: word 256 * s + b holds the two e2m1 values of byte b (low nibble first) times the e4m3 scale
    of code s, in `dtype` (exact in fp32 and fp16; a quarter MiB in fp16), built once per device and dtype."""
    scales = decode_e4m3(torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn))
    pairs = decode_e2m1(torch.arange(256, dtype=torch.uint8))
    products = (scales[:, None, None] * pairs[None]).reshape(256 * 256, 2).to(dtype)
    return products.view(PAIR_WORDS[dtype]).flatten().to(device)


def dequantize(packed: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """[..., mn, k/2] packed values and [..., mn, k/16] scales -> [..., mn, k] in `dtype` (float32 or float16),
    exact: one pass widens each byte to its row of a table of every byte's values times every scale, a second
    selects the rows (1.76 ms for 235 MB of packed bytes in fp16 on an H100, against 4.96 ms for a lookup of the
    byte's values and then a scaling pass)."""
    codes = as_bytes(packed)
    per_scale = SF_VEC // 2  # packed bytes per scale
    half = codes.shape[-1]
    shifted = as_bytes(scales).to(codes.device).int() << 8
    if half % per_scale == 0:  # each scale's code broadcast over its bytes, in the one pass that widens them
        rows = codes.unflatten(-1, (half // per_scale, per_scale)) + shifted[..., :half // per_scale, None]
    else:
        rows = codes + shifted.repeat_interleave(per_scale, dim=-1)[..., :half]
    words = torch.index_select(scaled_byte_pairs(codes.device, dtype), 0, rows.flatten())
    return words.view(dtype).reshape(*codes.shape[:-1], 2 * half)


def mma_layout_shape(l: int, mn: int, sf_k: int) -> tuple[int, ...]:
    """Shape of the buffer that, permuted by MMA_PERMUTE, is the (32, 4, rest_mn, 4, rest_k, l) layout."""
    return (l, ceil_div(mn, ATOM_M[0] * ATOM_M[1]), ceil_div(sf_k, ATOM_K), ATOM_M[0], ATOM_M[1], ATOM_K)


def scatter_to_mma_layout(reordered: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Write ref [mn, sf_k, l] into reordered (32, 4, rest_mn, 4, rest_k, l), in place, as the contest does.

    Row i goes to (i % 32, (i % 128) // 32, i // 128), scale column j to (j % 4, j // 4).
    Entries past mn or sf_k (padding) keep whatever `reordered` held.
    """
    mn, sf_k, l = ref.shape
    rest_mn, rest_k = reordered.shape[2], reordered.shape[4]
    by_row = reordered.permute(2, 1, 0, 4, 3, 5)  # (rest_mn, 4, 32, rest_k, 4, l): row-major rows and columns
    full = by_row.reshape(rest_mn * ATOM_M[0] * ATOM_M[1], rest_k * ATOM_K, l)  # a copy: keeps the padding
    full[:mn, :sf_k] = ref.to(reordered.device)
    by_row.copy_(full.view(by_row.shape))
    return reordered


def gather_from_mma_layout(reordered: torch.Tensor, mn: int, sf_k: int) -> torch.Tensor:
    """Inverse of scatter_to_mma_layout: (32, 4, rest_mn, 4, rest_k, l) -> [mn, sf_k, l]."""
    l = reordered.shape[-1]
    # (32, 4, rest_mn, 4, rest_k, l) -> (rest_mn, 4, 32, rest_k, 4, l): row = rest*128 + mm4*32 + mm32
    rows = reordered.permute(2, 1, 0, 4, 3, 5).reshape(-1, reordered.shape[4] * ATOM_K, l)
    return rows[:mn, :sf_k, :]


def reordered_scales(ref: torch.Tensor, fill: torch.Tensor) -> torch.Tensor:
    """The MMA-layout copy of ref [mn, sf_k, l]: `fill` (shape mma_layout_shape) supplies the padding."""
    return scatter_to_mma_layout(fill.permute(*MMA_PERMUTE), ref)


def single_output_slots(index: int):
    """fresh_slots(data) and rebuild(data, fresh) for a task with one output c (last in the tuple)
    whose exact value negates when the packed operand at `index` is negated."""
    def fresh_slots(data) -> list:
        return [(data[index], data[-1])]

    def rebuild(data, fresh: list) -> tuple:
        items = list(data)
        items[index], items[-1] = fresh[0]
        return tuple(items)
    return fresh_slots, rebuild
