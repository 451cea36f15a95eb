"""How a worker process comes to be: forked from the evaluator, and then either a fresh interpreter (`python -m
harness.worker`, exec'd) or, where the evaluator has torch imported and no CUDA driver started, the worker's main
itself, which skips a new interpreter's start and its import of torch (about 2 s on the device machines).

Only an evaluator forked from a standing one (harness.evaluator.server) turns the second on (`enable`). Either way
the child becomes what a fresh interpreter would be when the worker's main starts (`worker`): a session of its own,
stdin from /dev/null, stdout and stderr into the evaluator's pipe, the worker's environment and the repository as
its folder, default signal handlers and none of the evaluator's exit handlers. It keeps no descriptor of the
evaluator's but the one it is passed (the channel): not the standing evaluator's socket, not the connection to the
command line that asked for the run, not the terminal. The supervisor runs it either as the evaluator's child
(`start`) or as the first child of a namespace's init (harness.evaluator.namespaces).

A child that does not exec holds a copy of the evaluator's memory as it was at the fork. So the evaluator lets it
skip the exec only before it has drawn a secret (harness.evaluator.seeds.drawn) and before this process has started
the CUDA driver, which does not survive a fork (`possible`); otherwise (a worker replaced after a failed job, say)
the child execs a fresh interpreter at once.
"""
import atexit
import ctypes
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings

from ..paths import ROOT
from . import seeds

_ENABLED = False
DRIVER = "libcuda.so"  # the CUDA driver's library
CUDA_ERROR_NOT_INITIALIZED = 3
POLL_S = 0.005
PR_SET_NAME = 15


def enable() -> None:
    """Fork this process's workers from now on, where `possible()`."""
    global _ENABLED
    _ENABLED = True


def driver_started() -> bool:
    """Whether the CUDA driver has been initialized in this process (cuInit: torch's first CUDA call, a
    cudaGetDeviceCount, harness.startup's context thread). Importing torch may map the driver's library without
    initializing it; then the driver answers that it is not initialized, and a fork is safe."""
    try:
        with open("/proc/self/maps") as f:
            if DRIVER not in f.read():
                return False
        context = ctypes.c_void_p()
        return ctypes.CDLL(DRIVER + ".1").cuCtxGetCurrent(ctypes.byref(context)) != CUDA_ERROR_NOT_INITIALIZED
    except OSError:
        return True


def possible() -> bool:
    """Enabled, torch imported (the point of forking), no secret drawn, the CUDA driver not started."""
    return _ENABLED and "torch" in sys.modules and not seeds.drawn() and not driver_started()


def name_process(name: bytes) -> None:
    """The name ps and top show for a forked process, whose command line stays its parent's (PR_SET_NAME)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_NAME, ctypes.c_char_p(name[:15]), 0, 0, 0)
    except OSError:
        pass


class ForkedProcess:
    """What the supervisor uses of a subprocess.Popen (pid, stdout, poll, wait, kill), for a forked child."""

    def __init__(self, pid: int, stdout):
        self.pid, self.stdout, self.returncode = pid, stdout, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its status is lost, as Popen takes it
                self.returncode = 0
                return 0
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(POLL_S)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def fork() -> int:
    """os.fork() with every signal held until it has returned. CPython runs a pending signal's handler inside the
    fork's own callbacks (logging's), where the exception the handler raises (SystemExit for SIGTERM here, or
    KeyboardInterrupt) is reported and lost: the process would go on as if it had never been signalled. The parent
    takes its signals back at once; the child keeps them held, until it takes them back with
    `fresh_signals_and_streams` or an exec (harness.evaluator.namespaces' keeper and init leave them held: a Ctrl-C
    to the evaluator's process group is the evaluator's to act on)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    held = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    with warnings.catch_warnings():  # Python 3.12 warns of fork in a process with threads; the child runs
        warnings.simplefilter("ignore", DeprecationWarning)  # none of their code and takes none of their locks
        pid = os.fork()
    if pid != 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return pid


def start(become) -> ForkedProcess:
    """Fork a child that runs `become(output)` (`worker`; output: the write end of the pipe its stdout and stderr
    go to) and never returns."""
    read, write = os.pipe()
    pid = fork()
    if pid == 0:
        try:
            os.close(read)
            become(write)
        finally:
            os._exit(1)  # the worker's main leaves with os._exit itself; this is a failure before or in it
    os.close(write)
    return ForkedProcess(pid, os.fdopen(read, "rb"))


def close_all_but(keep: set) -> None:
    """Close every descriptor of this process but those in `keep` (an empty range is skipped: Python 3.11's
    closerange(0, 0) closes every descriptor)."""
    ordered = sorted(keep)
    for low, high in zip([-1, *ordered], [*ordered, os.sysconf("SC_OPEN_MAX")]):
        if low + 1 < high:
            os.closerange(low + 1, high)


def fresh_signals_and_streams() -> None:
    """In a forked child, what a new interpreter starts with: Python's default signal handlers, no signal held, and
    sys.stdin, stdout and stderr made anew over descriptors 0-2 (the parent's objects may hold its buffered output and
    its choices)."""
    for signum in signal.valid_signals():
        handler = signal.getsignal(signum)
        if callable(handler) and handler is not signal.default_int_handler:
            signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.set_wakeup_fd(-1)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])  # held since the fork (`fork`)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=os.isatty(1))
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), errors="backslashreplace", line_buffering=True)


def worker(args: list[str], env: dict, pass_fds: tuple, fresh: bool):
    """What a new child does to become a worker running harness.worker's main with `args` (a function of the
    descriptor its output goes to): a fresh interpreter where `fresh`, else the main itself in this memory."""
    def become(output: int) -> None:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        close_all_but({0, 1, 2, *pass_fds})
        os.chdir(ROOT)
        if fresh:
            for fd in pass_fds:
                os.set_inheritable(fd, True)
            for signum in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these, and ignored stays ignored
                signal.signal(signum, signal.SIG_DFL)  # across an exec
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.execve(sys.executable, [sys.executable, "-m", "harness.worker", *args], env)
        name_process(b"nvfp4-worker")
        fresh_signals_and_streams()
        atexit._clear()
        os.environ.clear()
        os.environ.update(env)
        sys.dont_write_bytecode = env.get("PYTHONDONTWRITEBYTECODE") == "1"
        tempfile.tempdir = None  # TMPDIR is the worker's own folder now
        sys.argv = [str(ROOT / "harness" / "worker" / "__main__.py"), *args]
        from harness.worker.__main__ import leave, main
        main(args)
        leave()
    return become
