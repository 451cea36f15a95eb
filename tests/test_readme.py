"""The README's examples run as written, in the order a participant meets them, on this machine: every
`python run.py ...` line of its bash blocks, from a folder holding `my_kernel.py` (gemv's root with its
`#!POPCORN` header), edited once after the first run so that the second is a new try; `my_kernel@1a2b` stands for
that first try. Records go to a copy of the committed ones. A command that needs a GPU this machine lacks must
stop with a clear line (no traceback); `run.py serve`, which runs until stopped, must say that it serves and leave on
Ctrl-C; every other command exits 0."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from harness.submission import code_sha256

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "my_kernel@1a2b"
# the lines that time or read GPU-only files, or measure the GPU itself (`submit --best` is not one: on a CPU it
# picks among the participant's own tries, which run there)
NEEDS_A_GPU = {
    "python run.py calibrate",
    "python run.py diff --task gemv --measure v11 v12",
    "python run.py submit --task gemv --submission v12",
}
STANDING = "python run.py serve"  # runs until stopped: it must come up, and leave on Ctrl-C


def examples() -> list[str]:
    """The README's `python run.py` lines, comments dropped, in order."""
    text = (ROOT / "README.md").read_text()
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", line)[0].strip()
            if command.startswith("python run.py"):
                lines.append(command)
    return lines


def test_the_readme_shows_examples_of_each_command():
    shown = " ".join(examples())
    for command in ("my_kernel.py", "list", "diff", "--measure", "submit", "leaderboard", "sweep", PLACEHOLDER):
        assert command in shown


@pytest.mark.slow
def test_every_readme_example_runs_as_written(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results, ignore=shutil.ignore_patterns("local"))
    kernel = tmp_path / "my_kernel.py"
    kernel.write_text("#!POPCORN leaderboard nvfp4_gemv\n" + (ROOT / "submissions" / "gemv" / "v0.py").read_text())
    first = code_sha256(kernel.read_text())[:4]
    env = {**os.environ, "NVFP4_ARENA_RESULTS": str(results)}
    for n, command in enumerate(examples()):
        argv = command.replace(PLACEHOLDER, f"my_kernel@{first}").split()
        if command == STANDING:
            assert_it_serves(argv, tmp_path, {**env, "NVFP4_ARENA_SERVER": f"readme-{os.getpid()}"})
            continue
        proc = subprocess.run([sys.executable, str(ROOT / "run.py"), *argv[2:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        said = proc.stdout + proc.stderr
        assert "Traceback" not in said, f"{command}\n{said[-3000:]}"
        if command in NEEDS_A_GPU and not torch.cuda.is_available():
            assert proc.returncode != 0 and proc.stderr.strip(), f"{command}\n{said[-3000:]}"
        else:
            assert proc.returncode == 0, f"{command}\n{said[-3000:]}"
        if n == 0:  # the participant edits the file: the next run is a new try
            kernel.write_text(kernel.read_text() + "\n# edited\n")


def assert_it_serves(argv: list[str], folder: Path, env: dict) -> None:
    log = folder / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), *argv[2:]], cwd=folder, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while "serving" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(60)
    said = log.read_text()
    assert "serving" in said and "Traceback" not in said and code == 130, said
