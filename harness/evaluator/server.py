"""A standing evaluator (`python run.py serve`): one process that imports torch, the harness and Triton's cache key
once, and forks a fresh evaluator for each run that a command line of this checkout hands it (harness.forward).

Each run still has an evaluator process of its own, with its own CUDA context, seeds and workers: the forked
evaluator takes the command line's arguments, folder, environment and terminal, and runs them as run.py would. It
starts its workers by fork too (harness.evaluator.forked), before it starts the CUDA driver, so neither side of a
run pays a new interpreter's start and import of torch. This process itself never starts the driver, never draws a
seed and never imports a submission.

Who may ask for a run: a process of this user, no more confined than this one, that does not descend from it
(harness.peers, which binds what it reads of the process to a pidfd). Every process a run starts descends from it
while it lives: the forked evaluator is a child subreaper (a worker's orphans come back to it), and so is this
process (the orphans of an evaluator killed outright come here, and are killed). So a submission cannot have a run
of its choosing started, outside its sandbox; where Landlock scopes abstract unix sockets (ABI 6 and later), its
worker cannot even connect, for the socket is abstract. Its name comes from the user and the checkout's path
(harness.forward.address). A worker can bind that name before a server does, so a command line checks the
listener the same way before it hands anything over.

A run takes on the command line's own limits, scheduling, nice value, CPU affinity and umask
(harness.evaluator.caller), as its folder and environment, not what this process holds: another process of its user
may have changed those (a worker cannot: it names no process outside its namespaces, harness.evaluator.namespaces).

Code changed under it: every request compares a digest of the checkout's harness sources with the one taken when it
started. If they differ the request is declined (the command line then runs the job itself) and this process starts
itself again once no run is in flight, keeping its listening socket (and so its name) across the restart.
"""
import atexit
import ctypes
import hashlib
import importlib
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from .. import channel
from ..forward import ADDRESS_ENV, OFF, SIGNALS, address, interpreter
from ..paths import ROOT
from ..peers import Peer, supported
from . import forked
from .caller import CallerState
from .cgroup import own_folder, remove_stale
from .namespaces import walls
from .supervisor import _own_children, become_subreaper

REQUEST_S = 2.0  # how long a connected command line may take to send its request
POLL_S = 0.5  # how often the loop reaps finished runs while no request arrives
LISTENER_ENV = "NVFP4_ARENA_SERVER_SOCKET"  # the listening socket's descriptor, kept across a restart
SOURCES = ("run.py", "task.py", "leaderboard_shapes.yaml", "harness", "reference")  # what a digest covers
WARM = ("torch", "numpy", "pandas", "triton", "harness.device", "harness.stream_words", "harness.precheck",
        "harness.evaluator.runner", "harness.views.report", "harness.views.previous", "harness.worker.__main__",
        "harness.worker.confine", "harness.worker.sample", "harness.worker.explain", "harness.layout")
PR_SET_PDEATHSIG = 1


class ServerError(Exception):
    """The standing evaluator cannot start (another one serves this checkout, say)."""


def source_digest(root: Path = ROOT) -> str:
    """A digest of the checkout's harness, references, tasks and command line: the code a forked run executes."""
    digest = hashlib.sha256()
    for name in SOURCES:
        top = root / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.suffix in (".py", ".yaml"))
        for path in files:
            try:
                data = path.read_bytes()
            except OSError:
                data = b""
            digest.update(f"{path.relative_to(root)}\0{len(data)}\0".encode() + data)
    return digest.hexdigest()


def warm() -> None:
    """Import what every run imports, compute Triton's cache key, and find which namespaces a worker may have; none
    of it starts the CUDA driver."""
    walls()
    for name in WARM:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    from harness.startup import triton_key
    triton_key()


def caller(conn: socket.socket) -> tuple[str | None, CallerState | None]:
    """Why the process that connected may not ask for a run, or None (harness.peers); and its state, read before the
    peer check finds that process still alive."""
    try:
        peer = Peer.of(conn)
    except OSError:
        return "the kernel did not say which process connected", None
    state = CallerState.of(peer.pid)
    why = peer.refusal(ancestor=os.getpid())
    return why or (None if state else "its limits, scheduling or umask could not be read"), state


class Server:
    """The listening socket, the runs in flight, and whether the code under it changed."""

    def __init__(self, run, log, digest: str):
        self.run, self.log, self.pid, self.digest, self.python = run, log, os.getpid(), digest, interpreter()
        self.runs = {}  # pid -> the command line it runs
        self.stale = False
        name = address()
        if name is None:
            raise ServerError(f"{ADDRESS_ENV}={OFF}: forwarding is off, so a standing evaluator would serve nothing")
        kept = os.environ.pop(LISTENER_ENV, None)  # this process started itself again: the name never went free
        if kept is not None:
            self.listener = socket.socket(fileno=int(kept))
            os.set_inheritable(self.listener.fileno(), False)
            return
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.listener.bind(name)
        except OSError:
            self.listener.close()
            raise ServerError("a standing evaluator already serves this checkout") from None
        self.listener.listen(16)

    def loop(self) -> None:
        while not (self.stale and not self.runs):
            self.reap()
            ready, _, _ = select.select([self.listener], [], [], POLL_S)
            if ready:
                conn, _ = self.listener.accept()
                with conn:
                    self.answer(conn)
        self.log("the harness's sources changed: starting again")
        os.set_inheritable(self.listener.fileno(), True)  # kept bound: no worker can take the name meanwhile, and
        os.environ[LISTENER_ENV] = str(self.listener.fileno())  # command lines wait in its queue for the new code
        os.execv(sys.executable, [sys.executable, *sys.argv])

    def answer(self, conn: socket.socket) -> None:
        why, state = caller(conn)
        request, fds = (None, []) if why else _request(conn)
        try:
            why = why or self.declines(request, fds)
            if why is None:
                try:
                    pid = forked.fork()
                except OSError as exc:
                    why = f"it could not fork ({exc})"
            if why is not None:
                self.log(f"declined a request: {why}")
                _send(conn, "declined", why=why)
                return
            if pid == 0:
                try:
                    evaluate(self, conn, request, fds, state)
                finally:
                    os._exit(1)
            self.runs[pid] = " ".join(request["argv"])
            self.log(f"run {pid}: {self.runs[pid]}")
        finally:
            for fd in fds:
                os.close(fd)

    def declines(self, request: dict | None, fds: list) -> str | None:
        """Why a request from an allowed process is not served, or None."""
        if request is None or request["kind"] != "request" or len(fds) != 3:
            return "no request arrived"
        env = request.get("env")
        if not (isinstance(request.get("argv"), list) and all(isinstance(a, str) for a in request["argv"])
                and isinstance(request.get("cwd"), str) and isinstance(env, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            return "a malformed request"
        if request.get("python") != self.python:
            return "its Python (executable or PYTHON* variables) is not this server's"
        if self.stale or source_digest() != self.digest:
            self.stale = True
            return "the harness's sources changed since it started; it starts again"
        return None

    def reap(self) -> None:
        """Collect finished runs; kill any other child (what an evaluator killed outright left behind)."""
        for pid in _own_children():
            if pid not in self.runs:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.runs:
                code = os.waitstatus_to_exitcode(status)
                self.log(f"run {pid} ended: " + (f"exit {code}" if code >= 0 else signal.Signals(-code).name))
                del self.runs[pid]
                base = own_folder()
                if base is not None:
                    remove_stale(base)


def _request(conn: socket.socket) -> tuple[dict | None, list]:
    """The request on a new connection and the descriptors that came with it (None: nothing whole in time)."""
    reader = channel.Reader(conn.fileno(), take_fds=True)
    try:
        request = reader.receive(time.monotonic() + REQUEST_S)
    except (OSError, channel.Closed, channel.Garbled):
        request = None
    reader.close()
    return request, reader.fds


def _send(conn: socket.socket, kind: str, **payload) -> None:
    try:
        channel.send(conn.fileno(), kind, **payload)
    except OSError:
        pass


def evaluate(server: Server, conn: socket.socket, request: dict, fds: list, state: CallerState) -> None:
    """The forked evaluator: take the command line's state (or decline the run), terminal, folder and environment,
    run its arguments as run.py would, and hand back the exit status."""
    server.listener.close()
    why = state.take_on()
    if why is not None:
        server.log(f"run {os.getpid()} declined: {why}")
        _send(conn, "declined", why=why)
        os._exit(0)
    os.setsid()  # the server's terminal signals are not this run's; the command line passes its own on
    forked.name_process(b"nvfp4-run")
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != server.pid:  # it died before the signal was asked for
        os._exit(1)
    become_subreaper()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    forked.fresh_signals_and_streams()
    forked.enable()
    _send(conn, "started", pid=os.getpid())
    threading.Thread(target=_pass_on_signals, args=(conn,), daemon=True).start()
    sys.argv = [sys.argv[0], *request["argv"]]
    try:
        code = server.run()
    except BaseException:  # noqa: BLE001 - a harness bug: shown as a cold run shows it, its workers stopped
        traceback.print_exc()
        atexit._run_exitfuncs()
        code = 1
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the command line leaves once it has the status
    _send(conn, "exit", code=code)
    os._exit(code)


def _pass_on_signals(conn: socket.socket) -> None:
    """The command line's signals, raised here; its end of the connection closed (it was killed): SIGTERM."""
    reader = channel.Reader(conn.fileno())
    while True:
        try:
            message = reader.receive(float("inf"))
        except (channel.Closed, channel.Garbled):
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if message["kind"] == "signal" and message.get("signum") in [int(s) for s in SIGNALS]:
            os.kill(os.getpid(), message["signum"])


def serve(run, log) -> None:
    """Warm up, then serve this checkout's runs until interrupted. `run()` runs sys.argv as run.py does and returns
    its exit status; `log(text)` reports each request. ServerError: it cannot listen."""
    if forked.driver_started():
        raise ServerError("this process has started the CUDA driver, which a forked run could not use")
    if not supported():
        raise ServerError("this kernel (before Linux 6.5) does not say which process is at a socket's other end, "
                          "so the standing evaluator could not tell a command line from a submission")
    become_subreaper()
    started = time.monotonic()
    digest = source_digest()  # before the imports: a change made while they run is seen at the first request
    warm()
    if forked.driver_started():
        raise ServerError("warming up started the CUDA driver, which a forked run could not use")
    server = Server(run, log, digest)
    log(f"serving {ROOT} (warm in {time.monotonic() - started:.1f} s): its runs now start here; Ctrl-C stops it")
    server.loop()
