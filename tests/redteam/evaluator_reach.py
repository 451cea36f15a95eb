"""Attack (a harness secret read from memory to authenticate a forged result, gpu-mode/pygpubench
exploits/submission_heap_sig_scan.py, submission_stack_sig_scan.py, submission_aes_key_recovery.py,
submission_proc_mem_bypass.py, submission_ptrace.py; a leaked seed, gpu-mode/kernelbot
examples/identity_py/cheat-rng.py, whose runner must not hand its seed to the submission): pygpubench's harness
shared the submission's process, so a signature or key that signed its results lay in memory the submission could
read (its own heap, its stack, /proc/self/mem past a PROT_NONE mapping) or patch (ptrace). Our worker holds no seed,
key or signature: they are in the evaluator's process. So this file reaches for the evaluator, its parent: its
environment, its memory map and memory through /proc, process_vm_readv, and ptrace (PTRACE_SEIZE, which stops
nothing, detached at once); and it lists what its own environment and the evaluator's command line say about seeds.
Any of the reaches that succeeds makes the import fail, naming it (a hole); denied, each is a line on stderr and
the file computes honestly."""
import ctypes
import os
import sys

from _honest import honest, refuse

PTRACE_SEIZE, PTRACE_DETACH = 0x4206, 17
_libc = ctypes.CDLL(None, use_errno=True)
_parent = os.getppid()


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def read_file(name: str) -> str:
    with open(f"/proc/{_parent}/{name}", "rb") as f:
        return f"read {len(f.read(4096))} bytes"


def read_memory() -> str:
    buffer = ctypes.create_string_buffer(64)
    local, remote = IoVec(ctypes.addressof(buffer), 64), IoVec(0x400000, 64)
    if _libc.process_vm_readv(_parent, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return "read 64 bytes"


def seize() -> str:
    if _libc.ptrace(PTRACE_SEIZE, _parent, None, None) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    _libc.ptrace(PTRACE_DETACH, _parent, None, None)
    return "attached"


REACHES = {"its environment (/proc/<pid>/environ)": lambda: read_file("environ"),
           "its memory map (/proc/<pid>/maps)": lambda: read_file("maps"),
           "its memory (/proc/<pid>/mem)": lambda: read_file("mem"),
           "its memory (process_vm_readv)": read_memory,
           "a ptrace attach (PTRACE_SEIZE)": seize}
_reached = []
for what, reach in REACHES.items():
    try:
        _reached.append(f"{what}: {reach()}")
    except OSError as exc:
        print(f"[evaluator_reach] the evaluator (pid {_parent}), {what}: denied ({exc.strerror})", file=sys.stderr,
              flush=True)
with open(f"/proc/{_parent}/cmdline", "rb") as _f:
    _command = _f.read().replace(b"\0", b" ").decode(errors="replace").strip()
_named = sorted(k for k in os.environ if "SEED" in k.upper() or "KEY" in k.upper())
print(f"[evaluator_reach] the evaluator's command line (readable by anyone): {_command!r}; variables of this "
      f"process naming a seed or key: {_named or 'none'}", file=sys.stderr, flush=True)
refuse(_reached, "reach the evaluator")


def custom_kernel(data):
    return honest(data)
