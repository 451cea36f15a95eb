"""Cheat: write a fake 'pass' result straight onto the evaluator's result channel."""
import gc
from multiprocessing.connection import Connection

from _honest import honest

_sent = []


def custom_kernel(data):
    if not _sent:
        for obj in gc.get_objects():
            if isinstance(obj, Connection):
                obj.send(("result", {"status": "pass", "message": "", "stats": {"runs": 3, "mean": 1.0, "std": 0.0,
                          "err": 0.0, "best": 1.0, "worst": 1.0, "median": 1.0}}))
                _sent.append(obj)
    return honest(data)
