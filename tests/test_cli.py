"""run.py end to end, as a user runs it: verdicts, survival, and intact result files."""
import pytest
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
SUBS = Path(__file__).resolve().parent / "submissions"


def run(*args, timeout=600):
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    return proc


def run_json(*args, **kw):
    proc = run(*args, "--json", **kw)
    return proc, json.loads(proc.stdout)


def records(results_dir: Path, task: str) -> pd.DataFrame:
    return pd.read_json(results_dir / f"{task}.jsonl", lines=True)


@pytest.mark.slow
def test_v0_test_then_benchmark_records_everything(results_dir, busy_machine):
    proc, out = run_json("--task", "gemm", "--submission", "v0")
    assert proc.returncode == 0, proc.stderr
    assert [s["mode"] for s in out] == ["test", "benchmark"] and all(s["passed"] for s in out)
    df = records(results_dir, "gemm")
    assert set(df["mode"]) == {"test", "benchmark"}
    assert set(df[df["mode"] == "test"]["values"]) == {"contest", "general"}
    bench = df[df["mode"] == "benchmark"]
    assert len(bench) == 2 and (bench["n_inputs"] == 50).all()
    stats = bench["stats"].iloc[0]
    assert stats["runs"] >= 3 and stats["mean"] > 0 and stats["best"] <= stats["median"] <= stats["worst"]
    row = df.iloc[0]
    assert len(row["sha256"]) == 64 and row["version"] == "v0" and row["gpu"]["name"] == "cpu"
    assert "commit" in row["git"]


@pytest.mark.slow
def test_wrong_output_fails_with_mismatch_report(results_dir):
    proc, out = run_json("--task", "gemm", "--submission", str(SUBS / "wrong.py"), "--case", "0")
    assert proc.returncode == 1
    assert [s["mode"] for s in out] == ["test"]  # benchmark skipped after a failed test
    rec = out[0]["records"][0]
    assert rec["status"] == "fail" and "mismatch" in rec["message"] and "at (0, 0, 0)" in rec["message"]
    assert "largest |out - ref| among them" in rec["message"]


@pytest.mark.slow
def test_hanging_submission_is_killed_at_its_timeout(results_dir):
    proc, out = run_json("--task", "gemv", "--submission", str(SUBS / "hangs.py"), "--mode", "test",
                         "--case", "0", "--timeout", "3")
    assert proc.returncode == 1
    recs = out[0]["records"]
    assert [r["status"] for r in recs] == ["timeout", "skipped"]  # one hang costs one timeout, not one per case
    assert "3 s" in recs[0]["message"] and "earlier case hung" in recs[1]["message"]
    assert len(records(results_dir, "gemv")) == 2


@pytest.mark.slow
def test_crashes_are_verdicts_and_later_shapes_still_run(results_dir):
    for name, verdict, words in [("raises.py", "error", "kernel exploded"), ("exits.py", "crash", "exit"),
                                 ("segfault.py", "crash", "SIGSEGV")]:
        proc, out = run_json("--task", "gemm", "--submission", str(SUBS / name), "--mode", "test", "--case", "0")
        assert proc.returncode == 1, name
        recs = out[0]["records"]
        assert recs[0]["status"] == verdict and {r["status"] for r in recs} <= {verdict, "skipped"}, (name, recs)
        assert words in recs[0]["message"], (name, recs[0]["message"])
    proc, out = run_json("--task", "gemm", "--submission", str(SUBS / "crash_second_shape.py"), "--mode", "test",
                         "--keep-going")
    statuses = [(r["index"], r["values"], r["status"]) for r in out[0]["records"]]
    assert statuses == [(0, "contest", "pass"), (1, "contest", "crash"), (0, "general", "pass"),
                        (1, "general", "crash")]
    df = records(results_dir, "gemm")  # every line intact and parseable
    assert len(df) == 6 + 4 and df["status"].notna().all()


@pytest.mark.slow
def test_popcorn_header_names_the_task(results_dir):
    proc = run("--submission", str(SUBS / "segfault.py"), "--mode", "test", "--case", "0", "--no-record")
    assert "SIGSEGV" in proc.stdout and proc.returncode == 1
    proc = run("--task", "gemv", "--submission", str(SUBS / "segfault.py"))
    assert proc.returncode == 2 and "nvfp4_gemm" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_clear_errors_not_tracebacks():
    for args, words in [(["--task", "gemm", "--submission", "v999"], "does not exist"),
                        (["--submission", "v0"], "--task"),
                        (["--submission", str(SUBS / "hangs.py")], "cannot tell which task"),
                        (["--task", "gemm", "--submission", "v0", "--case", "7"], "no smoke case")]:
        proc = run(*args)
        assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)


@pytest.mark.slow
def test_leaderboard_mode_uses_secret_seeds(results_dir):
    from harness.evaluator.session import build_jobs
    proc, out = run_json("--task", "gemv", "--submission", "v0", "--mode", "leaderboard", "--seed", "12345")
    assert proc.returncode == 0, proc.stderr
    recs = out[0]["records"]
    assert [r["mode"] for r in recs] == ["leaderboard", "leaderboard"]  # warm-ups are not recorded
    keyed = [j.seeds[0] for j in build_jobs("gemv", "leaderboard", "smoke", 12345) if j.record]
    assert [r["seed"] for r in recs] == keyed and not {7, 8} & set(keyed)
    assert keyed != [j.seeds[0] for j in build_jobs("gemv", "leaderboard", "smoke", 54321) if j.record]
    assert all(r["status"] == "pass" and r["stats"]["runs"] >= 3 for r in recs)


@pytest.mark.slow
def test_profile_mode_prints_hottest_ops(results_dir):
    proc = run("--task", "gemm", "--submission", "v0", "--mode", "profile", "--case", "0")
    assert proc.returncode == 0, proc.stderr
    assert "Self CPU" in proc.stdout and "aten::" in proc.stdout
    assert not (results_dir / "gemm.jsonl").exists()  # a profile is a report, not a timing record


@pytest.mark.slow
def test_popcorn_cli_conventions(tmp_path, results_dir):
    """--leaderboard nvfp4_gemv names the task, --no-tui prints plain text (with a command too, on either side of
    its name), and a #!POPCORN gpu line that names another GPU is reported."""
    source = (ROOT / "submissions" / "gemv" / "v0.py").read_text()
    path = tmp_path / "my_gemv.py"
    path.write_text("#!POPCORN leaderboard nvfp4_gemv\n#!POPCORN gpu B200\n" + source)
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), str(path), "--leaderboard", "nvfp4_gemv", "--no-tui",
                           "--mode", "test", "--case", "0", "--no-record"], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "FORCE_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "this file targets B200 (its #!POPCORN gpu line); running on" in proc.stderr
    assert "\x1b[" not in proc.stdout + proc.stderr
    committed = {k: v for k, v in os.environ.items() if k != "NVFP4_ARENA_RESULTS"}  # the repository's records
    for argv in (["list", "--leaderboard", "nvfp4_gemv"], ["--no-tui", "list", "--leaderboard", "nvfp4_gemv"],
                 ["list", "--leaderboard", "nvfp4_gemv", "--no-tui"]):
        listed = subprocess.run([sys.executable, str(ROOT / "run.py"), *argv], capture_output=True, text=True,
                                timeout=120, cwd=ROOT, env={**committed, "FORCE_COLOR": "1"})
        assert listed.returncode == 0 and "gemv lineage" in listed.stdout, listed.stderr
        assert ("--no-tui" in argv) == ("\x1b[" not in listed.stdout), argv


def test_the_command_line_imports_no_torch_before_a_run_has_started_its_workers():
    """run.py's own imports are torch-free: a run starts its workers first, and they import torch while the
    evaluator does (harness.evaluator.supervisor.start_spares)."""
    probe = "import sys, run; print(sorted(m for m in ('torch', 'numpy', 'pandas') if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
