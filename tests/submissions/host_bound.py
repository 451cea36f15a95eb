"""An honest gemm submission that spends far longer on the host than its work takes: a slow launcher."""
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "redteam"))
from _honest import honest  # noqa: E402


def custom_kernel(data):
    deadline = time.perf_counter() + 0.002
    while time.perf_counter() < deadline:  # 2 ms of host work per call, as a slow Python launcher spends
        pass
    return honest(data)
