"""Fault: a call that never returns (the runner is signalled while it waits); it says when the call has started."""
import sys
import time


def custom_kernel(data):
    print("sleeps.py: inside custom_kernel", file=sys.stderr, flush=True)
    time.sleep(3600)
