"""The standing evaluator (run.py serve) and the command line's forwarding to it: runs are forked and give what a
run of their own gives, signals reach them, nothing a run started can ask for a run, and changed code is not served."""
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

from fixtures_serve import CAP_SYS_NICE, CAP_SYS_RESOURCE, Standing, capable, copy_checkout, redteam_log, standing  # noqa: F401 - standing: a fixture
from harness.evaluator import server
from harness import forward
from harness.peers import Peer
from test_sandbox import landlock_available

ROOT = Path(__file__).resolve().parent.parent
REDTEAM = Path(__file__).resolve().parent / "redteam"
FAULTS = Path(__file__).resolve().parent / "faults"
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"


def test_only_a_run_of_one_file_is_forwarded():
    import run
    assert run.one_file_run(["--task", "gemm", "--submission", "v0"])
    assert run.one_file_run(["--task", "gemm", "--submission", "v0", "--mode", "leaderboard", "--name", "list"])
    assert not run.one_file_run([])
    assert not run.one_file_run(["list", "--task", "gemm"])
    assert not run.one_file_run(["--task", "gemm", "list"])
    assert not run.one_file_run(["--task", "gemm", "--submission", "v0", "--ncu"])
    assert not run.one_file_run(["--help"])
    assert not run.one_file_run(["no_such_file.py"])


def test_the_address_is_the_users_and_the_checkouts_unless_named_or_off(monkeypatch):
    monkeypatch.delenv(forward.ADDRESS_ENV, raising=False)
    default = forward.address()
    assert default.startswith("\0") and str(os.getuid()) in default
    monkeypatch.setenv(forward.ADDRESS_ENV, "elsewhere")
    assert forward.address() != default and forward.address().endswith("elsewhere")
    monkeypatch.setenv(forward.ADDRESS_ENV, forward.OFF)
    assert forward.address() is None


def test_the_digest_follows_every_harness_source(tmp_path):
    for name in ("run.py", "task.py", "leaderboard_shapes.yaml"):
        (tmp_path / name).write_text(name)
    (tmp_path / "harness" / "views").mkdir(parents=True)
    (tmp_path / "reference").mkdir()
    (tmp_path / "harness" / "views" / "a.py").write_text("x = 1\n")
    before = server.source_digest(tmp_path)
    (tmp_path / "harness" / "views" / "notes.txt").write_text("not code")
    assert server.source_digest(tmp_path) == before
    (tmp_path / "harness" / "views" / "a.py").write_text("x = 2\n")
    assert server.source_digest(tmp_path) != before


def fresh_listener() -> tuple[socket.socket, str]:
    """A listening unix socket under an abstract name of its own, and that name."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"\0nvfp4-arena-test-{uuid.uuid4().hex}"
    listener.bind(name)
    listener.listen(1)
    return listener, name


def connected_from(code: str) -> tuple[str, subprocess.Popen]:
    """What harness.peers says of a child that runs `code` and then connects to a fresh listener here."""
    listener, name = fresh_listener()
    child = subprocess.Popen([sys.executable, "-c", f"{code}\nimport socket, time\ns = socket.socket(socket.AF_UNIX)\n"
                              f"s.connect({name!r})\ntime.sleep(30)"], cwd=ROOT)
    with listener:
        conn, _ = listener.accept()
        with conn:
            return Peer.of(conn).refusal(ancestor=os.getpid()), child


def test_a_descendant_a_confined_process_and_a_gone_one_are_refused_another_process_is_not():
    listener, name = fresh_listener()
    with listener, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as own:
        own.connect(name)  # this process: it does not descend from itself
        conn, _ = listener.accept()
        with conn:
            assert Peer.of(conn).refusal(ancestor=os.getpid()) is None
    cases = [("pass", "a process started by a run may not ask for runs"),
             ("from harness.worker.confine import refuse_clone3; refuse_clone3()",
              "the process at the other end is confined as a worker is")]
    for code, why in cases:
        said, child = connected_from(code)
        child.kill()
        child.wait()
        assert said == why
    listener, name = fresh_listener()
    child = subprocess.Popen([sys.executable, "-c", f"import socket; socket.socket(socket.AF_UNIX).connect({name!r})"])
    child.wait()
    with listener:
        conn, _ = listener.accept()
        with conn:
            assert Peer.of(conn).refusal() == "the process at the other end is gone"


CONFINED_LISTENER = """
import os, socket, sys, time, uuid
from harness.peers import Peer
from harness.worker.confine import refuse_clone3
refuse_clone3()  # a server started under one filter, say
name = "\\0nvfp4-arena-test-" + uuid.uuid4().hex
listening, said = os.pipe()
if os.fork() == 0:  # its worker: one filter more than its parent
    refuse_clone3()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(name)
    listener.listen(1)
    os.write(said, b"listening")
    listener.accept()
    time.sleep(5)
    os._exit(0)
os.read(listening, 9)
if os.fork() == 0:  # a command line run under two filters: as confined as the listener
    refuse_clone3()
    client = socket.socket(socket.AF_UNIX)
    client.connect(name)
    print(Peer.of(client).refusal(), flush=True)
    os._exit(0)
os.wait()
"""


def test_a_listener_more_confined_than_its_parent_is_refused_by_a_command_line_as_confined():
    said = subprocess.run([sys.executable, "-c", CONFINED_LISTENER], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert said.stdout.strip() == "the process at the other end is confined as a worker is", said.stderr


@pytest.mark.slow
def test_a_run_is_forked_and_gives_what_a_run_of_its_own_gives(standing, results_dir):
    served = standing.run("--task", "gemm", "--submission", "v0", "--shapes", "smoke", "--json")
    assert served.returncode == 0, served.stderr
    assert "run " in standing.text() and "--submission v0" in standing.text()
    records = [r for mode in json.loads(served.stdout) for r in mode["records"]]
    assert records and all(r["status"] == "pass" for r in records)
    sandbox = "sandbox: landlock" if landlock_available() else "sandbox: none"
    assert sandbox in served.stderr, served.stderr[-2000:]  # the run's own sandbox line, as a cold run's
    alone = standing.run("--task", "gemm", "--submission", "v0", "--shapes", "smoke", "--json",
                         env={**standing.env, forward.ADDRESS_ENV: forward.OFF})
    assert alone.returncode == 0
    assert len(pd.read_json(results_dir / "gemm.jsonl", lines=True)) == 2 * len(records)
    standing.wait_for("ended", 30)
    assert len(re.findall(r"run \d+: ", standing.text())) == 1  # the second ran on its own
    other = standing.run("--task", "gemm", "--submission", "v0", "--mode", "test", "--shapes", "smoke", "--no-record",
                         env={**standing.env, "PYTHONFAULTHANDLER": "" if "PYTHONFAULTHANDLER" in os.environ else "1"})
    assert other.returncode == 0 and "its Python (executable or PYTHON* variables) is not" in other.stderr


ONE_CPU = {min(os.sched_getaffinity(0))}
DISTURBED = {  # what another process of the user may do to the standing evaluator's own process, by its pid
    "limits": lambda pid: [resource.prlimit(pid, resource.RLIMIT_NOFILE, (48, 48)),
                           resource.prlimit(pid, resource.RLIMIT_MEMLOCK, (0, 0))],
    "nice": lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 19),
    "policy": lambda pid: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)),
    "affinity": lambda pid: os.sched_setaffinity(pid, ONE_CPU),
}


NEEDS = {"limits": CAP_SYS_RESOURCE, "nice": CAP_SYS_NICE, "policy": CAP_SYS_NICE}  # what takes each back


def own_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.slow
@pytest.mark.parametrize("attribute", [*DISTURBED, "umask", "folder", "environment"])
def test_a_served_run_starts_from_its_command_lines_state(attribute, results_dir):
    """Whatever was done to the standing evaluator's own process (its limits lowered, reniced, SCHED_IDLE, one CPU) or
    whatever it started with (another umask, folder and environment), a run it serves starts in the state its
    command line is in, as a run of its own would: tests/submissions/reports_its_state.py prints what its worker got.
    Where it may not take that state on (a hard limit lowered, without CAP_SYS_RESOURCE), it declines and the command
    line runs it."""
    env = {**os.environ, forward.ADDRESS_ENV: f"test-{uuid.uuid4().hex}", "REPORTED_MARKER": "the server's"}
    results_dir.mkdir(parents=True, exist_ok=True)
    s = Standing(ROOT, env, umask=0o077 if attribute == "umask" else None)
    try:
        if attribute in DISTURBED:
            DISTURBED[attribute](s.proc.pid)
        submissions = ROOT / "tests" / "submissions"
        served = s.run("--task", "gemm", "--submission", "reports_its_state.py" if attribute == "folder" else
                       str(submissions / "reports_its_state.py"), "--mode", "test", "--shapes", "smoke", "--case", "0",
                       "--no-record", env={**env, "REPORTED_MARKER": "the command line's"},
                       cwd=submissions if attribute == "folder" else None)
        assert served.returncode == 0, served.stderr[-3000:]
        state = json.loads(next(line[len("STATE "):] for line in served.stderr.splitlines()
                                if line.startswith("STATE ")))
        assert state["limits"] == {name: list(resource.getrlimit(getattr(resource, name))) for name in state["limits"]}
        assert (state["policy"], state["priority"]) == (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
        assert state["nice"] == os.getpriority(os.PRIO_PROCESS, 0)
        assert set(state["affinity"]) == os.sched_getaffinity(0)
        assert state["umask"] == own_umask() != 0o077
        assert state["marker"] == "the command line's"
        declined = "did not take this run" in served.stderr
        assert not declined or "may not take on the command line's" in served.stderr, served.stderr[-3000:]
        assert declined == (attribute in NEEDS and not capable(NEEDS[attribute])), served.stderr[-3000:]
    finally:
        s.stop()


def reports_of_its_processes(env) -> tuple[list[dict], set]:
    """What tests/submissions/reports_its_process.py saw of its workers (the test mode's, then the benchmark's), and
    the command line's own stdout and stderr."""
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                             str(SUBMISSIONS / "reports_its_process.py"), "--shapes", "smoke", "--case", "0",
                             "--no-record"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pipes = {f"pipe:[{os.fstat(stream.fileno()).st_ino}]" for stream in (proc.stdout, proc.stderr)}
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return [json.loads(line[len("PROCESS "):]) for line in err.splitlines() if line.startswith("PROCESS ")], pipes


def kinds(fds: dict) -> dict:
    """How many descriptors lead to each kind of thing (socket, pipe, a path)."""
    found = {}
    for target in fds.values():
        kind = target.split(":[")[0]
        found[kind] = found.get(kind, 0) + 1
    return found


@pytest.mark.slow
def test_forked_workers_hold_what_fresh_ones_hold(standing):
    forked, pipes = reports_of_its_processes(standing.env)
    fresh, _ = reports_of_its_processes({**standing.env, forward.ADDRESS_ENV: forward.OFF})
    assert len(forked) == len(fresh) == 2  # the test mode's worker and the benchmark's, started together
    for mine, theirs in zip(forked, fresh):
        assert mine["forked"] and not theirs["forked"]
        assert mine["cwd"] == str(ROOT) and "nvfp4-arena-worker-" in mine["tmpdir"]
        assert not pipes & set(mine["fds"].values())  # not the command line's stdout or stderr
        assert {k: kinds(mine["fds"]).get(k) for k in ("socket", "pipe")} == \
            {k: kinds(theirs["fds"]).get(k) for k in ("socket", "pipe")}, (mine["fds"], theirs["fds"])


@pytest.mark.slow
@pytest.mark.parametrize("sandbox,words", [([], "connect refused|confined as a worker is"),
                                           (["--unconfined"], "in a worker's cgroup|may not ask for runs")])
def test_a_submission_cannot_have_a_run_started(standing, results_dir, sandbox, words):
    log = redteam_log(REDTEAM / "server_request.py", "server_request")
    served = standing.run("--task", "gemm", "--submission", str(REDTEAM / "server_request.py"), "--mode", "test",
                          "--shapes", "smoke", "--case", "0", "--json", *sandbox)
    assert served.returncode == 0, served.stderr
    said = log.read_text()
    scoped = "abstract sockets scoped" in json.loads(served.stdout)[0]["records"][0]["sandbox"]  # Landlock ABI 6+
    expected = words if scoped or sandbox else "confined as a worker is"  # connected where Landlock has no scope
    assert "'kind': 'started'" not in said and any(w in said for w in expected.split("|")), said
    standing.wait_for("ended", 30)
    assert len(re.findall(r"run \d+: ", standing.text())) == 1, standing.text()
    assert set(pd.read_json(results_dir / "gemm.jsonl", lines=True)["version"]) == {"server_request"}


@pytest.mark.slow
def test_the_command_lines_signal_ends_the_run_and_its_workers(standing):
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                             str(FAULTS / "sleeps.py"), "--mode", "test", "--timeout", "600", "--no-record"],
                            cwd=ROOT, env=standing.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(standing.descendants()) < 2 and time.monotonic() < deadline:  # the run and its worker(s)
        time.sleep(0.1)
    assert len(standing.descendants()) >= 2
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 143
    standing.wait_for("ended", 30)
    assert standing.descendants() == []


@pytest.mark.slow
def test_a_killed_command_line_ends_its_run(standing):
    proc = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                             str(FAULTS / "sleeps.py"), "--mode", "test", "--timeout", "600", "--no-record"],
                            cwd=ROOT, env=standing.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(standing.descendants()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(standing.descendants()) >= 2  # the run and its worker(s)
    proc.kill()
    proc.wait()
    standing.wait_for("ended", 30)
    deadline = time.monotonic() + 15
    while standing.descendants() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert standing.descendants() == []


@pytest.mark.slow
def test_changed_code_is_not_served_and_the_server_starts_again(tmp_path, results_dir):
    root = copy_checkout(tmp_path / "checkout")
    results_dir.mkdir(parents=True, exist_ok=True)
    s = Standing(root, {**os.environ, forward.ADDRESS_ENV: f"test-{uuid.uuid4().hex}"})
    try:
        with open(root / "harness" / "views" / "report.py", "a") as f:
            f.write("\n# changed\n")
        stale = s.run("--task", "gemm", "--submission", "v0", "--mode", "test", "--shapes", "smoke", "--no-record")
        assert stale.returncode == 0, stale.stderr
        assert "did not take this run (the harness's sources changed" in stale.stderr
        again = s.run("--task", "gemm", "--submission", "v0", "--mode", "test", "--shapes", "smoke", "--no-record")
        assert again.returncode == 0 and "did not take" not in again.stderr  # queued on the kept socket meanwhile
        assert s.text().count("serving") == 2 and "--submission v0" in s.text()
    finally:
        s.stop()


@pytest.mark.slow
def test_a_worker_that_takes_the_address_first_gets_no_command_line(results_dir):
    """tests/redteam/server_squat.py binds the address before any server does. In a network namespace of its own the
    name is bound there alone, and a command line finds no listener; otherwise the command line finds the squatter,
    refuses it as confined, and runs the job itself."""
    from harness.evaluator.namespaces import CLONE_NEWNET, walls
    log = redteam_log(REDTEAM / "server_squat.py", "server_squat")
    env = {**os.environ, forward.ADDRESS_ENV: f"test-{uuid.uuid4().hex}"}
    squatting = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                                  str(REDTEAM / "server_squat.py"), "--mode", "test", "--shapes", "smoke", "--case",
                                  "0", "--no-record"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # no server has the name: it runs on its own
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and "bound" in log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "bound" in log.read_text()
        wrong = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                                str(REDTEAM / "nan_output.py"), "--mode", "test", "--shapes", "smoke", "--case", "0",
                                "--json", "--no-record"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        squatting.kill()
        squatting.wait()
    if walls().flags & CLONE_NEWNET:
        assert "not handing this run" not in wrong.stderr, wrong.stderr
    else:
        assert "not handing this run" in wrong.stderr and "confined as a worker is" in wrong.stderr, wrong.stderr
    assert wrong.returncode == 1 and json.loads(wrong.stdout)[0]["records"][0]["status"] == "fail"
    assert "answered" not in log.read_text()
