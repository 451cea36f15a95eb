"""A cgroup (v2) of its own for each worker, so that stopping the worker ends every process it started at once.

A process is born in its parent's cgroup. The worker's sandbox (harness.worker.confine) keeps every process of the
worker's in it: Landlock denies writes to the hierarchy, and a seccomp filter refuses clone3, whose
CLONE_INTO_CGROUP would start a child in any cgroup whose folder it can open. So a process that forks and lets its
parent exit without pause, which can outrun the scan of re-parented orphans (supervisor.kill_strays), is still in
the worker's cgroup, and `cgroup.kill` ends them all. The evaluator makes the cgroup before it starts the worker
and moves the worker in right after, before the worker imports any of the submission's code.

Where this process sees no cgroup v2 hierarchy it may create folders in, or the kernel has no `cgroup.kill`
(before Linux 5.14), there is no cgroup, and the scan (or the worker's namespace, harness.evaluator.namespaces) is
all there is. Without the sandbox, a worker that runs as
root could move itself out: a speed bump then, not a wall.
"""
import itertools
import os
import signal
import time
from pathlib import Path

from ..peers import WORKER_CGROUP

KILL_WAIT_S = 5.0  # how long kill() waits for the cgroup to empty
_NAMES = itertools.count()  # the names of this process's worker cgroups: WORKER_CGROUP, its pid, a dash, the count


def own_folder() -> Path | None:
    """This process's folder in the cgroup v2 hierarchy, or None where no mount of it shows that folder."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split()[3:5] for line in f if line.split(" - ", 1)[-1].startswith("cgroup2 ")]
    except OSError:
        return None
    for root, point in mounts if path is not None else []:  # a mount shows the hierarchy from `root` on
        if root == "/" or (path + "/").startswith(root.rstrip("/") + "/"):
            return Path(point) / path[len(root.rstrip("/")):].lstrip("/")
    return None


def remove_stale(base: Path) -> None:
    """Kill and remove the cgroups of evaluators that are gone (one killed outright runs no exit handler)."""
    try:
        folders = [f for f in base.iterdir() if f.name.startswith(WORKER_CGROUP)]
    except OSError:
        return
    for folder in folders:
        owner = folder.name[len(WORKER_CGROUP):].split("-")[0]
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            WorkerCgroup(folder).remove()


class WorkerCgroup:
    """One worker's cgroup: created empty, given the worker's pid, killed whole and removed when it stops."""

    def __init__(self, folder: Path):
        self.folder = folder

    @classmethod
    def create(cls) -> "WorkerCgroup | None":
        """A new cgroup beside nothing else of ours, or None where it cannot be made or has no cgroup.kill."""
        base = own_folder()
        if base is None:
            return None
        remove_stale(base)
        folder = base / f"{WORKER_CGROUP}{os.getpid()}-{next(_NAMES)}"
        try:
            folder.mkdir()
            if (folder / "cgroup.kill").exists():
                return cls(folder)
            folder.rmdir()
        except OSError:
            pass
        return None

    def add(self, pid: int) -> bool:
        """Move `pid` in; False where the kernel refused (the cgroup is then of no use and is removed)."""
        try:
            (self.folder / "cgroup.procs").write_text(str(pid))
            return True
        except OSError:
            self.remove()
            return False

    def _ids(self, listing: str) -> list[int] | None:
        """The ids a listing file holds (cgroup.procs: processes, cgroup.threads: threads); None where it cannot be
        read (the cgroup gone)."""
        try:
            return [int(i) for i in (self.folder / listing).read_text().split()]
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int] | None:
        """The processes in the cgroup; None where the listing cannot be read, which a caller must not take for
        none."""
        return self._ids("cgroup.procs")

    def threads(self) -> list[int]:
        return self._ids("cgroup.threads") or []

    def usage_ns(self) -> int | None:
        """The CPU time of every process that has run in the cgroup, those that have ended included (cpu.stat's
        usage_usec, which cgroup v2 keeps without the cpu controller); None where it cannot be read."""
        try:
            with open(self.folder / "cpu.stat") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("usage_usec ")) * 1000
        except (OSError, ValueError, IndexError, StopIteration):
            return None

    def populated(self) -> bool:
        try:
            return "populated 1" in (self.folder / "cgroup.events").read_text()
        except OSError:
            return False

    def kill(self) -> bool:
        """SIGKILL every process in the cgroup and wait until none is left; False if some still were after
        KILL_WAIT_S. cgroup.kill passes over a process whose main thread has exited while its other threads run
        on, so every thread left is also signalled by its id, which kills its whole process."""
        try:
            (self.folder / "cgroup.kill").write_text("1")
        except OSError:
            pass
        deadline = time.monotonic() + KILL_WAIT_S
        while self.populated():
            if time.monotonic() > deadline:
                return False
            for tid in self.threads():
                try:
                    os.kill(tid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.001)
        return True

    def remove(self) -> None:
        """Kill what is left and remove the folder."""
        self.kill()
        try:
            self.folder.rmdir()
        except OSError:
            pass
