"""Who is at the other end of a unix socket: the standing evaluator asks it of a command line, and a command line of
the standing evaluator (harness.evaluator.server, harness.forward).

The kernel says which process connected (or listened) and its uid (SO_PEERCRED), and hands a pidfd bound to that
very process (SO_PEERPIDFD, Linux 6.5): what is read of the pid in /proc is that process's only if the pidfd shows
it alive after the reading, for a live process's pid cannot be reused. A peer is refused when it is of another
uid, is gone, is more confined than this process or than its own parent (more seccomp filters, or no_new_privs
where the other has none: every worker adds a filter to what its evaluator had, harness.worker.confine, and its
processes that outlive their parents come back to the evaluator, a subreaper), lives in a PID namespace below this
one's (as every process of a worker does where it has namespaces of its own, harness.evaluator.namespaces), sits in a
worker's cgroup, or, where an ancestor is named, descends from it.
"""
import os
import select
import socket
import struct
from dataclasses import dataclass

SO_PEERPIDFD = getattr(socket, "SO_PEERPIDFD", 77)  # Linux 6.5
WORKER_CGROUP = "nvfp4-arena-worker-"  # how every worker's cgroup is named (harness.evaluator.cgroup)
CONFINEMENT = ("Seccomp_filters", "NoNewPrivs")  # /proc/<pid>/status fields a worker's sandbox raises


def status(pid: int | str) -> dict | None:
    """The fields of /proc/<pid>/status, or None where the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except OSError:
        return None


def descends_from(pid: int, ancestor: int) -> bool | None:
    """Whether `pid` descends from `ancestor`, by the parents /proc shows; None where a process on the way is gone."""
    seen = set()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        fields = status(pid)
        if fields is None:
            return None
        pid = int(fields.get("PPid", "0"))
        if pid == ancestor:
            return True
    return False


def supported() -> bool:
    """Whether this kernel hands a socket's peer as a pidfd (without it no peer can be told apart safely)."""
    a, b = socket.socketpair()
    with a, b:
        try:
            os.close(a.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD))
            return True
        except OSError:
            return False


def _alive(pidfd: int) -> bool:
    """A pidfd reads as ready once its process has exited."""
    return not select.select([pidfd], [], [], 0)[0]


@dataclass(frozen=True)
class Peer:
    pid: int
    uid: int
    pidfd: int

    @classmethod
    def of(cls, sock: socket.socket) -> "Peer":
        pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        return cls(pid, uid, sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD))

    def refusal(self, ancestor: int | None = None) -> str | None:
        """Why this peer may not be dealt with, or None (the pidfd is closed either way)."""
        try:
            if self.uid != os.getuid():
                return f"uid {self.uid} is not this process's"
            theirs, ours = status(self.pid), status("self")
            parent = status(theirs.get("PPid", "0")) if theirs else None
            cgroup = _read(f"/proc/{self.pid}/cgroup")
            descends = descends_from(self.pid, ancestor) if ancestor is not None else False
            if None in (theirs, parent, descends, cgroup) or not _alive(self.pidfd):
                return "the process at the other end is gone"
            if _more_confined(theirs, ours) or _more_confined(theirs, parent):
                return "the process at the other end is confined as a worker is"
            if len(theirs.get("NSpid", "").split()) > len(ours.get("NSpid", "").split()):
                return "the process at the other end is in a process namespace below this one's, as a worker is"
            if WORKER_CGROUP in cgroup:
                return "the process at the other end is in a worker's cgroup"
            if descends:
                return "a process started by a run may not ask for runs"
            return None
        finally:
            os.close(self.pidfd)


def _more_confined(these: dict, those: dict) -> bool:
    return any(int(these.get(k, "0")) > int(those.get(k, "0")) for k in CONFINEMENT)


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None
