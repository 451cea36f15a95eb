"""A timed sample's inputs drawn at once (reference.draws): each tuple laid out as one drawn alone, the tuples
distinct, the draw deterministic under its seed, and the references drawn at once those of each tuple alone."""
import pytest
import torch

from reference import get_task
from reference.cases import cases

TASKS = ["gemv", "gemm", "dual_gemm", "group_gemm"]


def leaves(data) -> list:
    return [t for t in torch.utils._pytree.tree_leaves(data) if isinstance(t, torch.Tensor)]


def raw(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8) if t.element_size() == 1 else t.contiguous()


def same(x, y) -> bool:
    return all(torch.equal(raw(a), raw(b)) for a, b in zip(leaves(x), leaves(y), strict=True))


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("values", ["contest", "general"])
def test_many_inputs_are_laid_out_as_one_and_differ(task, values):
    mod = get_task(task)
    case = {**cases(task, "smoke")[0].args, "seed": 77}
    alone = leaves(mod.generate_input(**case, values=values, contest_stream=False))
    many = mod.generate_many(3, **case, values=values).inputs
    assert len(many) == 3
    for one in many:
        assert [(t.device, t.dtype, t.shape, t.stride()) for t in leaves(one)] == \
            [(t.device, t.dtype, t.shape, t.stride()) for t in alone]
    assert not torch.equal(raw(leaves(many[0])[0]), raw(leaves(many[1])[0]))  # each input its own values
    assert all(same(one, other) for one, other in zip(many, mod.generate_many(3, **case, values=values).inputs))


@pytest.mark.parametrize("task", TASKS)
def test_the_references_of_a_draw_are_each_inputs_own(task):
    """reference_many (one batched call where the task draws along l) gives, per input, what ref_kernel gives for
    that input's values copied out alone."""
    mod = get_task(task)
    case = {**cases(task, "smoke")[0].args, "seed": 5}
    draw = mod.generate_many(3, **case)
    expected = mod.reference_many(draw)
    assert len(expected) == 3
    for one, ref in zip(draw.inputs, expected):
        copied = torch.utils._pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, one)
        assert same(ref, mod.ref_kernel(copied))


@pytest.mark.parametrize("task", ["gemv", "gemm", "dual_gemm"])
def test_a_reference_cut_into_runs_of_l_gives_what_one_run_gives(task, monkeypatch):
    import reference.compute
    mod = get_task(task)
    whole = mod.generate_many(3, **{**cases(task, "smoke")[0].args, "seed": 9}).whole
    at_once = mod.ref_kernel(whole)
    monkeypatch.setattr(reference.compute, "DECODED_BYTES", 1)  # every l a run of its own
    assert reference.compute.l_parts(whole[-1].shape[-1], 10) == [slice(i, i + 1) for i in range(3)]
    assert same(mod.ref_kernel(whole), at_once)


@pytest.mark.parametrize("task", ["gemv", "gemm", "dual_gemm"])
def test_a_draw_staged_at_once_is_each_tuple_staged_alone(task):
    """Layout.stage_cut (one buffer, one copy per tensor) leaves, byte for byte, the images Layout.stage leaves
    for each tuple of the draw: every input, the output buffer and the zeroed padding."""
    from harness.evaluator.slots import Layout
    mod = get_task(task)
    draw = mod.generate_many(3, **{**cases(task, "smoke")[0].args, "seed": 11})
    layout = Layout.of(draw.inputs[0])
    at_once = layout.stage_cut(draw.whole, 3)
    assert len(at_once) == 3
    for one, staged in zip(draw.inputs, at_once):
        alone = layout.stage(one)
        assert staged.buffers.keys() == alone.buffers.keys()
        assert all(torch.equal(staged.buffers[where], alone.buffers[where]) for where in alone.buffers)
        assert same(staged.data, one)
    assert len({s.buffers[where].data_ptr() for s in at_once for where in s.buffers}) == 3 * len(at_once[0].buffers)
