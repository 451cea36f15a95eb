"""Fault injection: what a submission, a signal or a bad file can do to the runner. Each case asserts
the verdict, the exit code, that no worker process is left behind, and that earlier records stay."""
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from harness import results

ROOT = Path(__file__).resolve().parent.parent
FAULTS = Path(__file__).resolve().parent / "faults"
EARLIER = {"run_id": "earlier", "task": "gemm", "version": "v0", "mode": "benchmark", "status": "pass", "index": 0,
           "kind": "smoke", "stats": {"mean": 1.0}}


def processes_with(fault: str) -> list[int]:
    """PIDs of live workers of this checkout's tests/faults/<fault> (by its whole path: another checkout's tests may
    run the same file meanwhile)."""
    marker = str(FAULTS / fault)
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (entry / "stat").read_text().split(")")[-1].split()[0]
            except OSError:
                continue
            if marker in cmdline and "harness.worker" in cmdline and state != "Z":
                found.append(int(entry.name))
    return found


def run(*args, timeout=300, env=None):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, timeout=timeout,
                          cwd=ROOT, env={**os.environ, **(env or {})})


SLEEPING = b"sleeps.py: inside custom_kernel"  # what tests/faults/sleeps.py prints as its call starts
NUMPY_CORE = "_multiarray_umath"  # numpy's extension module: mapped while torch's import imports numpy


class SleepingRunner:
    """run.py on a submission whose call never returns, its stderr read as it comes. Once made, its worker is up and
    the runner is at `moment`: "starting" (it may still be starting up), "importing numpy" (numpy's extension is
    loaded and the rest of numpy's import runs: inside torch's, whose C extension clears what that import raises),
    or "calling" (the worker is inside the call)."""

    def __init__(self, moment: str):
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                                      str(FAULTS / "sleeps.py"), "--mode", "test", "--timeout", "600"],
                                     cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.lines = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stderr.readline, b"")),
                                       daemon=True)
        self.reader.start()
        wait_until(lambda: processes_with("sleeps.py"), 120, "the worker never started")
        if moment == "importing numpy":
            wait_until(lambda: NUMPY_CORE in self.maps(), 120, "the runner never imported numpy")
        if moment == "calling":
            wait_until(lambda: SLEEPING in self.err(), 120, "the worker never called the kernel")

    def maps(self) -> str:
        try:
            return Path(f"/proc/{self.proc.pid}/maps").read_text()
        except OSError:
            return ""

    def err(self) -> bytes:
        return b"".join(self.lines)

    def ended(self, timeout: float) -> int:
        code = self.proc.wait(timeout)
        self.reader.join(timeout)
        return code

    def kill(self) -> None:
        """SIGKILL, where it is still alive: its worker dies with it (the parent-death signal)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def sleeping_runner():
    """SleepingRunner(moment), killed at the end of the test if it is still alive (a failed test leaves none)."""
    made = []
    yield lambda moment: made.append(SleepingRunner(moment)) or made[-1]
    for runner in made:
        runner.kill()


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def with_earlier_record(results_dir: Path) -> Path:
    path = results_dir / "gemm.jsonl"
    results.append(path, EARLIER)
    return path


def assert_no_worker_left(fault: str):
    deadline = time.monotonic() + 10
    while processes_with(fault) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_with(fault) == []


@pytest.mark.slow
def test_garbage_on_every_file_descriptor_is_a_verdict_within_the_timeout(results_dir):
    """The garbled channel is the verdict, not the case's timeout (which would be a "timeout" verdict): the reader
    tells garbage from a message as it arrives."""
    path = with_earlier_record(results_dir)
    proc = run("--task", "gemm", "--submission", str(FAULTS / "garbage_everywhere.py"), "--mode", "test", "--case",
               "0", "--timeout", "20", "--json")
    assert proc.returncode == 1
    first = json.loads(proc.stdout)[0]["records"][0]  # the runner's stdout stays clean JSON
    assert first["status"] == "tampered" and "the channel carried" in first["message"]
    assert b"resource_tracker" not in proc.stderr and b"Traceback" not in proc.stderr
    assert_no_worker_left("garbage_everywhere.py")
    assert results.read(path)[0] == EARLIER


@pytest.mark.slow
def test_worker_killed_mid_sample(results_dir):
    path = with_earlier_record(results_dir)
    proc = run("--task", "gemm", "--submission", str(FAULTS / "killed_mid_sample.py"), "--mode", "benchmark",
               "--case", "0", "--json")
    assert proc.returncode == 1
    record = json.loads(proc.stdout)[0]["records"][0]  # killed in the (unrecorded) warm-up: this case says so
    assert record["status"] == "crash" and "SIGKILL" in record["message"] and "warm-up" in record["message"]
    assert_no_worker_left("killed_mid_sample.py")
    stored = results.read(path)
    assert stored[0] == EARLIER and stored[1]["status"] == "crash"


def dies_building_lock() -> Path:
    """Where tests/faults/dies_building.py takes its build lock: in its own build cache."""
    from harness.evaluator.sandbox import build_environment
    return Path(build_environment([FAULTS / "dies_building.py"])["TORCH_EXTENSIONS_DIR"]) / "dies_building" / "lock"


def dies_building() -> dict:
    """The record of tests/faults/dies_building.py on one case's contest values, killed by a 5 s timeout (the case's
    other values are then skipped)."""
    proc = run("--task", "gemm", "--submission", str(FAULTS / "dies_building.py"), "--mode", "test", "--case", "0",
               "--timeout", "5", "--json")
    return json.loads(proc.stdout)[0]["records"][0]


@pytest.mark.slow
def test_a_build_killed_by_the_timeout_leaves_no_lock_behind(results_dir):
    """A worker killed mid-build leaves torch's build lock in the file's build cache, where the file's next load_inline
    would wait for ever: the evaluator removes the lock its worker left, so the file's next run builds again and
    meets the same timeout, not the lock."""
    dies_building_lock().unlink(missing_ok=True)
    for _ in range(2):
        record = dies_building()
        assert record["status"] == "timeout", record["message"]
        assert not dies_building_lock().exists()
    assert_no_worker_left("dies_building.py")


@pytest.mark.slow
def test_a_build_lock_older_than_any_worker_lives_is_removed_and_a_fresh_one_kept(results_dir):
    """A lock that an evaluator killed outright left (nobody removed it) is gone before the next worker of the file
    starts, once it is older than any worker may go without answering; a fresh one, which a worker of the same file
    in another evaluator may hold while it builds, is left where it is."""
    from harness.evaluator.supervisor import BUILD_LOCK_STALE_S
    lock = dies_building_lock()
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    os.utime(lock, (time.time() - BUILD_LOCK_STALE_S - 60,) * 2)
    assert dies_building()["status"] == "timeout"
    lock.touch()
    record = dies_building()
    assert record["status"] == "error" and "the build lock is taken" in record["message"] and lock.exists()
    lock.unlink()


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["starting", "importing numpy", "calling"])
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signalled_runner_takes_its_worker_with_it(results_dir, busy_machine, sleeping_runner, signum, code, moment):
    """A signal ends the run at either moment, on a busy machine: while the runner still starts up (its imports,
    where one signal was once lost), or while the worker is inside the call."""
    path = with_earlier_record(results_dir)
    runner = sleeping_runner(moment)
    runner.proc.send_signal(signum)
    assert runner.ended(60) == code, runner.err()[-3000:]
    assert b"Traceback" not in runner.err() and signal.Signals(signum).name.encode() in runner.err()
    assert_no_worker_left("sleeps.py")
    assert results.read(path) == [EARLIER]


@pytest.mark.slow
def test_a_runner_killed_outright_takes_its_worker_with_it(results_dir, sleeping_runner):
    runner = sleeping_runner("calling")
    runner.kill()  # no handler runs: the parent-death signal does the work
    assert_no_worker_left("sleeps.py")


CLEARS_ERRORS = """import os, signal, time
try:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(1)
except BaseException:  # as torch's C extension does around its import of numpy: any exception cleared
    pass
"""


def test_a_signal_inside_an_import_that_clears_errors_ends_the_process_after_it(tmp_path):
    (tmp_path / "clears_errors.py").write_text(CLEARS_ERRORS)
    script = ("from harness.evaluator.leaving import exit_on_signals\n"
              "exit_on_signals(lambda name: print('announced', name, flush=True))\n"
              "import clears_errors\n"
              "print('imported', flush=True)\n"
              "import time\n"
              "time.sleep(30)\n"
              "print('went on', flush=True)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"})
    assert proc.stdout.decode().splitlines() == ["announced SIGTERM", "imported"]
    assert proc.returncode == 143, proc.stderr[-2000:]


@pytest.mark.slow
def test_unwritable_results_are_reported_and_the_run_goes_on(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the results folder should be\n")
    proc = run("--task", "gemv", "--submission", "v0", "--mode", "test", "--case", "0",
               env={"NVFP4_ARENA_RESULTS": str(blocker / "results")})
    assert proc.returncode == 1
    assert b"records not stored" in proc.stderr and b"Traceback" not in proc.stderr
    assert b"pass" in proc.stdout  # the table of the run is still shown
    assert blocker.read_text() == "a file where the results folder should be\n"


def _append_many(path: str, writer: int):
    for i in range(200):
        results.append(Path(path), {**EARLIER, "run_id": f"w{writer}-{i}", "message": "x" * (i * 37 % 5000)})


def test_eight_runners_append_at_once_after_a_torn_line(tmp_path):
    path = tmp_path / "gemm.jsonl"
    results.append(path, EARLIER)
    with open(path, "a") as f:
        f.write('{"run_id": "torn", "task": "ge')  # a writer that died mid-line
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=_append_many, args=(str(path), w)) for w in range(8)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    stored = results.read(path)
    assert stored[0] == EARLIER and len(stored) == 1 + 8 * 200
    assert len({r["run_id"] for r in stored}) == len(stored)
    assert len(path.read_text().splitlines()) == 2 + 8 * 200  # the torn line alone on its line


@pytest.mark.slow
def test_a_gigabyte_of_output_neither_blocks_nor_floods(results_dir):
    proc = run("--task", "gemm", "--submission", str(FAULTS / "stdout_flood.py"), "--mode", "test", "--case", "0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(proc.stderr) < 3 << 20 and b"were dropped" in proc.stderr
    assert_no_worker_left("stdout_flood.py")


@pytest.mark.slow
def test_what_a_submission_prints_reaches_the_user(tmp_path):
    """Python's print and C's printf inside custom_kernel, forwarded from the worker, which leaves without Python's
    teardown once its evaluation ends."""
    path = tmp_path / "prints.py"
    path.write_text("import ctypes\n" + (ROOT / "tests" / "redteam" / "_honest.py").read_text()
                    + "\ndef custom_kernel(data):\n    print('from python')\n"
                    + "    ctypes.CDLL(None).printf(b'from C\\n')\n    return honest(data)\n")
    proc = run("--task", "gemm", "--submission", str(path), "--mode", "test", "--case", "0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert b"from python" in proc.stderr and b"from C" in proc.stderr


@pytest.mark.slow
def test_bad_record_lines_are_skipped_by_every_view(results_dir):
    results_dir.mkdir(parents=True)
    good = [json.loads(line) for line in (ROOT / "results" / "gemv.jsonl").read_text().splitlines()]
    run_id = next(r["run_id"] for r in good if r["mode"] == "benchmark" and r["kind"] == "benchmarks")
    lines = [json.dumps(r) for r in good if r["run_id"] == run_id]
    bad = ["[1, 2, 3]", json.dumps({"task": "gemv", "version": "v0"}),
           json.dumps({**json.loads(lines[0]), "stats": {"mean": "fast"}}), '"a string"', "{not json",
           json.dumps({**json.loads(lines[0]), "gpu": "cpu"}), json.dumps({**json.loads(lines[0]), "sha256": "../x"})]
    path = results_dir / "gemv.jsonl"
    path.write_text("\n".join(lines + bad) + '\n{"run_id": "torn", "ta')
    (results_dir / "leaderboard.jsonl").write_text('[1]\n{"task": "gemv", "version": "v0", "geomean_ns": "x"}\n')
    for args in (["list", "--task", "gemv", "--timing", "legacy"], ["diff", "--task", "gemv", "--timing", "legacy",
                                                                    good[0]["version"], good[0]["version"]],
                 ["leaderboard"], ["plot", "--task", "gemv", "--timing", "legacy"]):
        proc = run(*args)
        assert b"Traceback" not in proc.stderr, (args, proc.stderr[-3000:])
        assert proc.returncode in (0, 1), args
        assert proc.stderr.count(b"skipped") <= 2, (args, proc.stderr)
    results.append(path, EARLIER)  # starts on a fresh line after the torn one
    stored = results.read(path)
    assert stored[-1] == EARLIER and len(stored) == len(lines) + 1


@pytest.mark.slow
def test_merge_refuses_a_bad_archive_and_skips_bad_lines(results_dir, tmp_path):
    results_dir.mkdir(parents=True)
    broken = tmp_path / "broken.tgz"
    source = tmp_path / "from_device" / "results"
    source.mkdir(parents=True)
    (source / "gemm.jsonl").write_text(json.dumps(EARLIER) + "\n[1, 2, 3]\n")
    with tarfile.open(tmp_path / "good.tgz", "w:gz") as archive:
        archive.add(source, arcname="results")
    data = (tmp_path / "good.tgz").read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    proc = run("merge", str(broken))
    assert proc.returncode == 2 and b"not a readable archive" in proc.stderr and b"Traceback" not in proc.stderr
    assert not (results_dir / "gemm.jsonl").exists()
    proc = run("merge", str(tmp_path / "good.tgz"))
    assert proc.returncode == 0, proc.stderr
    assert results.read(results_dir / "gemm.jsonl") == [EARLIER]


@pytest.mark.slow
def test_errors_point_at_the_users_own_line_once(results_dir):
    proc = run("--task", "gemm", "--submission", str(FAULTS / "raises_at_import.py"), "--mode", "test")
    out = proc.stdout.decode()
    assert proc.returncode == 1 and "(at raises_at_import.py:5" in out and "submission.py" not in out
    paragraphs = [line for line in out.splitlines() if line.startswith("submission failed to load")]
    assert len(paragraphs) == 1 and "ValueError: broken at import" in paragraphs[0]  # four cases, one paragraph
    proc = run("--task", "gemm", "--submission", str(FAULTS / "raises_in_kernel.py"), "--mode", "test", "--case", "0")
    assert "(at raises_in_kernel.py:5: return c.missing_attribute)" in proc.stdout.decode()
    assert "Traceback (most recent call last)" not in proc.stdout.decode()
    proc = run("--task", "gemm", "--submission", str(FAULTS / "raises_in_kernel.py"), "--mode", "test", "--case", "0",
               "--traceback")
    assert "Traceback (most recent call last)" in proc.stdout.decode()


def test_a_workers_output_cannot_redraw_the_evaluators_lines():
    """Escape sequences, carriage returns and backspaces from a submission are shown as '?', text as it is."""
    from harness.evaluator.supervisor import printable
    assert printable(b"\x1b[2K\r  smoke 0: pass\x08\x7f\n\tdone") == b"?[2K?  smoke 0: pass??\n\tdone"
    assert printable("µs é".encode()) == "µs é".encode()


@pytest.mark.slow
def test_a_submissions_error_text_reaches_records_and_screen_without_terminal_controls(tmp_path):
    """An exception whose text moves the cursor, erases lines or sets the clipboard (OSC 52) is stored and shown
    with those controls as '?'; rich markup in it is printed as text."""
    path = tmp_path / "esc.py"
    path.write_text("def custom_kernel(data):\n"
                    "    raise RuntimeError('\\x1b[1A\\x1b[2K all tests: pass \\x1b]52;c;cHduZWQ=\\x07 [/] \\x9b2J')\n")
    proc = run("--task", "gemm", "--submission", str(path), "--mode", "test", "--case", "0", "--json", "--no-record")
    message = json.loads(proc.stdout)[0]["records"][0]["message"]
    assert "?[1A?[2K all tests: pass ?]52;c;cHduZWQ=? [/] ?2J" in message
    assert not any(c in (proc.stdout + proc.stderr).decode() for c in "\x1b\x07\x9b")
