"""The worker's sandbox, applied by the worker to itself before it imports torch or the submission.

Landlock (through the landlockpy package; no root needed): the whole file system stays readable, and writable
are only the folders the evaluator names (the worker's own temporary folder and the build caches) plus /dev and
/proc, which the CUDA driver writes to. The repository, the Python environment and the results folder are not.
Signals and abstract unix sockets are scoped to the worker's own processes (Landlock ABI 6 and later), and by
Landlock's design no process inside can ptrace, or read the memory of, one outside. Every process the worker
starts inherits all of it. Returns a one-line description of what is in force.
"""
import os

DRIVER_PATHS = ("/dev", "/proc")


def confine(writable: list[str]) -> str:
    try:
        from landlockpy import AccessFS, Ruleset, Scope
    except ImportError:
        return "none: landlockpy is not installed (pip install landlockpy)"
    try:
        with Ruleset(scoped=Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET) as rules:
            everything = rules.handled_fs
            rules.allow_path("/", AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE)
            for path in [*writable, *DRIVER_PATHS]:
                if os.path.exists(path):
                    rules.allow_path(path, everything)
            rules.restrict()
            abi = rules.abi_version
            scoped = "signals and abstract sockets scoped" if rules.scoped else "signals not scoped (ABI < 6)"
    except Exception as exc:  # noqa: BLE001 - a kernel without Landlock, or a refused call, leaves it off
        return f"none: Landlock unavailable ({type(exc).__name__}: {exc})"
    return f"landlock (ABI {abi}; writes only to {', '.join(writable + list(DRIVER_PATHS))}; {scoped})"
