"""run.py end to end, as a user runs it: verdicts, survival, and intact result files."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
SUBS = Path(__file__).resolve().parent / "submissions"
BOX = re.compile("[\u2500-\u259f]")  # box-drawing characters and block elements


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
def test_v0_test_then_benchmark_records_everything(results_dir):
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
    assert "USDT:" not in proc.stdout + proc.stderr  # torch.profiler's own log lines
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


SETUPTOOLS_PTH = ("import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'; "
                  "enabled and __import__('_distutils_hack').add_shim(); \n")


def test_a_run_names_its_sandbox_once_unwrapped_and_only_unusual_startup_hooks(tmp_path):
    """setuptools' own hook in every venv is not named; another hook is, with what a hook is; the sandbox line is one
    line, printed for the first mode and again only for a mode whose worker was confined otherwise."""
    from rich.console import Console

    import run as run_py
    from harness.evaluator.session import RunSummary
    from harness.submission import Submission
    (tmp_path / "venv").mkdir()
    standard = tmp_path / "venv" / "distutils-precedence.pth"
    standard.write_text(SETUPTOOLS_PTH)
    changed = tmp_path / "distutils-precedence.pth"  # its name, other code
    changed.write_text(SETUPTOOLS_PTH.replace("add_shim()", "add_shim(); __import__('os').system('true')"))
    custom = tmp_path / "sitecustomize.py"
    custom.write_text("print('hello')\n")
    sandbox = "landlock (ABI 7; writes only to " + ", ".join(f"/tmp/folder-{i}" for i in range(20)) + ")"

    def summary(mode, hooks, confinement=sandbox):
        return RunSummary(Submission(Path("x.py"), "gemv", "x", "", ""), mode, "smoke", sandbox=confinement,
                          hooks=[str(h) for h in hooks])
    console = Console(record=True, width=80)
    test = summary("test", [standard])
    run_py.show_protection(test, console)
    run_py.show_protection(summary("benchmark", [standard]), console, test)
    said = console.export_text()
    assert said == f"sandbox: {sandbox}\n"  # once, on one line: no hook named
    run_py.show_protection(summary("test", [standard, changed, custom]), console)
    run_py.show_protection(summary("benchmark", [], "none: --unconfined"), console, test)
    said = console.export_text()
    assert "code that runs at the start of every Python process here" in said and str(custom) in said
    assert str(changed) in said and str(standard) not in said
    assert "sandbox: none: --unconfined: records unprotected" in said


def test_a_file_that_does_not_parse_starts_no_worker_and_stores_nothing(results_dir, tmp_path, monkeypatch):
    from click.testing import CliRunner

    import run as run_py
    from harness.precheck import syntax_error
    from harness.sweep import lanes
    started = []
    monkeypatch.setattr(run_py, "start_spares", lambda *args: started.append(args))
    bad = tmp_path / "my_kernel.py"
    bad.write_text("#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(data:\n    return data\n")
    out = CliRunner().invoke(run_py.cli, [str(bad)])
    said = " ".join(out.stderr.split())
    assert out.exit_code == 1 and "my_kernel.py:2: does not parse ('(' was never closed)" in said, out.output
    assert "nothing was run, no record stored" in said and started == [] and not results_dir.exists()
    bad.write_text("return 1\n")  # the compiler's error, not the parser's
    assert "'return' outside function" in syntax_error(bad).why
    job = lanes.SweepJob("gemv", str(bad), attempts=1)  # in a sweep (run.py --json): the file's verdict, not a lost job
    judged = lanes.judge(job, "cpu0", 1, json.dumps({"error": f"{bad.name}:1: does not parse"}), "", 1.0)
    assert (judged.status, judged.lost) == ("fail", False) and "does not parse" in judged.message


def test_no_tui_draws_no_box(results_dir, monkeypatch):
    from click.testing import CliRunner
    from fixtures_views import run as stored_run, store

    from harness.views.tables import PLAIN_ENV
    from run import cli as main
    for name in (PLAIN_ENV, "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)  # restored after the test: --no-tui sets them for the process
    store(results_dir, stored_run("gemv", "v0", "a", [400] * 3) + stored_run("gemv", "v1", "b", [100] * 3))
    framed = CliRunner().invoke(main, ["list", "--task", "gemv", "--gpu", "H200"])
    assert framed.exit_code == 0 and BOX.search(framed.output), framed.output
    plain = CliRunner().invoke(main, ["--no-tui", "diff", "--task", "gemv", "--gpu", "H200", "v0", "v1"])
    assert plain.exit_code == 0 and not BOX.search(plain.output), plain.output
    assert "|---" in plain.output and "| v1 ×v0 " in plain.output  # a Markdown table


@pytest.mark.slow
def test_a_run_in_flight_says_that_its_standing_evaluator_stopped(results_dir):
    import signal
    import uuid
    env = {**os.environ, "NVFP4_ARENA_SERVER": f"stop-{uuid.uuid4().hex}"}
    results_dir.mkdir(parents=True)
    log = results_dir / "serve.log"
    with open(log, "w") as out:
        server = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "serve"], cwd=ROOT, env=env, stdout=out,
                                  stderr=subprocess.STDOUT)
        try:
            wait_for(log, "serving", server)
            hung = subprocess.Popen([sys.executable, str(ROOT / "run.py"), str(SUBS / "hangs.py"), "--task", "gemv",
                                     "--mode", "test", "--case", "0", "--timeout", "120", "--no-record"], cwd=ROOT,
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wait_for(log, "run ", server)
            time.sleep(3)  # its worker is up and calling the file
            server.send_signal(signal.SIGINT)
            _, said = hung.communicate(timeout=60)
        finally:
            server.kill()
            server.wait()
    assert hung.returncode == 143, said
    said = " ".join(said.split())
    assert "the standing evaluator (run.py serve) stopped during this run, and the run with it" in said
    assert "the runs in flight with it" in log.read_text()


def wait_for(log: Path, words: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while words not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
