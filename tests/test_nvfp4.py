"""Exact decoding of e2m1 and e4m3, and the reordered scale layout, against independent formulas."""
import itertools

import pytest
import torch

from reference import nvfp4


def e2m1_by_formula(code: int) -> float:
    sign = -1.0 if code & 0b1000 else 1.0
    exp, man = (code >> 1) & 0b11, code & 1
    return sign * (man * 0.5 if exp == 0 else (1 + man / 2) * 2.0 ** (exp - 1))


def e4m3_by_formula(code: int) -> float:
    sign = -1.0 if code & 0x80 else 1.0
    exp, man = (code >> 3) & 0xF, code & 0x7
    if exp == 0:
        return sign * man / 8 * 2.0**-6
    return sign * (1 + man / 8) * 2.0 ** (exp - 7)


def test_all_16_e2m1_codes_decode_exactly():
    low = torch.arange(16, dtype=torch.uint8)
    packed = (low | (low.flip(0) << 4)).view(torch.float4_e2m1fn_x2)
    values = nvfp4.decode_e2m1(packed).tolist()
    expected = list(itertools.chain.from_iterable((e2m1_by_formula(c), e2m1_by_formula(15 - c)) for c in range(16)))
    assert values == expected
    assert sorted({abs(v) for v in values}) == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def test_low_nibble_is_the_lower_k_element():
    packed = torch.tensor([[0x71]], dtype=torch.uint8)  # low nibble 1 (0.5), high nibble 7 (6.0)
    assert nvfp4.decode_e2m1(packed).tolist() == [[0.5, 6.0]]


def test_every_finite_e4m3_code_decodes_exactly():
    codes = [c for c in range(256) if c & 0x7F != 0x7F]  # 0x7F / 0xFF are NaN
    scales = torch.tensor(codes, dtype=torch.uint8).view(torch.float8_e4m3fn)
    assert nvfp4.decode_e4m3(scales).tolist() == [e4m3_by_formula(c) for c in codes]


def test_contest_scale_values_are_exact_integers():
    for value in (0, 1, 2, 3):
        s = torch.tensor([value], dtype=torch.int8).to(torch.float8_e4m3fn)
        assert nvfp4.decode_e4m3(s).item() == value


def test_dequantize_applies_one_scale_per_16_elements():
    packed = torch.full((1, 16), 0x22, dtype=torch.uint8)  # every element 1.0
    scales = torch.tensor([[0.5, 2.0]]).to(torch.float8_e4m3fn)
    out = nvfp4.dequantize(packed, scales)
    assert out[0, :16].eq(0.5).all() and out[0, 16:].eq(2.0).all()


@pytest.mark.parametrize("k", [48, 40])  # whole 16-element blocks, and a last block cut short
def test_dequantize_is_each_code_times_its_blocks_scale(k):
    torch.manual_seed(k)
    packed = torch.randint(0, 256, (5, k // 2), dtype=torch.uint8)
    scales = torch.randint(0, 120, (5, nvfp4.ceil_div(k, 16)), dtype=torch.uint8).view(torch.float8_e4m3fn)
    codes = torch.stack((packed & 0x0F, packed >> 4), dim=-1).flatten(-2)
    expected = [[e2m1_by_formula(int(codes[r, i])) * e4m3_by_formula(int(scales.view(torch.uint8)[r, i // 16]))
                 for i in range(k)] for r in range(5)]
    assert nvfp4.dequantize(packed, scales).tolist() == expected


def test_every_code_times_every_scale_is_exact_in_fp16():
    """A GPU reference decodes to fp16 (reference.compute.operand_dtype): no product of a code and a scale rounds."""
    finite = [c for c in range(256) if c & 0x7F != 0x7F]
    scales = torch.tensor(finite, dtype=torch.uint8).view(torch.float8_e4m3fn)[:, None]  # one scale per row
    every_code = torch.tensor([lo | (lo + 1) << 4 for lo in range(0, 16, 2)], dtype=torch.uint8)  # codes 0-15
    packed = every_code.repeat(len(finite), 1)  # one 16-element block per row
    fp32 = nvfp4.dequantize(packed, scales)
    fp16 = nvfp4.dequantize(packed, scales, torch.float16)
    assert fp16.dtype == torch.float16
    assert torch.equal(fp16.float(), fp32)
    assert fp32.abs().max().item() == 6 * 448 and fp32[fp32 != 0].abs().min().item() == 0.5 * 2.0**-9


@pytest.mark.parametrize("mn,sf_k,l", [(128, 4, 1), (200, 6, 2), (40, 16, 1), (384, 8, 3)])
def test_reordered_layout_matches_index_formula(mn, sf_k, l):
    ref = torch.randint(1, 100, (mn, sf_k, l), dtype=torch.int16)
    shape = nvfp4.mma_layout_shape(l, mn, sf_k)
    fill = torch.full(shape, -1, dtype=torch.int16)
    reordered = nvfp4.reordered_scales(ref, fill)
    assert tuple(reordered.shape) == (32, 4, -(-mn // 128), 4, -(-sf_k // 4), l)
    for i in range(mn):
        for j in range(sf_k):
            for b in range(l):
                assert reordered[i % 32, (i % 128) // 32, i // 128, j % 4, j // 4, b] == ref[i, j, b]
    written = (reordered != -1).sum().item()
    assert written == mn * sf_k * l  # padding untouched
    assert torch.equal(nvfp4.gather_from_mma_layout(reordered, mn, sf_k), ref)
