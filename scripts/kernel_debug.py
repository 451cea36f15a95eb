"""Where a submission's output goes wrong on one case: the error pattern over blocks of rows and columns.

Usage: python scripts/kernel_debug.py --task dual_gemm --submission v11 --case tests:1 [--block 64]
Runs the file once on the case (on the GPU when there is one), then prints the first error the call raised,
or, per (row block, column block) of each output matrix (group_gemm returns one per group; of a batched
output, the first), the fraction of elements outside the contest's tolerance: an indexing or
synchronisation bug shows as a pattern (one warpgroup's rows, one tile). At most SHOWN_ROWS x SHOWN_COLS
blocks are printed per matrix, and the line under them says what was left out.
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

SHOWN_ROWS, SHOWN_COLS = 32, 24


def error_pattern(got: torch.Tensor, expected: torch.Tensor, block: int) -> list[list[float]]:
    """Fraction of elements outside the contest's tolerance (NaN counts as wrong) per block of the first matrix."""
    bad = ~torch.isclose(got.float().cpu(), expected.float().cpu(), **tolerance())
    grid = bad[..., 0] if bad.dim() == 3 else bad
    rows, cols = grid.shape
    return [[grid[r:r + block, c:c + block].float().mean().item() for c in range(0, cols, block)]
            for r in range(0, rows, block)]


def show(label: str, pattern: list[list[float]], block: int, nans: int) -> None:
    wrong = sum(sum(row) for row in pattern) / (len(pattern) * len(pattern[0]))
    click.echo(f"{label}: about {wrong:.1%} of elements wrong, {nans} NaN")
    for r, row in enumerate(pattern[:SHOWN_ROWS]):
        click.echo(f"rows {r * block:6d}: " + " ".join(f"{x:.2f}" for x in row[:SHOWN_COLS]))
    cut_rows, cut_cols = max(0, len(pattern) - SHOWN_ROWS), max(0, len(pattern[0]) - SHOWN_COLS)
    if cut_rows or cut_cols:
        click.echo(f"  ({cut_rows} more row blocks and {cut_cols} more column blocks not shown; "
                   f"{sum(x > 0 for row in pattern for x in row)} of {len(pattern) * len(pattern[0])} blocks have errors)")

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
    outputs = list(got) if isinstance(got, (list, tuple)) else [got]
    references = list(expected) if isinstance(expected, (list, tuple)) else [expected]
    if len(outputs) != len(references):
        click.echo(f"the call returned {len(outputs)} matrices, the reference {len(references)}")
        sys.exit(1)
    click.echo(f"{spec.args}:")
    for g, (out, ref) in enumerate(zip(outputs, references)):
        label = f"group {g}" if len(outputs) > 1 else "output"
        if tuple(out.shape) != tuple(ref.shape):
            click.echo(f"{label}: shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
            continue
        show(label, error_pattern(out, ref, block), block, int(out.float().isnan().sum()))


if __name__ == "__main__":
    main()
