"""A participant's loop on a fresh clone, as the README tells it: write a file, run it, edit it, run it again,
`list`, `diff` by name, `submit --best` (which picks the participant's own faster try), `merge` of a tarball of
another machine's results folder; plain `--no-tui` output; and the clone left as it was. Records go to a copy of
the committed ones, where the committed GPUs' runs outnumber this machine's."""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from harness.submission import code_sha256

ROOT = Path(__file__).resolve().parent.parent
BOX = re.compile("[\u2500-\u259f]")  # box-drawing characters and block elements
SLOW_WRAPPER = """
import time as _time

_kernel = custom_kernel


def custom_kernel(data):
    _time.sleep(0.003)
    return _kernel(data)
"""


def git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.slow
def test_a_participant_runs_edits_compares_submits_and_merges(tmp_path):
    before = git_status()
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results", results, ignore=shutil.ignore_patterns("local"))
    env = {**os.environ, "NVFP4_ARENA_RESULTS": str(results), "NVFP4_ARENA_SERVER": "off"}

    def run(*args):
        proc = subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        said = proc.stdout + proc.stderr
        assert proc.returncode == 0 and "Traceback" not in said, f"{args}\n{said[-3000:]}"
        return proc

    kernel = tmp_path / "my_kernel.py"
    fast = "#!POPCORN leaderboard nvfp4_gemv\n" + (ROOT / "submissions" / "gemv" / "v0.py").read_text()
    kernel.write_text(fast + SLOW_WRAPPER)  # the first try sleeps in every call
    first = code_sha256(kernel.read_text())
    run("my_kernel.py")
    kernel.write_text(fast)  # the edit: the second try does not
    second = code_sha256(kernel.read_text())
    rerun = run("my_kernel.py", "--no-tui")
    said = rerun.stdout + rerun.stderr
    assert f"against its previous try my_kernel@{first[:7]}" in " ".join(said.split())
    assert not BOX.search(said) and "\x1b[" not in said, said

    listed = " ".join(run("list", "--task", "gemv").stdout.split())  # this machine's runs, not the committed GPUs'
    assert f"my_kernel@{second[:7]}" in listed and f"my_kernel@{first[:7]}" in listed
    assert f"fastest by stored runs: my_kernel@{second[:7]} (1 run)" in listed
    compared = run("diff", "--task", "gemv", f"my_kernel@{first[:4]}", "my_kernel").stdout
    assert f"my_kernel@{second[:7]} ×my_kernel@{first[:7]}" in " ".join(compared.split())

    submitted = run("submit", "--task", "gemv", "--best", "--rounds", "3", "--json")
    assert "static pre-check of my_kernel.py:" in submitted.stderr  # its file, recorded whole, still holds its code
    answer = json.loads(submitted.stdout)
    assert answer["decision"]["winner"] == f"my_kernel@{second[:7]}", submitted.stderr
    assert answer["entry"]["version"] == "my_kernel"
    assert Path(answer["contest_file"]).read_text().endswith((ROOT / "submissions" / "gemv" / "v0.py").read_text())
    assert f"my_kernel@{second[:7]}" in run("leaderboard", "--task", "gemv").stdout

    other = tmp_path / "other_machine" / "results"  # another machine's checkout, archived as a whole
    shutil.copytree(ROOT / "results", other, ignore=shutil.ignore_patterns("local"))
    (other / "local").mkdir()
    shutil.copy(results / "gemv.jsonl", other / "local" / "gemv.jsonl")
    with tarfile.open(tmp_path / "results.tgz", "w:gz") as archive:
        archive.add(other, arcname="results")
    env["NVFP4_ARENA_RESULTS"] = str(tmp_path / "fresh" / "results")
    merged = " ".join(run("merge", "results.tgz").stdout.split())
    assert "merged from results.tgz:" in merged and "results/local/gemv.jsonl:" in merged
    assert "left alone:" in merged and "other .jsonl files" in merged
    assert f"my_kernel@{second[:7]}" in run("list", "--task", "gemv", "--smoke", "--gpu", "cpu").stdout

    assert git_status() == before
