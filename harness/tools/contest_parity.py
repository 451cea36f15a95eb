"""Checks that our generate_input produces the contest's inputs bit for bit.

Needs the contest's problem folders (gpu-mode/reference-kernels, problems/nvidia/nvfp4_*, each
with reference.py, task.py, utils.py) and a CUDA GPU: the contest generates on CUDA, and only
there is the RNG call sequence comparable. For every test and benchmark case (and the first
chained benchmark seed) it compares every tensor's dtype, shape, strides, device and bits.

    python -m harness.tools.contest_parity --contest-root path/to/problems/nvidia
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import click

from ..paths import ROOT

FOLDERS = {"gemv": "nvfp4_gemv", "gemm": "nvfp4_gemm", "dual_gemm": "nvfp4_dual_gemm", "group_gemm": "nvfp4_group_gemm"}


def describe_difference(ours, theirs) -> str:
    import torch
    from torch.utils._pytree import tree_flatten
    a, spec_a = tree_flatten(ours)
    b, spec_b = tree_flatten(theirs)
    if spec_a != spec_b:
        return f"structure differs: {spec_a} vs {spec_b}"
    for i, (x, y) in enumerate(zip(a, b)):
        if not isinstance(x, torch.Tensor):
            if x != y:
                return f"leaf {i}: {x!r} != {y!r}"
            continue
        for what in ("dtype", "shape", "device"):
            if getattr(x, what) != getattr(y, what):
                return f"leaf {i}: {what} {getattr(x, what)} != {getattr(y, what)}"
        if x.stride() != y.stride():
            return f"leaf {i}: stride {x.stride()} != {y.stride()}"
        bits_x = x.contiguous().flatten().view(torch.uint8)
        bits_y = y.contiguous().flatten().view(torch.uint8)
        if not torch.equal(bits_x, bits_y):
            return f"leaf {i} ({x.dtype}, {tuple(x.shape)}): {int((bits_x != bits_y).sum())} bytes differ"
    return ""


def check_task(task: str, contest_root: Path) -> int:
    """Runs in its own process: the contest's modules are named task/utils/reference too."""
    import torch
    folder = contest_root / FOLDERS[task]
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("contest_reference", folder / "reference.py")
    contest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(contest)
    sys.path.insert(0, str(ROOT))
    from harness.evaluator.session import input_seeds
    from reference import get_task
    from reference.cases import cases
    ours = get_task(task)
    failures = 0
    all_cases = cases(task, "tests") + cases(task, "benchmarks")
    runs = [(c, c.args["seed"]) for c in all_cases] + [(c, input_seeds(task, c.args["seed"])[0]) for c in cases(task, "benchmarks")]
    for case, seed in runs:
        args = {**case.args, "seed": seed}
        diff = describe_difference(ours.generate_input(**args), contest.generate_input(**args))
        print(f"{task} {case.kind}[{case.index}] seed={seed} {case.label}: {'IDENTICAL' if not diff else 'DIFFERENT: ' + diff}",
              flush=True)
        failures += bool(diff)
        torch.cuda.empty_cache()
    return failures


@click.command()
@click.option("--contest-root", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--task", "tasks", multiple=True, type=click.Choice(list(FOLDERS)))
@click.option("--one", hidden=True)
def main(contest_root, tasks, one):
    if one:
        sys.exit(1 if check_task(one, contest_root) else 0)
    bad = 0
    for task in tasks or FOLDERS:
        bad += subprocess.run([sys.executable, "-m", "harness.tools.contest_parity", "--contest-root", str(contest_root),
                               "--one", task], cwd=ROOT).returncode != 0
    print("all tasks bit-identical to the contest" if not bad else f"{bad} task(s) differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
