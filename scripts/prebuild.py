"""Build (and cache) the CUDA extensions of lineage versions in parallel, one process each, before timing, into
each file's own build cache (harness.evaluator.sandbox.build_environment), where its runs will look.

    python scripts/prebuild.py gemv:v7 group_gemm:v25 gemm:scratch/draft.py ...

A version may also be a file's path, as run.py's --submission takes it.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.evaluator.sandbox import build_environment  # noqa: E402
from harness.submission import resolve  # noqa: E402
from reference.cases import leaderboards  # noqa: E402

ONE = """
import sys; sys.path.insert(0, {root!r})
import torch
from harness.submission import import_submission, resolve
from reference import get_task
from reference.cases import cases, leaderboards
task, version = {task!r}, {version!r}
case = cases(task, "tests")[0]
import_submission(resolve(version, task, leaderboards()).path).custom_kernel(
    get_task(task).generate_input(**case.args))
torch.cuda.synchronize()
print("built", task, version, flush=True)
"""


def start(task: str, version: str) -> subprocess.Popen:
    """A process that builds one version, into that file's own build cache."""
    path = resolve(version, task, leaderboards()).path
    return subprocess.Popen([sys.executable, "-c", ONE.format(root=str(ROOT), task=task, version=version)],
                            env={**os.environ, **build_environment([path])})


if __name__ == "__main__":
    procs = [start(*spec.split(":")) for spec in sys.argv[1:]]
    sys.exit(max([p.wait() for p in procs] + [0]))
