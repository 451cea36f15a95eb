"""Profile mode under Nsight Compute: one call of the kernel inside an NVTX range, ncu limited to it.

`profile_case` runs ncu over this module's entry point, which generates the case's input, imports the file and
makes one warm call (compiling outside the range), then one call inside the NVTX range 'custom_kernel'. A tool,
not an evaluation: it decides nothing, so the file runs in this process.
"""
import glob
import shutil
import subprocess
import sys
from pathlib import Path

import click

from ..paths import ROOT

RANGE = "custom_kernel"


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    candidates = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu") + glob.glob("/usr/local/cuda*/bin/ncu"))
    return candidates[-1] if candidates else None


def profile_case(ncu: str, task: str, submission: Path, kind: str, index: int, timeout_s: float) -> tuple[int, str]:
    """Run ncu over one case; returns (exit code, ncu's report text)."""
    cmd = [ncu, "--nvtx", "--nvtx-include", f"{RANGE}/", "--clock-control", "none", "--section", "SpeedOfLight",
           "--section", "LaunchStats", "--section", "Occupancy",
           sys.executable, "-m", "harness.tools.ncu", "--task", task, "--submission", str(submission),
           "--kind", kind, "--index", str(index)]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return 124, f"ncu did not finish within {timeout_s:g} s"
    return proc.returncode, proc.stdout + (proc.stderr if proc.returncode else "")


@click.command()
@click.option("--task", required=True)
@click.option("--submission", required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--kind", default="benchmarks")
@click.option("--index", type=int, default=0)
def main(task, submission, kind, index):
    """The process ncu watches: one warm call, then one call inside the NVTX range."""
    sys.path.insert(0, str(ROOT))
    import torch

    from harness.submission import import_submission
    from reference import get_task
    from reference.cases import cases
    case = cases(task, kind)[index]
    data = get_task(task).generate_input(**case.args)
    kernel = import_submission(submission.resolve()).custom_kernel
    kernel(data)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(RANGE)
    kernel(data)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main()
