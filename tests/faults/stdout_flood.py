"""Fault: an honest gemm that prints 1 GB to stdout on its first call."""
import os
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "redteam"))
from _honest import honest  # noqa: E402

flooded = []


def custom_kernel(data):
    if not flooded:
        flooded.append(True)
        block = b"x" * (1 << 20) + b"\n"
        for _ in range(1024):
            os.write(1, block)
    return honest(data)
