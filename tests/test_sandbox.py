"""The worker's sandbox and the evaluator's subreaper, tried by a file that wants to change records and the
repository and to leave a process behind (tests/redteam/persist.py). Needs Landlock (Linux 5.13+, landlockpy)."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from fixtures_serve import redteam_log

ROOT = Path(__file__).resolve().parent.parent
PERSIST = ROOT / "tests" / "redteam" / "persist.py"


def landlock_available() -> bool:
    try:
        from landlockpy import Ruleset  # noqa: F401
        import ctypes
        return ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1) > 0
    except (ImportError, OSError):
        return False


def live_processes_running(marker: str) -> list:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    found.append((proc.name, state))
            except OSError:
                continue
    return [p for p in found if p[1] != "Z"]


def cgroup_available() -> bool:
    from harness.evaluator.cgroup import WorkerCgroup
    made = WorkerCgroup.create()
    if made:
        made.remove()
    return made is not None


FORKER = ["bash", "-c", "while true; do (sleep 30 &); done"]  # forks without pause, each child orphaned at once


@pytest.mark.skipif(not cgroup_available(), reason="needs a writable cgroup v2 hierarchy with cgroup.kill")
def test_a_cgroup_ends_every_process_of_a_tree_that_forks_without_pause():
    from harness.evaluator.cgroup import WorkerCgroup
    group = WorkerCgroup.create()
    forker = subprocess.Popen(FORKER, start_new_session=True)
    assert group.add(forker.pid)
    time.sleep(0.3)
    assert len(group.pids()) > 1  # the orphans are in it too, wherever they were re-parented
    assert group.kill() and group.pids() == [] and forker.wait(5) == -9
    group.remove()
    assert not group.folder.exists()


@pytest.mark.skipif(not cgroup_available(), reason="needs a writable cgroup v2 hierarchy with cgroup.kill")
def test_the_cgroup_of_an_evaluator_that_is_gone_is_emptied_and_removed():
    from harness.evaluator.cgroup import WORKER_CGROUP, WorkerCgroup, own_folder, remove_stale
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = WorkerCgroup(own_folder() / f"{WORKER_CGROUP}{gone.pid}-0")
    stale.folder.mkdir()
    left = subprocess.Popen(["sleep", "30"])
    assert stale.add(left.pid)
    remove_stale(own_folder())
    assert left.wait(5) == -9 and not stale.folder.exists()


@pytest.mark.slow
@pytest.mark.skipif(not landlock_available(), reason="needs Landlock and landlockpy")
def test_a_worker_cannot_write_records_or_the_repository_nor_outlive_its_run(results_dir):
    results_dir.mkdir(parents=True)
    planted = ROOT / "reference" / "planted.py"
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission", str(PERSIST),
                           "--mode", "test", "--case", "0", "--json"], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    out = json.loads(proc.stdout)
    sandbox = out[0]["records"][0]["sandbox"]
    assert sandbox.startswith("landlock"), sandbox
    assert sandbox.endswith("in a cgroup of their own") == (cgroup_available()), sandbox
    assert not planted.exists()
    assert not (Path(sysconfig.get_paths()["purelib"]) / "nvfp4_arena_planted.pth").exists()
    time.sleep(0.5)
    lines = (results_dir / "gemm.jsonl").read_text().splitlines()
    assert lines and all("forged" not in line for line in lines)
    assert not live_processes_running(str(PERSIST)), "a process the worker started outlived the run"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="the attack builds its hopper with gcc")
def test_a_process_that_keeps_changing_its_pid_does_not_outlive_the_run(results_dir):
    """tests/redteam/pid_hopper.py starts, as its worker exits, a process that forks and lets its parent exit every
    few hundred µs, so that it is never at the pid a scan saw; the evaluator still ends it before it returns."""
    log = redteam_log(ROOT / "tests" / "redteam" / "pid_hopper.py", "pid_hopper")
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                           str(ROOT / "tests" / "redteam" / "pid_hopper.py"), "--mode", "test", "--case", "0", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert [r["status"] for r in json.loads(proc.stdout)[0]["records"]] == ["pass", "pass"], proc.stderr
    assert "[pid_hopper] its hopper started" in proc.stderr and "started, waiting for worker" in log.read_text()
    time.sleep(0.5)
    assert not live_processes_running(str(log)), "the hopper outlived the run"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="the attack builds its helper with gcc")
def test_a_process_cannot_leave_the_worker_cgroup_nor_outlive_it_as_a_zombie_leader(results_dir):
    """tests/redteam/cgroup_escape.py tries clone3 into the folder above the worker's cgroup (refused by the worker's
    seccomp filter), forks instead, and ends the child's main thread while another thread lives on; the evaluator
    still ends it before it returns."""
    log = redteam_log(ROOT / "tests" / "redteam" / "cgroup_escape.py", "cgroup_escape")
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                           str(ROOT / "tests" / "redteam" / "cgroup_escape.py"), "--mode", "test", "--case", "0",
                           "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    records = json.loads(proc.stdout)[0]["records"]
    assert [r["status"] for r in records] == ["pass", "pass"], proc.stderr
    assert "[cgroup_escape] its child's thread runs" in proc.stderr, proc.stderr[-2000:]
    if landlock_available():
        assert "clone3 refused" in records[0]["sandbox"]
        assert "refused too, forking instead" in log.read_text()
    if cgroup_available():
        assert records[0]["sandbox"].endswith("in a cgroup of their own"), records[0]["sandbox"]
        child = [line for line in log.read_text().splitlines() if " child: " in line]
        assert child and "nvfp4-arena-worker-" in child[0], child  # born in the worker's cgroup
    time.sleep(1.5)
    lines = log.read_text().splitlines()
    time.sleep(1.5)
    assert log.read_text().splitlines() == lines, "a process the worker started is still alive after the run"


@pytest.mark.slow
def test_one_file_cannot_plant_a_build_in_another_files_cache(results_dir):
    """tests/redteam/ext_cache_poison.py builds a wrong extension under the name victim_inline.py uses, where
    load_inline would find it; each file has its own build cache, so the victim still builds its own and passes."""
    def verdicts(name):
        proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                               str(ROOT / "tests" / "redteam" / f"{name}.py"), "--mode", "test", "--case", "0", "--json"],
                              capture_output=True, text=True, timeout=600, cwd=ROOT)
        return [r["status"] for r in json.loads(proc.stdout)[0]["records"]]
    assert verdicts("ext_cache_poison") == ["pass", "pass"]
    assert verdicts("victim_inline") == ["pass", "pass"]


def test_a_workers_triton_cache_is_its_files_own(tmp_path):
    """Every build cache a worker's environment names, Triton's included, lies in the file's own writable folder."""
    from harness.evaluator.sandbox import CACHE_FOLDERS, worker_environment
    path = tmp_path / "k.py"
    path.write_text("x = 1\n")
    env, writable, scratch = worker_environment([path])
    scratch.cleanup()
    for variable in CACHE_FOLDERS:
        assert any(Path(w) in Path(env[variable]).parents for w in writable), variable


@pytest.mark.slow
def test_a_file_builds_in_its_own_triton_cache(tmp_path):
    """When the submission is imported, Triton's cache is the file's own."""
    path = tmp_path / "own_cache.py"
    path.write_text("import os\nassert 'nvfp4-arena/builds/' in os.environ['TRITON_CACHE_DIR'], os.environ['TRITON_CACHE_DIR']\n"
                    + (ROOT / "tests" / "redteam" / "_honest.py").read_text() + "\ncustom_kernel = honest\n")
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission", str(path),
                           "--mode", "test", "--case", "0", "--json", "--no-record"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert [r["status"] for r in json.loads(proc.stdout)[0]["records"]] == ["pass", "pass"], proc.stdout[-2000:]


@pytest.mark.slow
@pytest.mark.skipif(not landlock_available() or os.geteuid() != 0,
                    reason="needs Landlock, and root: to anyone else the targets are closed by their owners anyway")
def test_a_worker_running_as_root_cannot_write_disks_or_the_kernels_settings():
    """tests/redteam/dev_proc_escape.py fails to import if it can open a raw disk, /dev/kmsg or a sysctl for
    writing; the sandbox grants /dev and /proc only where the CUDA driver writes."""
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                           str(ROOT / "tests" / "redteam" / "dev_proc_escape.py"), "--mode", "test", "--case", "0",
                           "--json", "--no-record"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    records = json.loads(proc.stdout)[0]["records"]
    assert [r["status"] for r in records] == ["pass", "pass"], records[0]["message"]


@pytest.mark.slow
@pytest.mark.skipif(not landlock_available() or os.geteuid() != 0,
                    reason="needs Landlock, and root: to anyone else these calls need capabilities it never had")
def test_a_worker_running_as_root_cannot_freeze_chown_or_mark_files_it_may_only_read(tmp_path):
    """tests/redteam/root_metadata.py fails to import if it can chattr +i, chown or set a trusted xattr on a file
    outside its writable folders: the worker drops every capability after Landlock and seccomp."""
    target = tmp_path / "records.jsonl"
    target.write_text("{}\n")
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                           str(ROOT / "tests" / "redteam" / "root_metadata.py"), "--mode", "test", "--case", "0",
                           "--json", "--no-record"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "REDTEAM_TARGET": str(target)})
    records = json.loads(proc.stdout)[0]["records"]
    assert [r["status"] for r in records] == ["pass", "pass"], records[0]["message"]
    assert "no capabilities" in records[0]["sandbox"]
    assert os.stat(target).st_uid == 0 and not os.listxattr(target)


@pytest.mark.slow
def test_a_process_at_a_reused_pid_is_still_the_workers_stray(results_dir):
    """tests/redteam/pid_reuse.py: the benchmark's worker (a spare started just after the test worker) plants an
    orphan at the test worker's pid once that one has ended; told apart by its start time, it is killed. Workers
    without namespaces of their own (NAMESPACES_ENV=off): in a PID namespace of its own a worker sees no other
    worker's pid to reuse (tests/test_walls.py holds that wall)."""
    from harness.evaluator.namespaces import NAMESPACES_ENV
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                           str(ROOT / "tests" / "redteam" / "pid_reuse.py"), "--shapes", "smoke", "--case", "0",
                           "--json", "--no-record"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, NAMESPACES_ENV: "off"})
    assert [s["mode"] for s in json.loads(proc.stdout)] == ["test", "benchmark"], proc.stderr[-2000:]
    assert "[pid_reuse] an orphan runs at the test worker's old pid" in proc.stderr, proc.stderr[-2000:]
    time.sleep(1)
    assert live_processes_running(str(ROOT / "tests" / "redteam" / "pid_reuse.py")) == []


def test_a_cgroup_listing_that_cannot_be_read_is_not_taken_for_no_strays():
    """descendants() reads a cgroup-bound worker's strays from its cgroup's listing; where that read fails (the
    cgroup gone), it scans the processes instead of finding none."""
    from types import SimpleNamespace

    from harness.evaluator.supervisor import WorkerProcess, identity
    sleeper = "import time; time.sleep(60)"
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time; "
                               f"subprocess.Popen([sys.executable, '-c', {sleeper!r}]); time.sleep(60)"],
                              start_new_session=True)
    worker = SimpleNamespace(listed=True, contained=False, cgroup=SimpleNamespace(pids=lambda: None), process=parent,
                             _not_its_own=lambda: {identity(parent.pid)})  # as a live worker is, without namespaces
    worker.processes = lambda: WorkerProcess.processes(worker)
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    try:
        deadline = time.monotonic() + 30
        while not (sleeping := children.read_text().split()) and time.monotonic() < deadline:
            time.sleep(0.05)
        found = WorkerProcess.descendants(worker)  # this test process's other children count as orphans too
        assert sleeping and {int(pid) for pid in sleeping} <= set(found) and parent.pid not in found
    finally:
        os.killpg(parent.pid, 9)
        parent.wait()


def test_without_landlock_a_worker_still_carries_the_filter_by_which_peers_know_it():
    """harness.peers tells a worker by the seccomp filter and no_new_privs its sandbox adds; they go on where
    Landlock cannot (here: landlockpy hidden), so that a worker still cannot pass for a command line."""
    probe = ("import sys; sys.modules['landlockpy'] = None\n"
             "from harness.worker.confine import confine\n"
             "print(confine([]).line)\n"
             "print(open('/proc/self/status').read())")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    line, status = proc.stdout.split("\n", 1)
    assert line.startswith("none: landlockpy is not installed") and "clone3 refused" in line, proc.stderr
    assert "NoNewPrivs:\t1" in status


def test_a_link_planted_in_a_build_cache_is_not_followed(tmp_path):
    """A worker may write its file's build folder: a link it leaves there in place of a cache folder is removed
    before the next run's evaluator makes the folder, instead of being followed to make folders where it points."""
    from harness.evaluator.sandbox import CACHE_FOLDERS, build_cache, worker_environment
    path = tmp_path / "planted.py"
    path.write_text(f"# {tmp_path}\n")
    folder = build_cache([path])
    target = tmp_path / "elsewhere"
    target.mkdir()
    triton = folder / CACHE_FOLDERS["TRITON_HOME"]
    shutil.rmtree(triton, ignore_errors=True)
    triton.symlink_to(target)
    _, _, scratch = worker_environment([path])
    scratch.cleanup()
    assert list(target.iterdir()) == [] and triton.is_dir() and not triton.is_symlink()
    shutil.rmtree(folder)


def test_removing_build_locks_follows_no_link_a_worker_left(tmp_path):
    """The evaluator removes stale torch build locks in a file's build cache, which the worker could write: a link in
    their place (the torch_extensions folder itself, or an extension's folder) leads it to no lock elsewhere."""
    from harness.evaluator.sandbox import remove_build_locks
    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    (elsewhere / "ext").mkdir(parents=True)
    (elsewhere / "ext" / "lock").touch()
    cache.mkdir()
    (cache / "torch_extensions").symlink_to(elsewhere)
    assert remove_build_locks(cache) == []
    (cache / "torch_extensions").unlink()
    (cache / "torch_extensions" / "old").mkdir(parents=True)
    (cache / "torch_extensions" / "linked").symlink_to(elsewhere / "ext")
    (cache / "torch_extensions" / "old" / "lock").touch()
    os.utime(cache / "torch_extensions" / "old" / "lock", (1000, 1000))
    (cache / "torch_extensions" / "fresh").mkdir()
    (cache / "torch_extensions" / "fresh" / "lock").touch()
    assert remove_build_locks(cache, made_before=2000) == [str(cache / "torch_extensions" / "old" / "lock")]
    assert (cache / "torch_extensions" / "fresh" / "lock").exists() and (elsewhere / "ext" / "lock").exists()
    assert remove_build_locks(cache, made_after=2000) == [str(cache / "torch_extensions" / "fresh" / "lock")]
    assert (elsewhere / "ext" / "lock").exists()
