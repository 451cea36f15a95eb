"""Memory shared with the worker: each slot's CUDA buffer fills its own allocator segment (nothing else, no
free space, zeroed), and the input check compares tensors wherever they live (group GEMM keeps scales on
the CPU)."""
import pytest
import torch

from harness.evaluator.evaluation import same_bits
from harness.evaluator.slots import OWN_SEGMENT_BYTES, SEGMENT_ALIGN, Layout, Slot, segment_bytes

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("nbytes", [1, 4096, 1 << 20, (1 << 20) + 1, 5 << 20, 10 << 20, (12 << 20) + 1, 100 << 20])
def test_a_cuda_buffer_is_sized_to_get_a_segment_of_its_own(nbytes):
    size = segment_bytes(nbytes)
    assert size >= max(nbytes, OWN_SEGMENT_BYTES) and size % SEGMENT_ALIGN == 0 and size - nbytes < OWN_SEGMENT_BYTES


def test_same_bits_finds_one_changed_byte():
    a = torch.arange(64, dtype=torch.uint8)
    b = a.clone()
    assert same_bits([(a, b)])
    b[17] ^= 1
    assert not same_bits([(a, a.clone()), (a, b)])


@needs_gpu
@pytest.mark.parametrize("nbytes", [512, 300 << 10, 3 << 20, 9 << 20, 30 << 20])
def test_every_slot_owns_its_segment_whatever_its_size(nbytes):
    template = (torch.zeros(nbytes, dtype=torch.uint8, device="cuda"), torch.zeros(8, dtype=torch.float8_e4m3fn),
                torch.zeros(4, 4, dtype=torch.float16, device="cuda"))
    slots = [Slot(Layout.of(template)) for _ in range(3)]
    assert all(s.isolated() for s in slots)
    assert all(int(s.buffers["cuda"].count_nonzero()) == 0 for s in slots)


@needs_gpu
def test_same_bits_compares_cpu_and_cuda_tensors_in_one_call():
    cpu, gpu = torch.arange(32, dtype=torch.uint8), torch.arange(32, dtype=torch.uint8, device="cuda")
    assert same_bits([(cpu, cpu.clone()), (gpu, gpu.clone())])
    changed = gpu.clone()
    changed[3] = 0
    assert not same_bits([(cpu, cpu.clone()), (gpu, changed)])


@pytest.mark.parametrize("where", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_a_staged_input_reaches_the_slot_whole_in_one_copy_per_device(where):
    """A permuted operand, a scale on the CPU (as group GEMM's) and an fp16 output, staged in the evaluator's own
    memory and written in one copy per device: the slot then holds exactly the private tuple."""
    private = (torch.randint(0, 255, (3, 40, 5), dtype=torch.uint8, device=where).permute(1, 2, 0),
               [torch.randn(7, 3).to(torch.float8_e4m3fn)], torch.randn(6, 2, device=where).half(), 4)
    layout = Layout.of(private)
    staged = layout.stage(private)
    slot = Slot(layout)
    assert all(b.data_ptr() != s.data_ptr() for b in staged.buffers.values() for s in slot.buffers.values())
    slot.write_staged(staged)
    assert slot.data[3] == 4 and slot.data[0].stride() == private[0].stride()
    assert same_bits([(slot.data[0], private[0]), (slot.data[1][0], private[1][0]), (slot.data[2], private[2])])


@pytest.mark.parametrize("where", ["cpu", pytest.param("cuda", marks=needs_gpu)])
def test_the_input_runs_cover_every_input_byte_and_no_output_byte(where):
    """Group GEMM's shape of tuple: outputs between inputs on the device, scales on the CPU. A changed byte of any
    input, or of the padding between tensors, shows in the runs; a changed output byte does not."""
    def group(m, n):
        return (torch.randint(0, 255, (m, 8), dtype=torch.uint8, device=where),
                torch.randint(0, 255, (n, 8), dtype=torch.uint8, device=where),
                torch.randn(m, n, device=where).half())
    private = ([group(5, 3), group(7, 2)], [(torch.randn(5, 1).to(torch.float8_e4m3fn),)], [(2, 3)])
    layout = Layout.of(private)
    staged = layout.stage(private)
    slot = Slot(layout)
    slot.write_staged(staged)
    assert same_bits(slot.input_pairs(staged))
    outputs = [slot.data[0][0][2], slot.data[0][1][2]]
    for out in outputs:
        out.view(torch.uint8)[0] ^= 1
    assert same_bits(slot.input_pairs(staged))
    padding = layout.tensors[0]["offset"] + layout.tensors[0]["bytes"]  # the first byte after group 0's a
    for changed in (slot.data[0][1][0].view(-1), slot.data[1][0][0].view(torch.uint8).view(-1),
                    slot.buffers[where][padding:padding + 1]):
        changed[0] ^= 1
        assert not same_bits(slot.input_pairs(staged))
        changed[0] ^= 1
    assert same_bits(slot.input_pairs(staged))


def test_a_write_into_the_padding_is_named_apart_from_a_changed_input():
    from types import SimpleNamespace

    from harness.evaluator.evaluation import MODIFIED_INPUTS, WROTE_PADDING, Evaluation
    private = (torch.randint(0, 255, (5, 8), dtype=torch.uint8), torch.randn(3, 2).half())
    layout = Layout.of(private)
    staged, slot = layout.stage(private), Slot(layout)
    slot.write_staged(staged)
    evaluation = SimpleNamespace(slots=[slot])
    evaluation.inputs_unchanged = lambda privates, ids: Evaluation.inputs_unchanged(evaluation, privates, ids)

    def verdict():
        return Evaluation.staged_unchanged(evaluation, [staged], [0])
    padding = layout.tensors[0]["offset"] + layout.tensors[0]["bytes"]
    assert verdict() == ""
    slot.buffers["cpu"][padding] ^= 1
    assert verdict() == WROTE_PADDING
    slot.buffers["cpu"][padding] ^= 1
    slot.data[0][0, 0] ^= 1
    assert verdict() == MODIFIED_INPUTS
