"""Shared test helpers: the repo root on sys.path, an isolated results directory, and a machine kept busy."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BUSY_PROCESSES = 2  # as many as this machine's cores: every process the test starts waits for a CPU at times


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    path = tmp_path / "results"
    monkeypatch.setenv("NVFP4_ARENA_RESULTS", str(path))
    return path


@pytest.fixture
def busy_machine():
    """BUSY_PROCESSES processes that keep a CPU busy each for as long as the test runs: a test that uses this claims
    that what it asserts holds on a loaded machine."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY_PROCESSES)]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
