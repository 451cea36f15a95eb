"""One run cannot touch another: the walls between a worker and every process outside it (harness.evaluator.namespaces),
what the witness counts of a worker's CPU time, what a worker leaves behind, and the red-team files of each way one
run reached another (tests/redteam/rival_limits.py, rival_scheduling.py, server_limits.py, zombie_credit.py,
shm_leftover.py), each on its own, side by side, and through the standing evaluator. Each red-team file notes in its
build cache what it reached, so each test also shows that its attack ran."""
import errno
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from fixtures_serve import CAP_SYS_RESOURCE, ROOT, Standing, capable, copy_checkout, redteam_log, standing  # noqa: F401 - standing: a fixture

from harness import forward
from harness.evaluator import namespaces
from harness.evaluator.namespaces import NAMESPACES_ENV, SHARED_MEMORY, launch, walls

REDTEAM = ROOT / "tests" / "redteam"
needs_walls = pytest.mark.skipif(not walls().flags, reason=f"this kernel refuses namespaces: {walls().why_not}")


def off() -> dict:
    """This process's environment with the namespaces off."""
    return {**os.environ, NAMESPACES_ENV: "off"}


def contained(become, pass_fds=(), private=None):
    """A process running `become(output)` in namespaces of its own, as a worker would be."""
    return launch(walls().flags, become, pass_fds, lambda pid: None, private or [(SHARED_MEMORY, 1 << 20)])


def said(read: int) -> dict:
    with os.fdopen(read) as f:
        return json.loads(f.read())


@needs_walls
def test_no_process_outside_its_namespaces_is_within_a_workers_reach():
    """Every call the red team used on another process (and kill, ptrace's cousin pidfd_open, /proc) fails from inside;
    setpriority(PRIO_USER) reaches the namespace's own processes alone."""
    target = subprocess.Popen(["sleep", "60"])
    read, write = os.pipe()

    def become(output):
        tried = {}
        for name, call in [
                ("prlimit", lambda: resource.prlimit(target.pid, resource.RLIMIT_CPU, (1, resource.RLIM_INFINITY))),
                ("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, target.pid, 19)),
                ("sched_setscheduler", lambda: os.sched_setscheduler(target.pid, os.SCHED_IDLE, os.sched_param(0))),
                ("sched_setaffinity", lambda: os.sched_setaffinity(target.pid, {0})),
                ("kill", lambda: os.kill(target.pid, signal.SIGKILL)),
                ("pidfd_open", lambda: os.close(os.pidfd_open(target.pid))),
                ("/proc", lambda: open(f"/proc/{target.pid}/stat").read()),
                ("PRIO_USER", lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19))]:
            try:
                call()
                tried[name] = "done"
            except OSError as exc:
                tried[name] = errno.errorcode[exc.errno]
        tried["named"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        os.write(write, json.dumps(tried).encode())
        os._exit(0)
    try:
        worker = contained(become, (write,))
        os.close(write)
        tried = said(read)
        assert worker.wait(30) == 0
        assert tried.pop("named") == [1, 2]  # its init and itself
        assert tried.pop("PRIO_USER") == "done"  # its own processes only
        assert tried.pop("/proc") == "ENOENT" and set(tried.values()) == {"ESRCH"}, tried
        assert target.poll() is None and os.getpriority(os.PRIO_PROCESS, target.pid) == os.getpriority(os.PRIO_PROCESS, 0)
        assert resource.prlimit(target.pid, resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY
        assert os.sched_getscheduler(target.pid) == os.SCHED_OTHER
    finally:
        target.kill()
        target.wait()


@needs_walls
def test_a_workers_shared_memory_and_tmpdir_are_its_own_capped_and_counted_when_it_ends(tmp_path):
    name = f"walls-test-{uuid.uuid4().hex}"
    read, write = os.pipe()

    def become(output):
        written = 0
        try:
            with open(f"{SHARED_MEMORY}/{name}", "wb") as f:
                for _ in range(4):
                    f.write(b"\1" * (512 << 10))
                    f.flush()
                    written += 512 << 10
        except OSError as exc:
            os.write(write, json.dumps({"written": written, "error": errno.errorcode[exc.errno]}).encode())
        with open(tmp_path / "left", "wb") as f:
            f.write(b"\1" * 4096)
        os._exit(0)
    worker = contained(become, (write,), [(SHARED_MEMORY, 1 << 20), (str(tmp_path), 1 << 20)])
    os.close(write)
    assert said(read) == {"written": 1 << 20, "error": "ENOSPC"}  # 2 MiB asked, 1 MiB taken
    assert worker.wait(30) == 0
    assert worker.left[SHARED_MEMORY] == (1, 1 << 20) and worker.left[str(tmp_path)] == (1, 4096)
    assert not (Path(SHARED_MEMORY) / name).exists() and not (tmp_path / "left").exists()


@needs_walls
def test_the_evaluators_shared_memory_files_are_bound_into_a_workers():
    """torch's CUDA IPC reference counts live in a file the evaluator keeps mapped in /dev/shm, which a worker writes as
    it lets go of a slot: expose() binds every file the evaluator holds there into the worker's private /dev/shm, where
    the worker may write it, and nothing else of the evaluator's /dev/shm; they are not counted as left behind."""
    from harness.evaluator.namespaces import shared_files
    held, other = (Path(SHARED_MEMORY) / f"walls-test-{uuid.uuid4().hex}" for _ in range(2))
    held.write_bytes(b"0" * 8)
    other.write_bytes(b"0" * 8)
    holding = os.open(held, os.O_RDWR)
    go_r, go_w = os.pipe()
    read, write = os.pipe()

    def become(output):
        os.read(go_r, 1)
        with open(f"{SHARED_MEMORY}/{held.name}", "r+b") as f:
            seen = f.read()
            f.seek(0)
            f.write(b"1")
        os.write(write, json.dumps({"seen": seen.decode(), "listed": sorted(os.listdir(SHARED_MEMORY))}).encode())
        os._exit(0)
    try:
        worker = contained(become, (go_r, write))
        os.close(write)
        os.close(go_r)
        assert held.name in shared_files() and other.name not in shared_files()
        worker.expose(shared_files())
        os.write(go_w, b"g")
        assert said(read) == {"seen": "0" * 8, "listed": [held.name]}
        assert worker.wait(30) == 0
        assert held.read_bytes() == b"1" + b"0" * 7 and worker.left[SHARED_MEMORY] == (0, 0)
    finally:
        os.close(holding)
        held.unlink()
        other.unlink()
        os.close(go_w)


@needs_walls
def test_a_process_in_a_workers_namespaces_may_not_ask_for_runs(tmp_path):
    """harness.peers refuses a process in a PID namespace below its own, confined or not."""
    from harness.peers import Peer
    path = str(tmp_path / "listener")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # a path: a worker's network namespace has no abstract socket of this one's
    listener.listen(1)

    def become(output):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        time.sleep(30)
        os._exit(0)
    worker = contained(become)
    with listener:
        conn, _ = listener.accept()
        with conn:
            assert Peer.of(conn).refusal() == \
                "the process at the other end is in a process namespace below this one's, as a worker is"
    worker.kill()
    worker.wait(30)


def test_a_child_keeps_exactly_the_descriptors_it_is_told_to():
    """forked.close_all_but, as the keeper, the init and every worker use it: 0, 1 and 2 kept among the others."""
    from harness.evaluator.forked import close_all_but
    read, write = os.pipe()
    extra = os.open(os.devnull, os.O_RDONLY)
    pid = os.fork()
    if pid == 0:
        close_all_but({0, 1, 2, write})
        os.write(write, json.dumps(sorted(int(fd) for fd in os.listdir("/proc/self/fd"))).encode())
        os._exit(0)
    os.close(write)
    os.close(extra)
    kept = said(read)
    os.waitpid(pid, 0)
    assert {0, 1, 2, write} <= set(kept) and len(kept) == 5  # and the one listdir opened


def test_without_namespaces_the_sandbox_line_says_why():
    line = subprocess.run([sys.executable, "-c", "from harness.evaluator.namespaces import walls\n"
                           "print(walls().phrase())"], capture_output=True, text=True, cwd=ROOT, env=off(), timeout=60)
    assert line.stdout.strip() == f"no namespaces of its own ({NAMESPACES_ENV}=off): other processes of its user are " \
                                  f"within its reach", line.stderr


BURNS_IN_AN_UNREAPED_CHILD = """
import os, sys, time
sys.stdin.readline()
if os.fork() == 0:
    started = time.process_time()
    while time.process_time() - started < 0.5:
        pass
    os._exit(0)
time.sleep(60)
"""


@pytest.mark.parametrize("with_cgroup", [False, True])
def test_the_cpu_time_of_a_child_that_exits_unreaped_is_the_workers(with_cgroup):
    """WorkerCpu counts what a zombie ran: from the worker's cgroup's usage, or from the zombie's own ticks."""
    from harness.evaluator.cgroup import WorkerCgroup
    from harness.evaluator.supervisor import WorkerProcess, children_of, identity
    from harness.evaluator.witness import TICK_NS, WorkerCpu
    group = WorkerCgroup.create() if with_cgroup else None
    if with_cgroup and group is None:
        pytest.skip("needs a writable cgroup v2 hierarchy with cgroup.kill")
    parent = subprocess.Popen([sys.executable, "-c", BURNS_IN_AN_UNREAPED_CHILD], stdin=subprocess.PIPE, text=True)
    try:
        if group:
            assert group.add(parent.pid)
        worker = SimpleNamespace(listed=False, contained=False, process=parent, cgroup=group,
                                 _not_its_own=lambda: {identity(parent.pid)})
        for method in ("processes", "cpu_ticks", "cpu_usage_ns"):
            setattr(worker, method, getattr(WorkerProcess, method).__get__(worker))
        time.sleep(0.5)
        before = WorkerCpu.read(parent.pid, worker)
        parent.stdin.write("go\n")
        parent.stdin.flush()
        deadline, zombies = time.monotonic() + 30, []
        while not zombies and time.monotonic() < deadline:
            time.sleep(0.05)
            zombies = [pid for pid in children_of(parent.pid)
                       if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"]
        after = WorkerCpu.read(parent.pid, worker)
        ran = (after.usage_ns - before.usage_ns) if with_cgroup else (after.ticks - before.ticks) * TICK_NS
        assert ran >= 0.45e9, ran
    finally:
        left = children_of(parent.pid)
        parent.kill()
        parent.wait()
        for pid in left:  # re-parented here, a subreaper
            os.waitpid(pid, 0)
        if group:
            group.remove()


def test_a_build_cache_over_its_cap_is_removed_and_said(tmp_path, monkeypatch):
    from harness.evaluator import sandbox
    folder = tmp_path / "cache"
    (folder / "deep").mkdir(parents=True)
    (folder / "deep" / "lib.so").write_bytes(b"\1" * (64 << 10))
    monkeypatch.setattr(sandbox, "BUILD_CACHE_CAP", 1 << 20)
    assert sandbox.trim_build_cache(folder) == "" and folder.exists()
    monkeypatch.setattr(sandbox, "BUILD_CACHE_CAP", 32 << 10)
    assert "removed the file's build cache" in sandbox.trim_build_cache(folder) and not folder.exists()


# -- the red team: each attack on its own, side by side, and through the standing evaluator -----------------------

ATTACKS_ON_A_RIVAL = ["rival_limits", "rival_scheduling"]


def run_py(*args, env=None, root=ROOT, timeout=900) -> subprocess.CompletedProcess:
    """run.py of the checkout at `root`, run there."""
    return subprocess.run([sys.executable, str(root / "run.py"), *args], capture_output=True, text=True, cwd=root,
                          env=env or os.environ, timeout=timeout)


def reached(log: Path) -> list[str]:
    """The lines of a red-team log: one per time the attack looked."""
    lines = log.read_text().splitlines() if log.exists() else []
    assert lines, "the attack never ran"
    return lines


def diff_measure(attack: str, env=None) -> subprocess.CompletedProcess:
    return run_py("diff", "--task", "gemm", "--measure", str(REDTEAM / f"{attack}.py"), "v0", "--rounds", "2",
                  "--shapes", "smoke", "--json", env=env)


@pytest.mark.slow
@needs_walls
@pytest.mark.parametrize("attack", ATTACKS_ON_A_RIVAL)
def test_a_rival_in_diff_measure_is_out_of_reach(attack, results_dir):
    """tests/redteam/rival_limits.py and rival_scheduling.py beside gemm v0 in `diff --measure`: they name no rival,
    and both versions are measured in every round."""
    log = redteam_log(REDTEAM / f"{attack}.py", attack)
    proc = diff_measure(attack)
    assert proc.returncode == 0, proc.stderr[-3000:]
    versions = [row["versions"] for row in json.loads(proc.stdout)["rows"]]
    assert versions and all(v[1]["version"] == "v0" and v[1]["mean_ns"] > 0 for v in versions)
    assert all("rivals []" in line for line in reached(log))


@pytest.mark.slow
@pytest.mark.parametrize("attack,sunk", [("rival_limits", "crash: crashed: the worker process was killed by SIGXCPU"),
                                         ("rival_scheduling", "")])
def test_without_namespaces_the_rival_is_reached(attack, sunk, results_dir):
    """The same with the walls taken down (NVFP4_ARENA_NAMESPACES=off): the attacks reach gemm v0's worker; with its CPU
    limit set, v0 dies in the first round and the comparison stops."""
    log = redteam_log(REDTEAM / f"{attack}.py", attack)
    proc = diff_measure(attack, env=off())
    hits = [line for line in reached(log) if "rivals []" not in line]
    assert hits and all(": " not in part.split(": ", 1)[1] for line in hits for part in line.split("; ")[1].split(", ")), \
        hits  # every change it tried took
    if sunk:
        assert proc.returncode == 1 and "v0 did not pass benchmark mode in round 1" in proc.stderr and sunk in proc.stderr


@pytest.mark.slow
@needs_walls
def test_a_rival_measured_for_submit_best_is_out_of_reach():
    """`submit --best` measures its candidates as diff --measure does, leaving out one that fails a round
    (harness.views.remeasure.measure with on_fail): the honest one is measured in every round, and left out never."""
    from harness.rules import DEFAULT_TIMING
    from harness.submission import resolve
    from harness.views.remeasure import measure
    from reference.cases import leaderboards
    log = redteam_log(REDTEAM / "rival_limits.py", "rival_limits")
    subs = [resolve(str(REDTEAM / "rival_limits.py"), "gemm", leaderboards()), resolve("v0", "gemm", leaderboards())]
    failed = {}
    pooled = measure(subs, "smoke", 2, DEFAULT_TIMING, on_fail=lambda version, why: failed.update({version: why}))
    assert failed == {} and all(len(means) == 2 for means in pooled["v0"].values())
    assert all("rivals []" in line for line in reached(log))


@pytest.mark.slow
@needs_walls
def test_a_rival_in_a_sweep_is_out_of_reach(tmp_path, results_dir):
    """A sweep of two CPU lanes runs tests/redteam/rival_limits.py (as lineage version v90 of a copy of the checkout)
    beside gemm v0, each in a run of its own, in test mode (two benchmarks at once on a crowded two-core machine can
    flag an honest file): v0 passes."""
    root = copy_checkout(tmp_path / "checkout")
    for name in ("_honest.py", "_reach.py"):
        shutil.copy(REDTEAM / name, root / "submissions" / "gemm" / name)
    attacker = root / "submissions" / "gemm" / "v90.py"
    attacker.write_text((REDTEAM / "rival_limits.py").read_text().replace('"""Attack', '"""Parent: v0 — attack', 1))
    log = redteam_log(attacker, "rival_limits")
    proc = run_py("sweep", "--task", "gemm", "--versions", "v0,v90", "--lanes", "2", "--mode", "test", "--json",
                  root=root)
    jobs = {job["version"]: job for job in json.loads(proc.stdout)["jobs"]}
    assert jobs["v0"]["status"] == "pass", proc.stderr[-3000:]
    assert all("rivals []" in line for line in reached(log))


@pytest.mark.slow
@needs_walls
@pytest.mark.parametrize("attack", ATTACKS_ON_A_RIVAL)
def test_a_served_run_cannot_reach_another_served_run(attack, standing):
    """Two runs of the standing evaluator at once, gemm v0's and an attacker's, in test mode (two benchmarks at once on
    a crowded two-core machine can flag an honest file): v0 passes."""
    log = redteam_log(REDTEAM / f"{attack}.py", attack)
    honest = subprocess.Popen([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission", "v0",
                               "--mode", "test", "--shapes", "smoke", "--json", "--no-record"], cwd=ROOT,
                              env=standing.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    standing.wait_for("--submission v0", 60)
    attacker = standing.run("--task", "gemm", "--submission", str(REDTEAM / f"{attack}.py"), "--mode", "test",
                            "--shapes", "smoke", "--json", "--no-record")
    out, err = honest.communicate(timeout=900)
    assert honest.returncode == 0 and all(r["status"] == "pass" for r in json.loads(out)[0]["records"]), err[-3000:]
    assert attacker.returncode == 0, attacker.stderr[-3000:]
    assert all("rivals []" in line for line in reached(log))


@pytest.mark.slow
@pytest.mark.parametrize("namespaced", [True, False])
def test_a_served_run_cannot_change_the_next(namespaced, results_dir):
    """tests/redteam/server_limits.py, served, lowers the open-files and locked-memory limits of every evaluator it
    can name; the next honest run through the same server passes, with its command line's limits. In namespaces it
    names only its own init; without them it lowers the standing evaluator's, and the next run still takes its command
    line's (harness.evaluator.caller), or, where the server may not raise a hard limit again (no CAP_SYS_RESOURCE),
    is declined and runs on its own."""
    env = {**(os.environ if namespaced else off()), forward.ADDRESS_ENV: f"test-{uuid.uuid4().hex}"}
    if namespaced and not walls().flags:
        pytest.skip(f"this kernel refuses namespaces: {walls().why_not}")
    results_dir.mkdir(parents=True, exist_ok=True)
    server = Standing(ROOT, env)
    try:
        log = redteam_log(REDTEAM / "server_limits.py", "server_limits")
        attack = server.run("--task", "gemm", "--submission", str(REDTEAM / "server_limits.py"), "--mode", "test",
                            "--shapes", "smoke", "--case", "0", "--no-record")
        [line] = reached(log)
        lowered = resource.prlimit(server.proc.pid, resource.RLIMIT_NOFILE) == (48, 48)
        if namespaced:
            assert attack.returncode == 0 and line == "above: 1: lowered" and not lowered, (line, attack.stderr)
        else:
            assert f"{server.proc.pid}: lowered" in line and lowered, line
        honest = server.run("--task", "gemm", "--submission", str(ROOT / "tests" / "submissions" /
                                                                   "reports_its_state.py"),
                            "--mode", "test", "--shapes", "smoke", "--case", "0", "--json", "--no-record")
        declined = "did not take this run" in honest.stderr
        assert honest.returncode == 0 and declined == (lowered and not capable(CAP_SYS_RESOURCE)), honest.stderr[-3000:]
        state = json.loads(next(line[len("STATE "):] for line in honest.stdout.splitlines() + honest.stderr.splitlines()
                                if line.startswith("STATE ")))
        for name in ("RLIMIT_NOFILE", "RLIMIT_MEMLOCK"):
            assert tuple(state["limits"][name]) == resource.getrlimit(getattr(resource, name))
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("served", [False, True])
def test_a_childs_work_left_unreaped_is_counted(served, request, results_dir):
    """tests/redteam/zombie_credit.py hides each sample's work in a child it never reaps: `tampered` (on a GPU its
    children cannot write the GPU's slots: `fail`)."""
    log = redteam_log(REDTEAM / "zombie_credit.py", "zombie_credit")
    args = ["--task", "gemm", "--submission", str(REDTEAM / "zombie_credit.py"), "--mode", "benchmark", "--shapes",
            "smoke", "--case", "0", "--json"]
    proc = request.getfixturevalue("standing").run(*args) if served else run_py(*args)
    record = json.loads(proc.stdout)[0]["records"][0]
    expected = ("fail", "mismatch") if torch.cuda.is_available() else ("tampered", "the evaluator's clock saw")
    assert (record["status"], expected[1] in record["message"]) == (expected[0], True), record["message"]
    if not torch.cuda.is_available():
        assert any("exited unreaped; zombies: " in line for line in reached(log))


@pytest.mark.slow
@needs_walls
@pytest.mark.parametrize("served", [False, True])
def test_what_a_file_leaves_in_shared_memory_goes_with_its_worker(served, request, results_dir):
    """tests/redteam/shm_leftover.py leaves 8 MiB in /dev/shm, 8 MiB in its TMPDIR and an 8 MiB SysV segment: none
    outlives its worker, and the run says what it removed."""
    log = redteam_log(REDTEAM / "shm_leftover.py", "shm_leftover")
    args = ["--task", "gemm", "--submission", str(REDTEAM / "shm_leftover.py"), "--mode", "test", "--shapes", "smoke",
            "--case", "0", "--json", "--no-record"]
    proc = request.getfixturevalue("standing").run(*args) if served else run_py(*args)
    assert [r["status"] for r in json.loads(proc.stdout)[0]["records"]] == ["pass", "pass"], proc.stderr[-3000:]
    [line] = reached(log)
    assert line.startswith(f"/dev/shm holds {namespaces.SHM_CAP} bytes, TMPDIR {namespaces.TMPDIR_CAP}"), line
    assert "SysV segment -1" not in line  # it was made
    assert not (Path(SHARED_MEMORY) / "redteam_shm_leftover").exists()
    assert f"{0x5EDC0DE:10d}" not in Path("/proc/sysvipc/shm").read_text()
    assert "removed 1 file(s), 8.0 MiB, that it left in its own /dev/shm and 1 file(s), 8.0 MiB, that it left in " \
           "its TMPDIR" in proc.stderr, proc.stderr[-3000:]
