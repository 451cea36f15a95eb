"""The baseline issue 17 names: what a user would run instead of a kernel of their own, the library's
fp16 tensor-core path on operands decoded to fp16 ahead of time (the decode is not timed), timed by
the arena's timing core (harness.device.GpuDevice: 4x-L2 flush, hold, the contest's inputs per
sample and stopping rule).

    python scripts/predecoded_baseline.py [--task gemm ...] [--json OUT.json]

Per task: gemv, `torch.bmm` of the decoded matrix and vector per batch (cuBLAS fp16, fp32
accumulate); gemm, `torch.bmm` with B transposed; dual_gemm, one `torch.bmm` on [B1; B2] and then
`silu(gate) * up` on its fp16 halves; group_gemm, `torch._grouped_mm` in bf16 over the groups
(fp16 is not among its types), or one `torch.matmul` per group where it refuses the shapes.
fp16 reductions are kept in fp32 (`allow_fp16_reduced_precision_reduction = False`).
"""
import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.device import GpuDevice, describe  # noqa: E402
from harness.rules import StopRule, task_rules  # noqa: E402
from harness.stats import calculate, geomean  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases  # noqa: E402
from reference.nvfp4 import dequantize  # noqa: E402

TASKS = ("gemv", "gemm", "dual_gemm", "group_gemm")


@dataclass
class BaselineShape:
    task: str
    index: int
    shape: str
    library_call: str
    mean_ns: float
    err_ns: float
    runs: int
    max_abs_diff: float  # against the task's exact reference, as a sanity check of the decode


def decoded(packed: torch.Tensor, scales: torch.Tensor, dtype=torch.float16) -> torch.Tensor:
    """[mn, k/2, l] packed and [mn, k/16, l] scales -> [l, mn, k] in dtype (exact for fp16)."""
    return torch.stack([dequantize(packed[:, :, i], scales[:, :, i]).to(dtype) for i in range(packed.shape[2])])


def prepare(task: str, data):
    """Decode once; returns (operands, call) where call(operands) is the timed library call."""
    if task == "gemv":
        a, b, sfa, sfb, _, _, _ = data
        mat, vec = decoded(a, sfa), decoded(b[:1], sfb[:1])
        return (mat, vec.transpose(1, 2)), lambda ops: torch.bmm(ops[0], ops[1]), "torch.bmm fp16"
    if task == "gemm":
        a, b, sfa, sfb, _, _, _ = data
        return (decoded(a, sfa), decoded(b, sfb).transpose(1, 2)), lambda ops: torch.bmm(ops[0], ops[1]), \
            "torch.bmm fp16"
    if task == "dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, *_ = data
        n = b1.shape[0]
        both = torch.cat([decoded(b1, sfb1), decoded(b2, sfb2)], dim=1).transpose(1, 2)

        def dual(ops):
            x = torch.bmm(ops[0], ops[1])
            return torch.nn.functional.silu(x[..., :n]) * x[..., n:]
        return (decoded(a, sfa), both), dual, "torch.bmm fp16 on [B1; B2], silu * mul"
    abc, sfasfb, _, _ = data
    if len({b.shape for _, b, _ in abc}) == 1:  # one n and k: the groups stack along m
        lhs = torch.cat([decoded(a, sfa, torch.bfloat16)[0] for (a, _, _), (sfa, _) in zip(abc, sfasfb)])
        rhs = torch.stack([decoded(b, sfb, torch.bfloat16)[0] for (_, b, _), (_, sfb) in zip(abc, sfasfb)])
        offs = torch.tensor([a.shape[0] for a, _, _ in abc], device=lhs.device).cumsum(0).to(torch.int32)
        ops = (lhs, rhs.transpose(1, 2), offs)
        try:
            torch._grouped_mm(*ops[:2], offs=ops[2])
            torch.cuda.synchronize()
            return ops, lambda o: torch._grouped_mm(o[0], o[1], offs=o[2]), "torch._grouped_mm bf16"
        except (RuntimeError, AttributeError):
            pass
    groups = [(decoded(a, sfa)[0], decoded(b, sfb)[0].t()) for (a, b, _), (sfa, sfb) in zip(abc, sfasfb)]
    return groups, lambda gs: [x @ y for x, y in gs], "torch.matmul fp16 per group"


def contest_loop(call, inputs: list, device: GpuDevice, rule: StopRule) -> list[float]:
    """Per-call ns of each sample: sync, the contest's clear, one call per input between two events."""
    durations, started = [], time.perf_counter_ns()
    while True:
        device.synchronize()
        device.contest_clear()
        device.start()
        for ops in inputs:
            call(ops)
        device.stop()
        device.wait_end()
        durations.append(device.elapsed_ns() / len(inputs))
        if rule.done(durations, time.perf_counter_ns() - started):
            return durations


def max_abs_diff(task: str, out, expected) -> float:
    if task == "group_gemm":
        sizes = [e.shape[0] for e in expected]
        parts = out.split(sizes) if isinstance(out, torch.Tensor) else out
        return max(float((p.float() - e[:, :, 0].float()).abs().max()) for p, e in zip(parts, expected))
    return float((out.float() - expected.permute(2, 0, 1).float()).abs().max())


def one_shape(task: str, case, device: GpuDevice) -> BaselineShape:
    rules, module = task_rules(task), get_task(task)
    seeds = rules.input_seeds(case.args["seed"])
    first = module.generate_input(**{**case.args, "seed": seeds[0]})
    prepared = [prepare(task, first)] + [prepare(task, module.generate_input(**{**case.args, "seed": s}))
                                         for s in seeds[1:]]
    call, name = prepared[0][1], prepared[0][2]
    diff = max_abs_diff(task, call(prepared[0][0]), module.ref_kernel(first))
    inputs = [p[0] for p in prepared]
    s = calculate(contest_loop(call, inputs, device, rules.eval.benchmark))
    return BaselineShape(task, case.index, case.label, name, s.mean, s.err, s.runs, diff)


def baseline(task: str, device: GpuDevice) -> list[BaselineShape]:
    out = []
    for case in cases(task, "benchmarks"):
        r = one_shape(task, case, device)
        torch.cuda.empty_cache()
        print(f"{task} {r.index} {r.shape}: {r.mean_ns / 1e3:,.2f} µs ({r.library_call}; max |diff| "
              f"{r.max_abs_diff:.3g})", flush=True)
        out.append(r)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", choices=TASKS)
    parser.add_argument("--json", type=Path, help="also write the shapes and the device here")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    rows = []
    for task in args.task or TASKS:
        rows += baseline(task, GpuDevice(task_rules(task).eval.clear_bytes))
    print("\n| task | shape | library call | µs | ± err | runs |\n| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r.task} | {r.index} | {r.library_call} | {r.mean_ns / 1e3:.2f} | {r.err_ns / 1e3:.2f} | {r.runs} |")
    for task in dict.fromkeys(r.task for r in rows):
        print(f"{task} geomean: {geomean([r.mean_ns for r in rows if r.task == task]) / 1e3:.2f} µs")
    if args.json:
        args.json.write_text(json.dumps({"device": describe(), "timing": "contest", "shapes": [asdict(r) for r in rows]},
                                        indent=1, default=str))


if __name__ == "__main__":
    main()
