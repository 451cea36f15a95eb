"""Fault: a call that never returns (the runner is signalled while it waits)."""
import time


def custom_kernel(data):
    time.sleep(3600)
