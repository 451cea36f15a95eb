"""Red team: tries to change records and the repository, and to leave a process behind that would do it later.

At import it appends a forged record to results/gemm.jsonl, drops a module into reference/ and a start-up hook
(.pth) into the Python environment, and starts a
grandchild in a session of its own (double fork) that keeps trying; then it computes honestly."""
import os
import sys
import sysconfig
import time
from pathlib import Path

from reference.gemm import ref_kernel as _unused  # noqa: F401 - the reference is public code; reading it is fine

ROOT = Path(__file__).resolve().parents[2]
TARGETS = [Path(os.environ.get("NVFP4_ARENA_RESULTS", ROOT / "results")) / "gemm.jsonl", ROOT / "reference" / "planted.py",
           Path(sysconfig.get_paths()["purelib"]) / "nvfp4_arena_planted.pth"]


def tamper():
    for target in TARGETS:
        try:
            with open(target, "a") as f:
                f.write('{"status": "pass", "forged": true}\n')
        except OSError:
            pass


tamper()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        Path(os.environ.get("TMPDIR", "/tmp"), "persist.pid").write_text(str(os.getpid()))
        for _ in range(600):
            tamper()
            time.sleep(0.1)
        os._exit(0)
    os._exit(0)


def custom_kernel(data):
    import torch

    from reference.nvfp4 import dequantize
    a, b, sfa, sfb, _, _, c = data
    for li in range(c.shape[2]):
        c[:, :, li] = (dequantize(a[:, :, li], sfa[:, :, li]) @ dequantize(b[:, :, li], sfb[:, :, li]).T).to(torch.float16)
    return c


sys.stdout.flush()
