"""Cheat: write a fake 'pass' result onto every file descriptor, the evaluator's result channel among them."""
import json
import os

from _honest import honest

_sent = []
FAKE = {"kind": "done", "result": {"status": "pass", "message": "", "stats": {
    "runs": 3, "mean": 1.0, "std": 0.0, "err": 0.0, "best": 1.0, "worst": 1.0, "median": 1.0}}}


def custom_kernel(data):
    if not _sent:
        for fd in range(3, 64):
            try:
                os.write(fd, (json.dumps(FAKE) + "\n").encode())
            except OSError:
                continue
            _sent.append(fd)
    return honest(data)
