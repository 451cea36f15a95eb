"""Attack (what a run leaves behind): keep memory and disk after the run, in /dev/shm, its TMPDIR and SysV shared
memory.

At import it writes 8 MiB to /dev/shm/redteam_shm_leftover and 8 MiB to a file in its TMPDIR, and makes an 8 MiB
SysV shared-memory segment (key REDTEAM_SHM_KEY) that it never removes. A file that fills /dev/shm (memory) this way
took it from every later run: /dev/shm kept whatever a worker left there. It notes in redteam_shm_leftover.log in its
build cache how large its /dev/shm and TMPDIR are (statvfs) and what it made. Computes honestly."""
import ctypes
import os

from _honest import honest
from _reach import note

SIZE = 8 << 20
REDTEAM_SHM_KEY = 0x5EDC0DE


def _size(folder: str) -> int:
    info = os.statvfs(folder)
    return info.f_blocks * info.f_frsize


with open("/dev/shm/redteam_shm_leftover", "wb") as _f:
    _f.write(b"\1" * SIZE)
with open(os.path.join(os.environ["TMPDIR"], "redteam_shm_leftover"), "wb") as _f:
    _f.write(b"\1" * SIZE)
_segment = ctypes.CDLL(None, use_errno=True).shmget(REDTEAM_SHM_KEY, SIZE, 0o1600)  # IPC_CREAT | 0600
note("shm_leftover", f"/dev/shm holds {_size('/dev/shm')} bytes, TMPDIR {_size(os.environ['TMPDIR'])}; "
                     f"wrote 2 files of {SIZE}; SysV segment {_segment}")


def custom_kernel(data):
    return honest(data)
