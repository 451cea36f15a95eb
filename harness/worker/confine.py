"""The worker's sandbox, applied by the worker to itself before it imports torch or the submission.

Landlock (through the landlockpy package; no root needed): the whole file system stays readable, and writable
are only the folders the evaluator names (the worker's own temporary folder and the build caches) and what the
CUDA driver and torch write to: the GPU's device nodes (/dev/nvidia*), the standard ones (/dev/null, ...),
/dev/shm (torch's shared memory) and the worker's own /proc entries. Not the rest of /dev (a raw disk, to a
worker running as root) nor the rest of /proc (the kernel's sysctls: to root, /proc/sys/kernel/core_pattern
would run a program outside every sandbox). The repository, the Python environment and the results folder are
not writable either. Signals and abstract unix sockets are scoped to the worker's own processes (Landlock ABI 6
and later), and by Landlock's design no process inside can ptrace, or read the memory of, one outside. Every
process the worker starts inherits all of it. `confine` returns what is in force (Confinement).

A seccomp filter then refuses clone3 (ENOSYS, so that the C library falls back to clone), and with it every x32
call and every call made as another architecture (a 64-bit process can still make 32-bit calls): clone3's
CLONE_INTO_CGROUP starts a child in any cgroup whose folder the worker can open, even as an O_PATH descriptor,
which Landlock does not check, and that would take it out of the cgroup in which the evaluator ends the worker's
processes (harness.evaluator.cgroup). The filter is inherited too and cannot be removed.

Last, the worker gives up every capability (bounding, ambient, effective, permitted and inheritable sets), which
no process it starts can regain. Landlock checks writes, not metadata calls nor ioctls on regular files: a worker
running as root could otherwise make the records immutable (chattr), hand them to another owner, or shut down the
file system under them (ext4's shutdown ioctl, through a read-only descriptor). Without capabilities, root is an
owner like any user: it can still change the mode, times and user xattrs of files its uid owns (threat-model.md).
"""
import ctypes
import glob
import os
import platform
import struct
from dataclasses import dataclass

STANDARD_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
SHARED_MEMORY = "/dev/shm"
GPU_DEVICES = "/dev/nvidia*"  # nvidiactl, nvidia0..., nvidia-uvm, nvidia-uvm-tools, nvidia-caps/
CLONE3_REFUSED = "clone3 refused"
OWN_PROCESS = "/proc/self"  # resolved when the rule is made: this process's entries (thread names), no other's


def driver_paths() -> list[str]:
    """What the CUDA driver and torch write to, beyond the folders the evaluator names."""
    return [*STANDARD_DEVICES, SHARED_MEMORY, *sorted(glob.glob(GPU_DEVICES)), OWN_PROCESS]


SYS_CLONE3 = 435  # the same number on x86_64 and aarch64
X32_BIT = 0x40000000  # x86_64's x32 calls: the number with this bit set
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO, ENOSYS = 0x7FFF0000, 0x00050000, 38
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x45, 0x06


def clone3_filter(arch: int) -> bytes:
    """A classic BPF program over struct seccomp_data (nr at offset 0, arch at 4): ENOSYS for clone3, for every
    x32 call and for every call made as another architecture (a 64-bit process can still make 32-bit calls, whose
    clone3 has the same number); every other call is allowed."""
    refused = SECCOMP_RET_ERRNO | ENOSYS
    program = [(BPF_LD_W_ABS, 0, 0, 4),
               (BPF_JEQ_K, 1, 0, arch),
               (BPF_RET_K, 0, 0, refused),  # another architecture
               (BPF_LD_W_ABS, 0, 0, 0),
               (BPF_JSET_K, 2, 0, X32_BIT),
               (BPF_JEQ_K, 1, 0, SYS_CLONE3),
               (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
               (BPF_RET_K, 0, 0, refused)]
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


def refuse_clone3() -> str:
    """Install the clone3 filter; what is in force, as a phrase for the sandbox line."""
    arch = AUDIT_ARCH.get(platform.machine())
    if arch is None:
        return f"clone3 allowed (no filter for {platform.machine()})"
    filters = clone3_filter(arch)
    code = ctypes.create_string_buffer(filters, len(filters))
    fprog = struct.pack("HxxxxxxP", len(filters) // 8, ctypes.addressof(code))  # struct sock_fprog
    program = ctypes.create_string_buffer(fprog, len(fprog))
    libc = ctypes.CDLL(None, use_errno=True)
    word = ctypes.c_ulong  # prctl's arguments are unsigned longs; the kernel wants the unused ones zero
    if libc.prctl(PR_SET_NO_NEW_PRIVS, word(1), word(0), word(0), word(0)) != 0 or libc.prctl(
            PR_SET_SECCOMP, word(SECCOMP_MODE_FILTER), word(ctypes.addressof(program)), word(0), word(0)) != 0:
        return f"clone3 allowed (seccomp refused: {os.strerror(ctypes.get_errno())})"
    return CLONE3_REFUSED


PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CAPABILITY_VERSION_3 = 0x20080522  # capset's header version for 64-bit capability sets (two 32-bit words each)


def drop_capabilities() -> str:
    """Every capability gone from this process for good; what is in force, as a phrase for the sandbox line."""
    libc = ctypes.CDLL(None, use_errno=True)
    word = ctypes.c_ulong
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):  # fails without CAP_SETPCAP, where there is nothing to keep out of reach anyway
        libc.prctl(PR_CAPBSET_DROP, word(cap), word(0), word(0), word(0))
    libc.prctl(PR_CAP_AMBIENT, word(PR_CAP_AMBIENT_CLEAR_ALL), word(0), word(0), word(0))
    header = struct.pack("Ii", CAPABILITY_VERSION_3, 0)  # this process
    data = ctypes.create_string_buffer(24)  # effective, permitted, inheritable: zero, twice
    if libc.capset(ctypes.c_char_p(header), data) != 0:
        return f"capabilities kept (capset refused: {os.strerror(ctypes.get_errno())})"
    return "no capabilities"


@dataclass(frozen=True)
class Confinement:
    """What the sandbox put in force: its line, and whether no process of the worker can leave the cgroup the
    evaluator put it in (Landlock's file rules keep every cgroup.procs out of reach, the filter clone3's
    CLONE_INTO_CGROUP), so that the cgroup's listing names every one of them."""

    line: str
    cgroup_bound: bool = False


def confine(writable: list[str]) -> Confinement:
    """The sandbox, all of what this kernel allows. The filter goes on without Landlock too: with it comes
    no_new_privs, the mark by which a command line or the standing evaluator knows a worker (harness.peers)."""
    landlock = confine_files(writable)
    clone3 = refuse_clone3()
    bound = clone3 == CLONE3_REFUSED and not landlock.startswith("none")  # no file rules: a root worker could
    return Confinement(f"{landlock}; {clone3}; {drop_capabilities()}", cgroup_bound=bound)  # write cgroup.procs


def confine_files(writable: list[str]) -> str:
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
