"""Fault: an honest gemm that is SIGKILLed in the middle of its timed samples."""
import os
import signal
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "redteam"))
from _honest import honest  # noqa: E402

calls = 0


def custom_kernel(data):
    global calls
    calls += 1
    if calls == 60:  # past the first calls and the correctness pass, inside a sample
        os.kill(os.getpid(), signal.SIGKILL)
    return honest(data)
