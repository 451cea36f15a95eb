"""The evaluator's end of a worker process: start it confined, talk to it against the evaluator's own clock,
end it and every process it started.

A worker is a fresh `python -m harness.worker` (or, in an evaluator forked from a standing one, a fork of the
evaluator: harness.evaluator.forked) in a session of its own, dying with the evaluator (parent-death
signal; every live worker is killed when the evaluator exits, on SIGTERM or Ctrl-C too). Where the kernel allows
it, it runs in namespaces of its own (harness.evaluator.namespaces): no process outside is within its reach, and
everything it starts lives and dies in them. Messages travel as JSON lines on one socket pair (harness.channel);
every read has a deadline, so a submission that writes garbage, or nothing, gets a verdict within its timeout.
Without namespaces the evaluator is the reaper of last resort: it is a child subreaper (Linux), so a process the
worker starts and orphans, even one in a new session, is re-parented here and killed when the worker is stopped, and
`descendants()` lists any such process while the worker runs. Where the kernel lets the evaluator make one, each
worker also runs in a cgroup of its own (harness.evaluator.cgroup), which ends every process it started at once,
however fast they fork, and counts their CPU time, theirs that have ended included (`cpu_usage_ns`). The worker's
stdout and stderr are drained by a thread and forwarded up to a cap.
"""
import atexit
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from .. import channel
from ..rules import TIMEOUT_S
from . import forked
from .cgroup import WorkerCgroup
from .namespaces import NAMESPACES_ENV, SHARED_MEMORY, SHM_CAP, TMPDIR_CAP, Contained, Refused, Walls, launch, shared_files, walls
from .sandbox import remove_build_locks, trim_build_cache, worker_environment

STARTUP_GRACE_S = 60.0  # interpreter, torch import and CUDA context, on top of the case timeout
LOAD_GRACE_S = 60.0  # the import of the file (its builds), on top of the case timeout
BUILD_LOCK_STALE_S = 2 * (max(TIMEOUT_S.values()) + STARTUP_GRACE_S + LOAD_GRACE_S)  # a build lock older than this
# outlived its worker: no worker goes half as long without an answer, and none answering builds
OUTPUT_CAP = 1 << 20  # bytes of a worker's own output forwarded to the evaluator's stderr
TAIL = 2000  # characters of the worker's last output kept for crash messages
PR_SET_CHILD_SUBREAPER = 36
CUDA_HANDLES = ("slots", "clock")  # the messages that hand a worker CUDA IPC handles of the evaluator's memory
_LIVE = set()


class Verdict(Exception):
    """A finding that ends a job: status and message for the record."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def become_subreaper() -> bool:
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


SUBREAPER = become_subreaper()


def stat_fields(pid: int, tid: int | None = None) -> list[str] | None:
    """The fields of /proc/<pid>/stat (or of its thread tid's) after the command name: the state, field 3 of
    proc(5), is at index 0. None where the process is gone or the file unreadable."""
    try:
        with open(f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _parents() -> dict:
    """{pid: parent pid} of every process this user can see (Linux /proc)."""
    out = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        fields = stat_fields(int(entry)) if entry.isdigit() else None
        if fields and fields[1].lstrip("-").isdigit():
            out[int(entry)] = int(fields[1])
    return out


def children_of(pid: int) -> list[int]:
    """A process's children, zombies included, read from its threads' children lists (fast enough to catch a process
    that forks and exits every few hundred µs), or from a scan of /proc where the kernel keeps no such lists."""
    found, listed = [], False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(child) for child in f.read().split()]
            listed = True
        except OSError:
            continue
    return found if listed else [child for child, parent in _parents().items() if parent == pid]


def _own_children() -> list[int]:
    return children_of(os.getpid())


def tree(root: int) -> set[int]:
    """Every descendant of `root`, zombies included (not `root` itself)."""
    found, frontier = set(), [root]
    while frontier:
        frontier = [child for pid in frontier for child in children_of(pid) if child not in found]
        found.update(frontier)
    return found


def cpu_ticks(pid: int) -> int:
    """A process's CPU time in clock ticks, its reaped children's included (utime, stime, cutime, cstime); a zombie's
    is kept until it is reaped. 0 where it is gone."""
    fields = stat_fields(pid)
    try:
        return sum(int(v) for v in fields[11:15])
    except (TypeError, ValueError):
        return 0


def identity(pid: int) -> tuple[int, int | None]:
    """A process as (pid, start time in ticks since boot): a pid alone may name another process once the first has
    ended and the pid been reused."""
    fields = stat_fields(pid)
    return pid, int(fields[19]) if fields and len(fields) > 19 else None


def _children() -> list[int]:
    """This process's live children: those a worker's orphans are told apart from."""
    return [pid for pid in _own_children() if not _is_zombie(pid)]


def _death_message(code: int | None) -> str:
    if code is None:
        return "worker vanished"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crashed: the worker process was killed by {name}"
    return f"crashed: the worker process exited with code {code} before reporting a result"


CONTROLS = [c for c in range(32) if c not in (9, 10)] + [127]  # terminal controls but tab and line feed
VISIBLE = bytes(ord("?") if b in CONTROLS else b for b in range(256))  # for raw output bytes
VISIBLE_TEXT = {c: "?" for c in [*CONTROLS, *range(0x80, 0xA0)]}  # for text, its C1 controls too


def printable(chunk: bytes) -> bytes:
    """A worker's output with terminal controls (escape sequences, carriage returns, backspaces) shown as "?":
    they could otherwise redraw the lines where the evaluator reports verdicts."""
    return chunk.translate(VISIBLE)


def shown(message):
    """A worker's message with every string in it shown as printable does output: its texts become verdict
    messages and records, which views print."""
    if isinstance(message, str):
        return message.translate(VISIBLE_TEXT)
    if isinstance(message, dict):
        return {shown(k): shown(v) for k, v in message.items()}
    if isinstance(message, list):
        return [shown(v) for v in message]
    return message


class _Output(threading.Thread):
    """Drains a worker's stdout and stderr: forwards up to OUTPUT_CAP bytes with terminal controls made visible
    (printable), keeps the tail."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.forwarded, self.dropped, self.tail = stream, 0, 0, b""

    def run(self):
        while chunk := self.stream.read1(1 << 16):
            self.tail = (self.tail + chunk)[-TAIL:]
            keep = chunk[:max(0, OUTPUT_CAP - self.forwarded)]
            self.forwarded += len(keep)
            self.dropped += len(chunk) - len(keep)
            if keep:
                try:
                    sys.stderr.buffer.write(printable(keep))
                    sys.stderr.flush()
                except (OSError, ValueError, AttributeError):
                    pass


class WorkerProcess:
    """One worker: started confined; the caller awaits wait_ready() (doing its own set-up meanwhile), then
    calibrates and sends "load"."""

    def __init__(self, task: str, path: str, timeout_s: float, confined: bool = True):
        self.timeout_s = timeout_s
        self.preexisting = {identity(pid) for pid in _children()}
        ours, theirs = socket.socketpair()
        self.fd = ours.detach()
        env, self.writable, self.scratch = worker_environment([path])
        self.started = time.time()
        self.loaded = False  # told to import the file: from then on it may hold a build lock in its build cache
        stale = remove_build_locks(self.cache, made_before=self.started - BUILD_LOCK_STALE_S)
        if stale:
            print(f"[nvfp4-arena: removed {len(stale)} build lock(s) that an earlier worker killed mid-build left in "
                  f"the file's build cache, e.g. {stale[0]}]", file=sys.stderr)
        fds = (theirs.fileno(),)

        def become(parent: int):
            args = ["--task", task, "--channel", str(fds[0]), "--parent", str(parent),
                    *[f"--writable={w}" for w in self.writable], *([] if confined else ["--unconfined"]), "--",
                    str(path)]
            return forked.worker(args, env, fds, fresh=not forked.possible())
        self.ready = False  # said "ready": it reads the channel, so it can be asked to leave
        self.mapping = False  # the last message sent handed it CUDA IPC handles
        self.listed = False  # its processes are its cgroup's (descendants)
        self.cgroup = WorkerCgroup.create()  # the worker moves in before it imports anything of the file (it
        # waits for "load" first)
        self.walls = walls() if confined else Walls(why_not="--unconfined")
        self.process = None
        if self.walls.flags:
            try:
                self.process = launch(self.walls.flags, become(1), fds, self._admit,
                                      [(SHARED_MEMORY, SHM_CAP), (self.scratch.name, TMPDIR_CAP)])
            except Refused as exc:
                self.walls = Walls(why_not=f"refused: {exc}")
        if self.process is None:
            self.process = forked.start(become(os.getpid()))
            self._admit(self.process.pid)
        self.identity = identity(self.process.keeper if self.contained else self.process.pid)
        theirs.close()
        _LIVE.add(self)
        self.reader = channel.Reader(self.fd)
        self.output = _Output(self.process.stdout)
        self.output.start()

    @property
    def cache(self) -> Path:
        """The file's build cache, one of the two folders the worker may write."""
        return Path(self.writable[1])

    @property
    def contained(self) -> bool:
        """In namespaces of its own (harness.evaluator.namespaces)."""
        return isinstance(self.process, Contained)

    def _admit(self, pid: int) -> None:
        """Move `pid` (the worker, or its namespace's init) into the worker's cgroup; without it if the kernel
        refuses."""
        if self.cgroup and not self.cgroup.add(pid):
            self.cgroup = None

    def wait_ready(self):
        """The worker's "ready": its interpreter, torch and CUDA context up, confined; its sandbox and the contest
        clear's duration as it reported them."""
        ready = self.expect(("ready",), time.monotonic() + self.timeout_s + STARTUP_GRACE_S)
        self.ready = True
        self.sandbox = "; ".join([str(ready.get("sandbox", "none: unreported")), self.walls.phrase(),
                                  *(["its processes in a cgroup of their own"] if self.cgroup else [])])
        self.listed = bool(self.cgroup) and ready.get("cgroup_bound") is True  # said before any code of the file ran
        self.clear_ns = ready.get("clear_ns") if isinstance(ready.get("clear_ns"), (int, float)) else None

    def send(self, kind: str, fds: tuple = (), **payload):
        if kind in CUDA_HANDLES and self.contained:
            self.process.expose(shared_files())  # the evaluator's CUDA IPC files, into the worker's own /dev/shm
        self.mapping = kind in CUDA_HANDLES
        self.loaded = self.loaded or kind == "load"
        try:
            channel.send(self.fd, kind, fds=fds, **payload)
        except OSError:
            raise Verdict("crash", self._death()) from None

    def expect(self, kinds: tuple, deadline: float, patient: bool = False) -> dict | None:
        """The next message, which must be one of `kinds`; otherwise a Verdict (crash, timeout, tampered, error).
        patient: None instead of a timeout verdict when the deadline passes."""
        try:
            message = self.reader.receive(deadline)
        except channel.Closed:
            raise Verdict("crash", self._death()) from None
        except channel.Garbled as exc:
            raise Verdict("tampered", f"the channel carried something other than the harness's messages ({exc}): "
                                      "the submission wrote to a file descriptor it did not open") from None
        if message is None:
            if patient:
                return None
            raise Verdict("timeout", f"timed out: no answer from the worker within {self.timeout_s:g} s; "
                                     "the worker was killed")
        message = shown(message)
        if message["kind"] in kinds:
            return message
        if message["kind"] == "error" and "error" not in kinds:
            raise Verdict("error", str(message.get("message", "")) + self._mapping_hint())
        if message["kind"] == "fatal":
            raise Verdict("error", str(message.get("message", "the worker could not start")))
        raise Verdict("tampered", f"an unexpected '{message['kind']}' message arrived from the worker")

    def _mapping_hint(self) -> str:
        """What to try where a worker in namespaces could not map the evaluator's CUDA memory (CUDA IPC across them
        is not shown on every GPU machine yet)."""
        if not (self.mapping and self.contained):
            return ""
        return (f" (the worker maps the evaluator's CUDA memory from inside namespaces of its own; where this GPU's "
                f"CUDA IPC refuses them, {NAMESPACES_ENV}=off starts workers without, and the sandbox line says so)")

    def freeze(self, frozen: bool) -> None:
        """Stop the worker and every process it started (SIGSTOP), or let them go on (SIGCONT): a worker waiting
        for its turn among others (diff --measure) takes no CPU from the one being timed. Stopping lists them again
        until every one listed shows stopped, so that a child forked meanwhile is stopped too."""
        sig = signal.SIGSTOP if frozen else signal.SIGCONT
        deadline = time.monotonic() + FREEZE_WAIT_S  # a signal takes effect when its process is next scheduled
        signalled = set()
        while True:
            targets = [self.process.pid, *self.descendants()]
            for send, target in [(os.killpg, self.process.pid), *((os.kill, pid) for pid in targets[1:])]:
                if target in signalled and frozen:
                    continue
                signalled.add(target)
                try:
                    send(target, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            if not frozen or time.monotonic() > deadline or not any(_running(pid) for pid in targets):
                return
            time.sleep(0.001)

    def descendants(self) -> list[int]:
        """Processes the worker started that are still alive (see processes())."""
        return sorted(pid for pid in self.processes() - {self.process.pid} if not _is_zombie(pid))

    def processes(self) -> set[int]:
        """The worker and every process it started, zombies included: the processes in its cgroup where it has one and
        its sandbox keeps every process in it (harness.worker.confine.Confinement), one listing; else those of its
        namespace (the init's descendants; the init is not among them); else its descendants and the orphans
        re-parented here, from a scan of every process (also where the listing cannot be read)."""
        listed = self.cgroup.pids() if self.listed else None
        if listed is not None:
            return set(listed) - ({self.process.init} if self.contained else set())
        if self.contained:
            return tree(self.process.init)
        parents = _parents()
        ours = {self.process.pid}
        for _ in range(64):
            grown = ours | {pid for pid, parent in parents.items() if parent in ours}
            if grown == ours:
                break
            ours = grown
        others = self._not_its_own()
        return ours | {pid for pid, parent in parents.items() if parent == os.getpid() and identity(pid) not in others}

    def cpu_usage_ns(self) -> int | None:
        """The CPU time of every process the worker has run, those that have ended included, from its cgroup; None
        without one."""
        return self.cgroup.usage_ns() if self.cgroup else None

    def cpu_ticks(self) -> int:
        """The same in clock ticks, from the processes themselves: the live ones and the zombies, each with the
        children it reaped, and the namespace's init with the orphans it reaped."""
        return sum(cpu_ticks(pid) for pid in self.processes() | ({self.process.init} if self.contained else set()))

    def _not_its_own(self) -> set:
        """Children of the evaluator this worker did not start, by identity: live workers, and those alive before
        it (not a later process that reuses one of their pids)."""
        return {w.identity for w in _LIVE} | self.preexisting

    def _death(self) -> str:
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        tail = printable(self.output.tail).decode(errors="replace").strip()
        return _death_message(code) + (f"\nlast output:\n{tail}" if tail else "")

    def stop(self):
        """Ask the worker to leave (one that never said ready reads nothing yet), then kill it, its process group,
        its cgroup and every process it left behind."""
        if self not in _LIVE:
            return
        _LIVE.discard(self)
        if self.ready and self.process.poll() is None:
            try:
                channel.send(self.fd, "stop")
                self.process.wait(2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        stray = self.descendants()
        for target in (lambda: os.killpg(self.process.pid, signal.SIGKILL), lambda: self.process.kill()):
            try:
                target()
            except (ProcessLookupError, PermissionError):
                pass
        if self.cgroup:
            self.cgroup.remove()
        self.process.wait()
        if not self.contained:  # in namespaces, nothing of the worker's can be re-parented here
            kill_strays(stray, spare=self._not_its_own())
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.output.join(5)
        self.scratch.cleanup()
        removed = [f"{files} file(s), {size / (1 << 20):.1f} MiB, that it left in its "
                   + ("own /dev/shm" if folder == SHARED_MEMORY else "TMPDIR")
                   for folder, (files, size) in (self.process.left.items() if self.contained else []) if files]
        if not any(w.loaded and w.cache == self.cache for w in _LIVE):  # no other worker may be building there
            locks = remove_build_locks(self.cache, made_after=self.started)
            if locks:
                removed.append(f"{len(locks)} build lock(s) of a build it did not finish, in its build cache")
        trimmed = trim_build_cache(self.cache)
        for said in ([f"removed {' and '.join(removed)}"] if removed else []) + ([trimmed] if trimmed else []):
            print(f"[nvfp4-arena: {said}]", file=sys.stderr)
        if self.output.dropped:
            print(f"[nvfp4-arena: {self.output.dropped:,} more bytes of the submission's output were dropped]",
                  file=sys.stderr)


STRAY_KILL_S = 5.0  # how long stop() keeps killing what a worker left behind
QUIET_SCANS = 200  # consecutive scans that found no stray child: the strays are gone


def kill_strays(pids: list, spare: set = frozenset()):
    """SIGKILL the given processes, then every child of this process outside `spare` (by identity(); the orphans of
    a worker's descendants are re-parented here) and reap it, scan after scan, until QUIET_SCANS scans in a row find
    none alive or STRAY_KILL_S pass: a process that keeps forking and leaving its child behind is caught as a child
    here, and the exited links of its chain do not pile up as zombies."""
    deadline, quiet = time.monotonic() + STRAY_KILL_S, 0
    while quiet < QUIET_SCANS and time.monotonic() < deadline:
        alive = 0
        for pid in pids:
            if identity(pid) in spare:
                continue
            if not _is_zombie(pid):
                alive += 1
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        quiet = 0 if alive else quiet + 1
        pids = _own_children()


FREEZE_WAIT_S = 0.5  # how long freeze() waits for the stopped processes to show as stopped


def _running(pid: int) -> bool:
    """Neither stopped nor gone (a process whose SIGSTOP has not yet taken effect reads R or S)."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] not in ("T", "t", "Z", "X")


def _is_zombie(pid: int) -> bool:
    """Gone or a zombie; not a process whose main thread exited while others run on (its state reads Z too)."""
    fields = stat_fields(pid)
    if not fields:
        return True
    if fields[0] != "Z":
        return False
    try:
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True


_SPARES: dict = {}  # (task, path, confined) -> workers started before the evaluations that will take them, in turn


def start_spares(task: str, path: str, confined: bool, count: int) -> None:
    """Workers for this file's next `count` evaluations, all started now, so that their interpreters, torch and CUDA
    contexts come up together (harness.evaluator.runner: the test mode's and the benchmark's at once). They import
    nothing of the file until an evaluation takes one and says "load"."""
    spares = _SPARES.setdefault((task, str(path), confined), [])
    while len(spares) < count:
        spares.append(WorkerProcess(task, path, STARTUP_GRACE_S, confined))


def take_spare(task: str, path: str, timeout_s: float, confined: bool) -> "WorkerProcess | None":
    """The oldest spare started for this file, now with this evaluation's timeout; None if there is none."""
    spares = _SPARES.get((task, str(path), confined))
    if not spares:
        return None
    worker = spares.pop(0)
    worker.timeout_s = timeout_s
    return worker


def drop_spares() -> None:
    """Stop the spares no evaluation took (the run ended before the modes they were started for)."""
    while _SPARES:
        for worker in _SPARES.popitem()[1]:
            worker.stop()


def stop_all():
    """Kill every live worker (the evaluator is leaving)."""
    for worker in list(_LIVE):
        worker.stop()


atexit.register(stop_all)
