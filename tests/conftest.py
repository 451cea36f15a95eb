"""Shared test helpers: the repo root on sys.path, and an isolated results directory."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    path = tmp_path / "results"
    monkeypatch.setenv("NVFP4_ARENA_RESULTS", str(path))
    return path
