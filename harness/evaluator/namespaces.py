"""Namespaces of its own for each worker: the wall between a worker, with all it starts, and every process outside.

The evaluator forks a keeper, which unshares new process (PID), mount, IPC and network namespaces (with a user
namespace first where the evaluator is not root: a user may make one where the kernel allows unprivileged user
namespaces, and it owns the others) and forks the namespace's first process, its init. The init mounts a /proc of
the namespace and private tmpfs folders, capped in size, at /dev/shm and at the worker's TMPDIR; it waits until the
evaluator has moved it into the worker's cgroup, then forks the worker, and reaps every process of the namespace
until the worker exits. Then it kills the rest, tells the evaluator the worker's exit status and what was left in
its private folders, and leaves: whatever else lived in the namespace dies with it (the kernel ends a PID namespace
with its init), and its mounts and SysV IPC objects are freed.

So the worker and everything it starts name no process outside: prlimit, setpriority (PRIO_USER included),
sched_setaffinity, sched_setscheduler, kill, ptrace and pidfd_open of any other process fail with ESRCH, /proc lists
the namespace's processes alone (the init as 1, the worker as 2), and no port or abstract socket outside is
reachable. What the evaluator does to a worker (its /proc entries, signals, the cgroup) it does from outside, by
the worker's pid in the evaluator's namespace.

The worker is not the init itself: an init ignores every signal it has no handler for, even a SIGKILL it sends
itself, which would change what a file's os.kill(os.getpid(), ...) does. The init runs only harness code, holds
none of the evaluator's descriptors but its own pipes, and is not dumpable (no process of the worker's may ptrace
it even where Landlock is missing).

torch's CUDA IPC, by which the evaluator shares a GPU slot, keeps a reference count in a file the evaluator creates
in its /dev/shm and keeps mapped, which the worker opens when it lets go of a slot: before it sends slots the evaluator
asks the init to bind every file of /dev/shm that it holds open or mapped (`shared_files`) into the worker's private
/dev/shm (`Contained.expose`), and nothing else of it (supervisor.CUDA_HANDLES: before its slots and its clock's
words).

Where the kernel refuses (no unprivileged user namespaces, a /proc that may not be mounted again, NAMESPACES_ENV set
to "off"), a worker starts without namespaces and the sandbox line says why (`walls`). So it does on a machine with an
NVIDIA GPU unless NAMESPACES_ENV is "on": the slots reach a GPU worker through legacy CUDA IPC, whose handles are
reported not to cross PID namespaces (openucx/ucx #11514, NVIDIA/nccl #360), and whether they reach a child namespace
of the exporter's has not been measured yet.
"""
import ctypes
import errno
import functools
import gc
import json
import os
import select
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass

from .forked import close_all_but, fork, start

NAMESPACES_ENV = "NVFP4_ARENA_NAMESPACES"  # "off": workers start without namespaces of their own; "on": also on a GPU
GPU_NODE = "/dev/nvidiactl"  # an NVIDIA GPU's control node: there, no namespaces unless asked for (module docstring)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x08000000, 0x10000000, 0x20000000, \
    0x40000000
KINDS = ((CLONE_NEWPID, "processes"), (CLONE_NEWNS, "mounts"), (CLONE_NEWIPC, "IPC"), (CLONE_NEWNET, "network"))
TRIED = (CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET, CLONE_NEWPID | CLONE_NEWNS)  # most first
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
SHARED_MEMORY = "/dev/shm"
SHM_CAP = 1 << 30  # bytes a worker's private /dev/shm may hold (the harness's workers put nothing there)
TMPDIR_CAP = 4 << 30  # bytes its private TMPDIR may hold (compilers' intermediate files)
START_S = 10.0  # how long the keeper and the init may take to set the namespaces up
EXPOSE_S = 5.0  # how long the init may take to bind the evaluator's files


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source, target: str, kind, flags: int, data=None) -> None:
    encode = (lambda s: None if s is None else s.encode())
    _check(_libc().mount(encode(source), target.encode(), encode(kind), ctypes.c_ulong(flags), encode(data)),
           f"mount {target}")


def _unshare(flags: int) -> None:
    """Unshare `flags` (this process must be single-threaded); with a user namespace, map this user to itself."""
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc().unshare(flags), "unshare")
    if flags & CLONE_NEWUSER:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)


def _mount_private(private: list) -> None:
    """In the init: the namespace's own /proc, and each (folder, cap in bytes) a fresh tmpfs."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for folder, cap in private:
        mode = "1777" if folder == SHARED_MEMORY else "700"
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"size={cap},mode={mode}")


@dataclass(frozen=True)
class Walls:
    """The namespaces this evaluator gives each worker (flags 0: none, and why not)."""

    flags: int = 0
    why_not: str = ""

    def phrase(self) -> str:
        """What the sandbox line says of them."""
        if not self.flags:
            return f"no namespaces of its own ({self.why_not}): other processes of its user are within its reach"
        kinds = ", ".join(name for flag, name in KINDS if self.flags & flag)
        return (f"namespaces of its own ({kinds}): no process outside them within its reach; /dev/shm and TMPDIR its "
                f"own, at most {SHM_CAP >> 30} GiB and {TMPDIR_CAP >> 30} GiB, gone with it")


_WALLS: list = []  # this process's answer, once found


def walls() -> Walls:
    """What this kernel lets this process give a worker, tried once per process in a child of its own."""
    if not _WALLS:
        _WALLS.append(_try_walls())
    return _WALLS[0]


def _try_walls() -> Walls:
    if os.environ.get(NAMESPACES_ENV) == "off":
        return Walls(why_not=f"{NAMESPACES_ENV}=off")
    if os.path.exists(GPU_NODE) and os.environ.get(NAMESPACES_ENV) != "on":
        return Walls(why_not=f"a GPU here, whose CUDA IPC into a process namespace is not yet measured; "
                             f"{NAMESPACES_ENV}=on tries it")
    user = 0 if os.geteuid() == 0 else CLONE_NEWUSER
    why = "not tried"
    for flags in TRIED:
        why = _probe(flags | user)
        if not why:
            return Walls(flags | user)
    return Walls(why_not=why)


def _probe(flags: int) -> str:
    """'' where a child can unshare `flags` and its first child mount its /proc and a tmpfs; else the refusal."""
    probe = start(functools.partial(_try_in_child, flags))
    said = probe.stdout.read().decode(errors="replace")
    probe.stdout.close()
    code = probe.wait()
    return "" if code == 0 else (said or f"a probe exited with {code}")


def _try_in_child(flags: int, output: int) -> None:
    """In the probe's child: the namespaces and the mounts a worker's init makes; what refused them, to `output`."""
    try:
        _unshare(flags)
        init = os.fork()
        if init == 0:
            _mount_private([(SHARED_MEMORY, SHM_CAP)])
            os._exit(0)
        _, status = os.waitpid(init, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    except BaseException as exc:  # noqa: BLE001 - whatever refused it is the answer
        os.write(output, str(exc).encode() or type(exc).__name__.encode())
        os._exit(1)


def shared_files() -> list[str]:
    """The names of the files of /dev/shm that this process holds open or maps (torch's CUDA IPC reference counts)."""
    found = set()
    try:
        with open("/proc/self/maps") as f:
            found |= {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
        for fd in os.listdir("/proc/self/fd"):
            try:
                found.add(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                continue
    except OSError:
        return []
    prefix = SHARED_MEMORY + "/"
    return sorted({path[len(prefix):] for path in found if path.startswith(prefix) and "/" not in path[len(prefix):]})


class Refused(Exception):
    """The namespaces could not be set up for this worker."""


class Contained:
    """A worker in namespaces of its own, as the supervisor uses a process: its pid (the worker's, in the evaluator's
    namespace), its output, poll, wait and kill; and `init`, `expose(names)`, `left` (what the init found in the private
    folders when the worker had ended: {folder: (files, bytes)})."""

    def __init__(self, keeper: int, init: int, pid: int, stdout, status_fd: int, control: socket.socket):
        self.keeper, self.init, self.pid, self.stdout = keeper, init, pid, stdout
        self.status_fd, self.control, self.report = status_fd, control, b""
        self.returncode, self.left, self.keeper_done = None, {}, False

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                chunk = os.read(self.status_fd, 1 << 16)
            except BlockingIOError:
                chunk = None
            if chunk:
                self.report += chunk
            if chunk == b"" or self.report.endswith(b"\n"):
                self._settle(chunk == b"" and not self.report.endswith(b"\n"))
        if not self.keeper_done:
            try:
                self.keeper_done = os.waitpid(self.keeper, os.WNOHANG)[0] != 0
            except ChildProcessError:
                self.keeper_done = True
        return self.returncode

    def _settle(self, killed: bool) -> None:
        """The init's report read (or the init killed before it gave one: the worker went with it)."""
        os.close(self.status_fd)
        self.control.close()
        if killed:
            self.returncode = -signal.SIGKILL
            return
        report = json.loads(self.report)
        self.returncode = os.waitstatus_to_exitcode(report["status"])
        self.left = {folder: tuple(found) for folder, found in report["left"].items()}

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None or not self.keeper_done:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        """End the init, and with it everything in the namespace."""
        try:
            os.kill(self.init, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def expose(self, names: list[str]) -> None:
        """Have the init bind these files of the evaluator's /dev/shm into the worker's (before slots are sent)."""
        if self.returncode is not None or not names:
            return
        try:
            self.control.sendall(f"expose {json.dumps(names)}\n".encode())
            ready, _, _ = select.select([self.control], [], [], EXPOSE_S)
            if ready:
                self.control.recv(64)
        except OSError:
            pass


def launch(flags: int, become, pass_fds: tuple, admit, private: list) -> Contained:
    """Start `become(output)` (which never returns; output: the descriptor of its stdout and stderr) as a worker in
    new namespaces `flags`, with private folders `private` ((folder, cap in bytes)); `admit(pid)` is called with the
    init's pid before the init forks the worker (to move it into the worker's cgroup). Refused: the keeper or the
    init could not set them up."""
    output_r, output_w = os.pipe()
    status_r, status_w = os.pipe()
    report_r, report_w = os.pipe()
    ours, theirs = socket.socketpair()
    evaluator = os.getpid()
    keeper = fork()
    if keeper == 0:
        gc.disable()  # a collection could close a descriptor number this process has closed and reused
        try:
            start_init = functools.partial(_init, become, theirs, status_w, output_w, pass_fds, private)
            _keeper(flags, evaluator, report_w, start_init, {*pass_fds, output_w, status_w, theirs.fileno()})
        finally:
            os._exit(1)
    for fd in (output_w, status_w, report_w):
        os.close(fd)
    theirs.close()
    try:
        init = int(_read_line(report_r, "the keeper"))
        said = _read_line(ours.fileno(), "the init")
        if said != "ready":
            raise Refused(said)
        admit(init)
        ours.sendall(b"go\n")
        worker = _first_child(init)
        ours.sendall(b"found\n")
    except BaseException:
        for fd in (output_r, status_r):
            os.close(fd)
        ours.close()
        _end(keeper)
        raise
    finally:
        os.close(report_r)
    os.set_blocking(status_r, False)
    return Contained(keeper, init, worker, os.fdopen(output_r, "rb"), status_r, ours)


def _read_line(fd: int, who: str) -> str:
    """One line from `fd` within START_S, read a byte at a time (what follows it is another message); Refused where
    none comes."""
    data, deadline = b"", time.monotonic() + START_S
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 1) if ready else None
        if not chunk:
            raise Refused(f"{who} {'said nothing' if chunk is None else 'left'} while setting up the namespaces"
                          + (f": {data.decode(errors='replace')}" if data else ""))
        data += chunk
    text = data.decode(errors="replace").strip()
    if text.startswith("refused "):
        raise Refused(text[len("refused "):])
    return text


def _first_child(pid: int) -> int:
    """The pid (in this namespace) of the init's first child, the worker, once it exists (the init does not reap it
    before it is told it was found)."""
    from .supervisor import children_of
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        found = children_of(pid)
        if found:
            return min(found)
        time.sleep(0.001)
    raise Refused("the init forked no worker")


def _end(keeper: int) -> None:
    try:
        os.kill(keeper, signal.SIGKILL)
        os.waitpid(keeper, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _keeper(flags: int, evaluator: int, report: int, start_init, keep: set) -> None:
    """In the keeper (the evaluator's child, outside the namespaces): unshare, fork the init, say its pid, wait. It
    and the init keep the evaluator's stderr, for a failure of their own; stdin and stdout lead nowhere."""
    _libc().prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL))
    if os.getppid() != evaluator:
        os._exit(1)
    nowhere = os.open(os.devnull, os.O_RDWR)
    os.dup2(nowhere, 0)
    os.dup2(nowhere, 1)
    close_all_but({0, 1, 2, report, *keep})
    try:
        _unshare(flags)
        init = os.fork()
    except OSError as exc:
        os.write(report, f"refused {exc}\n".encode())
        os._exit(1)
    if init == 0:
        os.close(report)
        start_init()
    os.write(report, f"{init}\n".encode())
    close_all_but({0, 1, 2})
    os.waitpid(init, 0)
    os._exit(0)


def _init(become, control: socket.socket, status: int, output: int, pass_fds: tuple, private: list) -> None:
    """The namespace's init (pid 1): its /proc and private folders, then the worker (pid 2), reaped; its report."""
    libc = _libc()
    libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL))
    try:
        host_shm = os.open(SHARED_MEMORY, os.O_RDONLY | os.O_DIRECTORY)  # the evaluator's, before it is covered
        _mount_private(private)
    except OSError as exc:
        control.sendall(f"refused {exc}\n".encode())
        os._exit(1)
    libc.prctl(PR_SET_DUMPABLE, ctypes.c_ulong(0))
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})  # every other signal stays held (forked.fork)
    control.sendall(b"ready\n")
    if _read_line(control.fileno(), "the evaluator") != "go":
        os._exit(1)
    worker = os.fork()
    if worker == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (host_shm, wake_r, wake_w, status, control.fileno()):
            os.close(fd)
        become(output)
    os.close(output)
    for fd in pass_fds:
        os.close(fd)
    if _read_line(control.fileno(), "the evaluator") != "found":  # until then the worker is not reaped, even if it
        os._exit(1)  # has ended, so that the evaluator finds its pid
    exposed = set()
    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        ended = _reap(worker)
        if ended is not None:
            _finish(status, ended, private, exposed)
        if control in ready:
            try:
                line = _read_line(control.fileno(), "the evaluator")
            except Refused:  # the evaluator is gone
                _finish(status, signal.SIGKILL, private, exposed)
            exposed |= _expose(host_shm, set(json.loads(line.split(" ", 1)[1])) - exposed)
            control.sendall(b"exposed\n")


def _reap(worker: int) -> int | None:
    """Reap every child that has ended; the worker's wait status once it is among them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if pid == 0:
            return None
        if pid == worker:
            return status


def _finish(status: int, worker_status: int, private: list, exposed: set) -> None:
    """The worker has ended: kill every other process of the namespace, reap them, report, leave."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
    left = {folder: _contents(folder, exposed if folder == SHARED_MEMORY else set()) for folder, _ in private}
    os.write(status, (json.dumps({"status": worker_status, "left": left}) + "\n").encode())
    os._exit(0)


def _contents(folder: str, skip: set) -> tuple[int, int]:
    """(files, bytes allocated) under `folder`, not following links, `skip` (names at its top) left out."""
    files = allocated = 0
    for top, folders, names in os.walk(folder):
        if top == folder:
            names = [n for n in names if n not in skip]
        for name in names + [f for f in folders if os.path.islink(os.path.join(top, f))]:
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            files += 1
            allocated += info.st_blocks * 512
    return files, allocated


def _expose(host: int, names: set) -> set:
    """Bind each named file of the evaluator's /dev/shm (a regular file of this user's) over a file of that name in
    the private one, made here (a link or a folder the worker put there is left alone, and so is the name); the names
    bound."""
    made = set()
    for name in names:
        if "/" in name:
            continue
        try:
            source = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=host)
        except OSError:
            continue
        try:
            info = os.fstat(source)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                continue
            target = os.open(os.path.join(SHARED_MEMORY, name),
                             os.O_CREAT | os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
            try:
                if not stat.S_ISREG(os.fstat(target).st_mode):
                    continue
                _mount(f"/proc/self/fd/{source}", f"/proc/self/fd/{target}", None, MS_BIND)
                made.add(name)
            finally:
                os.close(target)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EISDIR, errno.EPERM, errno.EACCES, errno.ENOENT):
                raise
        finally:
            os.close(source)
    return made
