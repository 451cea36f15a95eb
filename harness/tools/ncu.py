"""Profile mode under Nsight Compute: one call of the kernel inside an NVTX range, ncu limited to it.

`profile_case` runs ncu over this module's entry point, which generates the case's input, imports the file and
makes one warm call (compiling outside the range), then one call inside the NVTX range 'custom_kernel'. A tool,
not an evaluation: it decides nothing, so the file runs in this process. `profiling(options)` is `run.py --ncu`:
the benchmark cases of a run's options, each report also saved under results/profiles/.
"""
import glob
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reference.cases import Case, cases, timed_kind

from .. import device, results
from ..paths import ROOT
from ..submission import Submission

if TYPE_CHECKING:  # the process ncu watches loads none of the evaluator
    from ..evaluator.runner import RunOptions

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


class ProfileError(Exception):
    """Profiling cannot start as asked; the message is for the user."""


@dataclass(frozen=True)
class Profile:
    """One case's ncu report, as saved."""

    case: Case
    path: Path
    text: str
    code: int  # ncu's exit code (124: it ran past the time limit)


@dataclass(frozen=True)
class Profiling:
    """Profile mode under ncu for one run: the cases to profile and where their reports go."""

    ncu: str
    submission: Submission
    kind: str  # benchmarks (contest shapes) or smoke
    cases: list[Case]
    out_dir: Path
    timeout_s: float

    def run(self, case: Case) -> Profile:
        """ncu over one case; its report is written to out_dir as well."""
        sub = self.submission
        code, text = profile_case(self.ncu, sub.task, sub.path, self.kind, case.index, self.timeout_s)
        path = self.out_dir / f"{sub.task}_{sub.version}_{self.kind}{case.index}.ncu.txt"
        path.write_text(text)
        return Profile(case, path, text, code)


def profiling(options: "RunOptions") -> Profiling:
    """The options' benchmark cases (only those of `only`, when given) under ncu, reports to results/profiles/.
    ProfileError: a mode other than profile, no ncu, or no GPU."""
    if options.mode not in (None, "profile"):
        raise ProfileError("--ncu goes with --mode profile.")
    ncu = find_ncu()
    if ncu is None:
        raise ProfileError("--ncu needs Nsight Compute (ncu), which is not installed here; plain --mode profile uses "
                           "torch.profiler.")
    if not device.has_gpu():
        raise ProfileError("--ncu needs a GPU.")
    kind = timed_kind(options.shapes)
    out_dir = results.results_dir() / "profiles"
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = [c for c in cases(options.submission.task, kind) if not options.only or c.index in options.only]
    return Profiling(ncu, options.submission, kind, chosen, out_dir, options.timeout_s or 600)


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
