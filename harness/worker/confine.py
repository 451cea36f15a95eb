"""The worker's sandbox, applied by the worker to itself before it imports torch or the submission.

Landlock (through the landlockpy package; no root needed): the whole file system stays readable, and writable
are only the folders the evaluator names (the worker's own temporary folder and the build caches) and what the
CUDA driver and torch write to: the GPU's device nodes (/dev/nvidia*), the standard ones (/dev/null, ...),
/dev/shm (torch's shared memory) and the worker's own /proc entries. Not the rest of /dev (a raw disk, to a
worker running as root) nor the rest of /proc (the kernel's sysctls: to root, /proc/sys/kernel/core_pattern
would run a program outside every sandbox). The repository, the Python environment and the results folder are
not writable either. Signals and abstract unix sockets are scoped to the worker's own processes (Landlock ABI 6
and later), and by Landlock's design no process inside can ptrace, or read the memory of, one outside. Every
process the worker starts inherits all of it. Returns a one-line description of what is in force.
"""
import glob
import os

STANDARD_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SHARED_MEMORY = "/dev/shm"
GPU_DEVICES = "/dev/nvidia*"  # nvidiactl, nvidia0..., nvidia-uvm, nvidia-uvm-tools, nvidia-caps/
OWN_PROCESS = "/proc/self"  # resolved when the rule is made: this process's entries (thread names), no other's


def driver_paths() -> list[str]:
    """What the CUDA driver and torch write to, beyond the folders the evaluator names."""
    return [*STANDARD_DEVICES, SHARED_MEMORY, *sorted(glob.glob(GPU_DEVICES)), OWN_PROCESS]


def confine(writable: list[str]) -> str:
    try:
        from landlockpy import AccessFS, Ruleset, Scope
    except ImportError:
        return "none: landlockpy is not installed (pip install landlockpy)"
    file_rights = AccessFS.EXECUTE | AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.TRUNCATE | AccessFS.IOCTL_DEV
    try:
        with Ruleset(scoped=Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET) as rules:
            everything = rules.handled_fs
            rules.allow_path("/", AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE)
            for path in [*writable, *driver_paths()]:
                if os.path.exists(path):
                    rules.allow_path(path, everything if os.path.isdir(path) else everything & file_rights)
            rules.restrict()
            abi = rules.abi_version
            scoped = "signals and abstract sockets scoped" if rules.scoped else "signals not scoped (ABI < 6)"
    except Exception as exc:  # noqa: BLE001 - a kernel without Landlock, or a refused call, leaves it off
        return f"none: Landlock unavailable ({type(exc).__name__}: {exc})"
    return (f"landlock (ABI {abi}; writes only to {', '.join(writable)}, {SHARED_MEMORY}, the GPU's and the standard "
            f"device nodes and its own /proc entries; {scoped})")
