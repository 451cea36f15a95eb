"""Cheat: return at once and let a thread write the result afterwards. Stderr says when a thread first wrote
after its call had returned."""
import sys
import threading
import time

from _honest import gemm

_told = []


def _late(c, result):
    time.sleep(0.005)
    c[:, :, 0] = result
    if not _told:
        _told.append(True)
        print("[worker_thread] a thread wrote c 5 ms after custom_kernel returned", file=sys.stderr, flush=True)


def custom_kernel(data):
    result = gemm(data)
    threading.Thread(target=_late, args=(data[-1], result), daemon=True).start()
    return data[-1]
