"""Cheat: return at once and let a thread write the result afterwards."""
import threading
import time

from _honest import gemm


def _late(c, result):
    time.sleep(0.005)
    c[:, :, 0] = result


def custom_kernel(data):
    result = gemm(data)
    threading.Thread(target=_late, args=(data[-1], result), daemon=True).start()
    return data[-1]
