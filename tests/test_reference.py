"""The references against a float64 brute force; the inputs' structure and value distributions."""
import math

import numpy as np
import pytest
import torch

from reference import get_task
from reference.cases import cases
from tests.brute_force import gemm64


def raw(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().view(torch.uint8).cpu().numpy()


def close_to_fp16_of(out: torch.Tensor, exact: np.ndarray):
    expected = torch.from_numpy(exact).to(torch.float16).float()
    diff = (out.float().cpu() - expected).abs()
    assert bool((diff <= 1e-3 + 1e-3 * expected.abs()).all()), float(diff.max())


@pytest.mark.parametrize("values", ["contest", "general"])
def test_gemv_matches_float64(values):
    mod = get_task("gemv")
    data = mod.generate_input(m=128, k=64, l=2, seed=3, values=values)
    a, b, sfa, sfb, _, _, c = data
    out = mod.ref_kernel(data)
    for li in range(2):
        exact = gemm64(raw(a[:, :, li]), raw(sfa[:, :, li]), raw(b[:1, :, li]), raw(sfb[:1, :, li]))
        close_to_fp16_of(out[:, :, li], exact)


@pytest.mark.parametrize("values", ["contest", "general"])
def test_gemm_matches_float64(values):
    mod = get_task("gemm")
    data = mod.generate_input(m=128, n=32, k=64, l=1, seed=4, values=values)
    a, b, sfa, sfb, _, _, _ = data
    close_to_fp16_of(mod.ref_kernel(data)[:, :, 0], gemm64(raw(a[:, :, 0]), raw(sfa[:, :, 0]), raw(b[:, :, 0]), raw(sfb[:, :, 0])))


@pytest.mark.parametrize("values", ["contest", "general"])
def test_dual_gemm_matches_float64(values):
    mod = get_task("dual_gemm")
    data = mod.generate_input(m=128, n=16, k=64, l=1, seed=5, values=values)
    a, b1, b2, sfa, sfb1, sfb2 = data[:6]
    x = [gemm64(raw(a[:, :, 0]), raw(sfa[:, :, 0]), raw(b[:, :, 0]), raw(s[:, :, 0])) for b, s in ((b1, sfb1), (b2, sfb2))]
    exact = x[0] / (1 + np.exp(-x[0])) * x[1]
    close_to_fp16_of(mod.ref_kernel(data)[:, :, 0], exact)


@pytest.mark.parametrize("values", ["contest", "general"])
def test_group_gemm_matches_float64_with_ragged_m(values):
    mod = get_task("group_gemm")
    data = mod.generate_input(m=(40, 72, 3), n=(16, 32, 8), k=(64, 32, 32), g=3, seed=6, values=values)
    outs = mod.ref_kernel(data)
    assert len(outs) == 3
    for (a, b, _), (sfa, sfb), out in zip(data[0], data[1], outs):
        close_to_fp16_of(out[:, :, 0], gemm64(raw(a[:, :, 0]), raw(sfa[:, :, 0]), raw(b[:, :, 0]), raw(sfb[:, :, 0])))


def test_gemv_structure_and_contest_values():
    a, b, sfa, sfb, sfa_p, sfb_p, c = get_task("gemv").generate_input(m=256, k=512, l=2, seed=1111)
    assert a.dtype == b.dtype == torch.float4_e2m1fn_x2
    assert (a.shape, b.shape, c.shape) == ((256, 256, 2), (128, 256, 2), (256, 1, 2))
    assert a.stride() == (256, 1, 256 * 256) and c.stride() == (1, 1, 256)
    assert sfa.shape == (256, 32, 2) and sfa.stride() == (32, 1, 256 * 32) and sfb.shape == (128, 32, 2)
    assert sfa_p.shape == (32, 4, 2, 4, 8, 2) and sfb_p.shape == (32, 4, 1, 4, 8, 2)
    assert c.dtype == torch.float16
    assert int(raw(a).max()) < 4  # high nibble always 0, low nibble 0..3
    assert set(sfa.float().unique().tolist()) <= {0.0, 1.0, 2.0}


def test_gemm_and_dual_gemm_value_distributions():
    gemm = get_task("gemm").generate_input(m=128, n=256, k=512, l=1, seed=1111)
    assert set(np.unique(raw(gemm[0]))) == set(range(256))
    assert set(gemm[2].float().unique().tolist()) == {0.0, 1.0, 2.0, 3.0}
    dual = get_task("dual_gemm").generate_input(m=128, n=128, k=512, l=1, seed=1111)
    assert all(int(v) & ~0b1011_1011 == 0 for v in np.unique(raw(dual[0])))
    s = dual[3].float()
    assert float(s.min()) >= 0 and float(s.max()) <= 1 and len(s.unique()) > 8  # rand() in [0, 1) rounds up to 1.0 in e4m3


def test_group_gemm_structure_scales_on_cpu():
    abc, sfs, sfs_p, sizes = get_task("group_gemm").generate_input(m=(96, 128), n=(128, 256), k=(256, 512), g=2, seed=1111)
    assert sizes == [(96, 128, 256, 1), (128, 256, 512, 1)]
    for (a, b, c), (sfa, sfb), (pa, pb), (m, n, k, _) in zip(abc, sfs, sfs_p, sizes):
        assert a.shape == (m, k // 2, 1) and b.shape == (n, k // 2, 1) and c.shape == (m, n, 1)
        assert sfa.device.type == "cpu" and sfa.shape == (m, k // 16, 1)
        assert set(sfa.float().unique().tolist()) <= {1.0, 2.0}
        assert pa.shape == (32, 4, math.ceil(m / 128), 4, math.ceil(k / 64), 1)
        assert set(pa.float().unique().tolist()) <= {1.0, 2.0}  # padding drawn from the scales' distribution


@pytest.mark.parametrize("task", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_generation_is_deterministic(task):
    mod = get_task(task)
    case = cases(task, "smoke")[0].args
    first, second = mod.generate_input(**case), mod.generate_input(**case)
    flat = lambda d: [t for t in torch.utils._pytree.tree_leaves(d) if isinstance(t, torch.Tensor)]  # noqa: E731
    assert all(torch.equal(x.view(torch.uint8) if x.element_size() == 1 else x, y.view(torch.uint8) if y.element_size() == 1 else y)
               for x, y in zip(flat(first), flat(second)))
    other = mod.generate_input(**{**case, "seed": case["seed"] + 1})
    assert not torch.equal(flat(first)[0].view(torch.uint8), flat(other)[0].view(torch.uint8))


@pytest.mark.parametrize("task", ["gemv", "gemm", "dual_gemm", "group_gemm"])
def test_general_values_cover_all_codes_and_fractional_scales(task):
    mod = get_task(task)
    case = cases(task, "smoke")[1].args
    data = mod.generate_input(**case, values="general")
    leaves = [t for t in torch.utils._pytree.tree_leaves(data) if isinstance(t, torch.Tensor)]
    fp4 = [t for t in leaves if t.dtype == torch.float4_e2m1fn_x2]
    nibbles = set()
    for t in fp4:
        codes = raw(t)
        nibbles |= set(np.unique(codes & 15)) | set(np.unique(codes >> 4))
    assert nibbles == set(range(16))
    scales = torch.cat([t.float().flatten().cpu() for t in leaves if t.dtype == torch.float8_e4m3fn])
    assert float(scales.min()) > 0
    mantissas = {math.frexp(v)[0] for v in scales.unique().tolist()}
    assert len(mantissas) >= 6  # not powers of two
    assert float(scales.max()) / float(scales.min()) >= 16  # a spread of magnitudes
    outs = mod.ref_kernel(data)
    for out in outs if isinstance(outs, list) else [outs]:
        assert bool(torch.isfinite(out).all()) and float(out.float().abs().max()) < 60000


def test_benchmark_seed_chains_follow_contest():
    from harness.evaluator.session import input_seeds
    assert input_seeds("gemm", 1111)[:2] == [1153, 1195] and len(input_seeds("gemm", 1111)) == 50
    assert len(input_seeds("group_gemm", 1111)) == 15 and input_seeds("gemv", 1111) == [1111]


@pytest.mark.parametrize("values", ["contest", "general"])
def test_group_gemms_faster_stream_keeps_the_contests_placement_layout_and_scale_values(values):
    from reference.nvfp4 import gather_from_mma_layout
    mod = get_task("group_gemm")
    args = dict(m=(40, 200), n=(16, 128), k=(64, 96), g=2, seed=6, values=values)
    contest, fast = mod.generate_input(**args), mod.generate_input(**args, contest_stream=False)
    for ours, theirs in zip(torch.utils._pytree.tree_leaves(fast[:3]), torch.utils._pytree.tree_leaves(contest[:3])):
        assert (ours.device, ours.dtype, ours.shape, ours.stride()) == \
            (theirs.device, theirs.dtype, theirs.shape, theirs.stride())
    assert all(t.device.type == "cpu" for pair in fast[1] for t in pair)
    for (sfa, sfb), (sfa_r, sfb_r), (mi, ni, ki, _) in zip(fast[1], fast[2], fast[3]):
        assert torch.equal(gather_from_mma_layout(sfa_r, mi, ki // 16).cpu().float(), sfa.float())
        assert torch.equal(gather_from_mma_layout(sfb_r, ni, ki // 16).cpu().float(), sfb.float())
        if values == "contest":
            assert set(sfa.float().unique().tolist()) <= set(contest[1][0][0].float().unique().tolist())
