"""Cheat: patch the evaluator's checker so every output passes."""
import sys

from _honest import honest

checker = sys.modules.get("reference.checker")
if checker is not None:
    from reference.checker import CheckReport
    checker.compare = lambda *args, **kwargs: CheckReport(ok=True)


def custom_kernel(data):
    data[-1].zero_()
    return data[-1]
