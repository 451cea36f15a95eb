"""Where a submission's output goes wrong on one case: the error pattern over blocks of rows and columns.

Usage: python scripts/kernel_debug.py --task dual_gemm --submission v11 --case tests:1 [--block 64]
Runs the file once on the case (on the GPU when there is one), then prints the first error the call raised,
or, per (row block, column block) of the output's first matrix, the fraction of elements outside the
contest's tolerance: an indexing or synchronisation bug shows as a pattern (one warpgroup's rows, one tile).
"""
import sys
from pathlib import Path

import click
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.submission import import_submission, resolve  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases, leaderboards, tolerance  # noqa: E402


def error_pattern(got: torch.Tensor, expected: torch.Tensor, block: int) -> list[list[float]]:
    """Fraction of elements outside the contest's tolerance (NaN counts as wrong) per block of the first matrix."""
    bad = ~torch.isclose(got.float().cpu(), expected.float().cpu(), **tolerance())
    grid = bad[..., 0] if bad.dim() == 3 else bad
    rows, cols = grid.shape
    return [[grid[r:r + block, c:c + block].float().mean().item() for c in range(0, cols, block)]
            for r in range(0, rows, block)]


@click.command()
@click.option("--task", required=True)
@click.option("--submission", required=True, help="vN of the task's lineage, or a file")
@click.option("--case", default="tests:0", show_default=True, help="SET:INDEX, e.g. tests:1 or benchmarks:0")
@click.option("--block", default=64, show_default=True, help="rows and columns per block of the pattern")
def main(task: str, submission: str, case: str, block: int) -> None:
    which, index = case.split(":")
    spec = cases(task, which)[int(index)]
    problem = get_task(task)
    data = problem.generate_input(**spec.args, device="cuda" if torch.cuda.is_available() else "cpu")
    expected = problem.ref_kernel(data)
    module = import_submission(resolve(submission, task, leaderboards()).path)
    try:
        got = module.custom_kernel(data)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception as error:  # showing it is this script's job
        click.echo(f"{type(error).__name__}: {error}")
        sys.exit(1)
    pattern = error_pattern(got, expected, block)
    wrong = sum(sum(row) for row in pattern) / (len(pattern) * len(pattern[0]))
    click.echo(f"{spec.args}: about {wrong:.1%} of elements wrong, {int(got.float().isnan().sum())} NaN")
    for r, row in enumerate(pattern[:32]):
        click.echo(f"rows {r * block:6d}: " + " ".join(f"{x:.2f}" for x in row[:24]))


if __name__ == "__main__":
    main()
