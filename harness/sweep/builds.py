"""Builds before timing: every file's extensions compiled on all CPU cores at once, so that no lane times a
version while another compiles, and no lane idles through a serial `load_inline`.

A build is one confined test run (`run.py --mode test --case 0 --no-record`): the worker imports the file and
calls it once, so whatever it compiles on import or on its first call (CUDA C++ through load_inline, Triton
kernels for that shape) lands in the file's own build cache (harness.evaluator.sandbox), where its timed runs
look. A file's code runs only inside the sandbox, as in any run. A build that fails is reported and the sweep
goes on: the timed run gives that version its verdict. Usage on a GPU machine:

    python -m harness.sweep.builds gemv:v7 group_gemm:v25 gemm:path/to/draft.py
"""
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..device import has_gpu
from ..paths import ROOT
from ..protocol import brief
from .lanes import parse_summaries

JOBS_PER_BUILD = 2  # compiler processes one build runs: load_inline compiles two sources, its C++ binding and its .cu
BUILD_TIMEOUT_S = 900.0


@dataclass
class Build:
    task: str
    version: str  # a lineage version or a file's path, as run.py's --submission takes it
    ok: bool
    seconds: float
    message: str = ""


def command(task: str, version: str, python: str = sys.executable) -> list[str]:
    return [python, str(ROOT / "run.py"), "--task", task, "--submission", version, "--mode", "test", "--case", "0",
            "--no-record", "--json"]


def build_one(task: str, version: str) -> Build:
    started = time.monotonic()
    try:
        proc = subprocess.run(command(task, version), capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "MAX_JOBS": str(JOBS_PER_BUILD)},
                              timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Build(task, version, False, time.monotonic() - started, f"no answer in {BUILD_TIMEOUT_S:g} s")
    return Build(task, version, proc.returncode == 0, time.monotonic() - started,
                 why_not(proc.stdout, proc.stderr) if proc.returncode else "")


def why_not(stdout: str, stderr: str) -> str:
    """The first failing case's message from run.py's JSON, or its last line of output."""
    for summary in parse_summaries(stdout) or []:
        for record in summary["records"]:
            if record["status"] != "pass":
                return f"{record['status']}: {brief(record['message'])}"
    return (stderr.strip().splitlines() or ["no output"])[-1]


def build_all(pairs, workers: int | None = None, on_build=None) -> list[Build]:
    """Build each distinct (task, version) once, `workers` at a time (default: the cores shared out at
    JOBS_PER_BUILD compiler processes each); on_build(Build) as each ends. Builds in the order given."""
    pairs = list(dict.fromkeys(pairs))
    workers = workers or max(1, (os.cpu_count() or 1) // JOBS_PER_BUILD)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(build_one, task, version) for task, version in pairs]
        built = []
        for future in futures:
            built.append(future.result())
            if on_build:
                on_build(built[-1])
    return built


def before_timing(pairs, on_build=None) -> list[Build]:
    """On a GPU machine, build_all(pairs) ahead of the timed runs; elsewhere nothing (a CPU compiles no CUDA, and
    its cores run the timed work)."""
    return build_all(pairs, on_build=on_build) if has_gpu() else []


def say(build: Build) -> str:
    """One line per build, as the sweep and the re-measuring commands print it."""
    why = f": {build.message}" if build.message else ""
    return f"{'built' if build.ok else 'build failed:'} {build.task} {build.version} ({build.seconds:.1f} s){why}"


def main(specs: list[str]) -> int:
    pairs = [tuple(spec.split(":", 1)) for spec in specs]
    if not pairs or any(len(p) != 2 for p in pairs):
        print("usage: python -m harness.sweep.builds TASK:VERSION ...", file=sys.stderr)
        return 2
    built = build_all(pairs, on_build=lambda b: print(say(b), flush=True))
    return 0 if all(b.ok for b in built) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
