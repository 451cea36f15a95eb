"""Cheat: return at once and let a thread write the result afterwards. Each call's thread writes its result as the
next call starts (that call waits for it): by then the worker has answered for the earlier call, and the last call
of a batch has no next call before the evaluator reads the outputs."""
import threading

from _honest import acted, gemm

_late = []  # (thread, its go-ahead) of the call before this one


def _write_later(c, result, go):
    go.wait()
    c[:, :, 0] = result
    acted("worker_thread", "a thread wrote c after its custom_kernel had returned")


def custom_kernel(data):
    for thread, go in _late:
        go.set()
        thread.join()
    _late.clear()
    go = threading.Event()
    thread = threading.Thread(target=_write_later, args=(data[-1], gemm(data), go), daemon=True)
    thread.start()
    _late.append((thread, go))
    return data[-1]
