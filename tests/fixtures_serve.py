"""Shared by the tests that run files through a standing evaluator (test_server.py, test_walls.py): the server under
a name of its own, and where a red-team file leaves its log (its build cache, which outlives its run)."""
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from harness import forward

ROOT = Path(__file__).resolve().parent.parent
CAP_SYS_NICE, CAP_SYS_RESOURCE = 23, 24


def capable(bit: int) -> bool:
    """Whether this process holds a capability (by its number) in its effective set."""
    with open("/proc/self/status") as f:
        return bool(int(next(line.split()[1] for line in f if line.startswith("CapEff:")), 16) >> bit & 1)


def redteam_log(path: Path, name: str) -> Path:
    """The log a red-team file writes in its build cache (XDG_CACHE_HOME), emptied for a new run."""
    from harness.evaluator.sandbox import build_environment
    log = Path(build_environment([path])["XDG_CACHE_HOME"]) / f"redteam_{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)
    return log


def copy_checkout(root: Path) -> Path:
    """A copy of this checkout's code and lineages at `root`."""
    root.mkdir()
    for name in ("run.py", "task.py", "leaderboard_shapes.yaml"):
        shutil.copy(ROOT / name, root / name)
    for name in ("harness", "reference", "submissions"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


class Standing:
    """`run.py serve` under a name of its own, and command lines that reach it."""

    def __init__(self, root: Path, env: dict, umask: int | None = None):
        self.root, self.env = root, env
        self.log = open(env["NVFP4_ARENA_RESULTS"] + ".server.log", "w+")
        self.proc = subprocess.Popen([sys.executable, str(root / "run.py"), "serve"], cwd=root, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=None if umask is None else (lambda: os.umask(umask)))
        self.wait_for("serving", 120)

    def text(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def wait_for(self, words: str, timeout: float, count: int = 1) -> None:
        deadline = time.monotonic() + timeout
        while self.text().count(words) < count:
            assert self.proc.poll() is None and time.monotonic() < deadline, self.text()
            time.sleep(0.1)

    def run(self, *args, timeout=300, env=None, cwd=None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(self.root / "run.py"), *args], capture_output=True, text=True,
                              timeout=timeout, cwd=cwd or self.root, env=env or self.env)

    def descendants(self) -> list[int]:
        from harness.evaluator.supervisor import tree
        return sorted(tree(self.proc.pid))

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def standing(results_dir):
    env = {**os.environ, forward.ADDRESS_ENV: f"test-{uuid.uuid4().hex}"}
    results_dir.mkdir(parents=True, exist_ok=True)
    s = Standing(ROOT, env)
    yield s
    s.stop()
