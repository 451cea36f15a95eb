"""Many inputs of one shape at once, for the evaluator's timed samples (each draws a fresh input per call), and
their references.

A task's generate_many(count, seed, values=, device=, **case) returns a Draw of `count` input tuples under one
keyed seed, with the contest's distribution from the task's own (non-contest) stream: no contest run shares them;
its reference_many(draw) returns their reference outputs, in order. Where every input tensor ends in the batch
dimension l and nothing is drawn across l (gemv, gemm, dual GEMM), one draw with l times `count` is cut into
`count` tuples and one reference call (batched over l) serves them all: thousands of small device calls per
sample become a few dozen. Otherwise (group GEMM) input i is drawn alone under seed + i, and referenced alone.
"""
from dataclasses import dataclass


@dataclass
class Draw:
    inputs: list  # one input tuple per call
    whole: tuple | None = None  # the one input tuple they were cut from, along l; None where drawn one by one


def cut_along_l(data, count: int) -> list:
    """`count` equal runs of the last dimension of every tensor of `data` (a tensor or a tuple of them), as views."""
    if isinstance(data, tuple):
        return list(zip(*(cut_along_l(t, count) for t in data)))
    l = data.shape[-1] // count
    return [data[..., i * l:(i + 1) * l] for i in range(count)]


def drawn_along_l(generate_input, ref_kernel):
    """(generate_many, reference_many) for a task whose every input tensor's last dimension is l, drawn
    elementwise, and whose ref_kernel treats each l alone: each tuple's tensors are views of one draw's, with the
    shapes and strides of a tuple drawn alone."""
    def generate_many(count: int, seed: int, values: str = "contest", device=None, **case) -> Draw:
        whole = generate_input(**{**case, "l": case["l"] * count}, seed=seed, values=values, device=device,
                               contest_stream=False)
        return Draw(cut_along_l(whole, count), whole)

    def reference_many(draw: Draw) -> list:
        return cut_along_l(ref_kernel(draw.whole), len(draw.inputs))
    return generate_many, reference_many


def drawn_one_by_one(generate_input, ref_kernel):
    """(generate_many, reference_many) for any task: input i drawn alone under seed + i, referenced alone."""
    def generate_many(count: int, seed: int, values: str = "contest", device=None, **case) -> Draw:
        return Draw([generate_input(**case, seed=seed + i, values=values, device=device, contest_stream=False)
                     for i in range(count)])

    def reference_many(draw: Draw) -> list:
        return [ref_kernel(one) for one in draw.inputs]
    return generate_many, reference_many
