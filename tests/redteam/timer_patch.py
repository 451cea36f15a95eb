"""Cheat: make the timers report almost nothing."""
import time

import torch

from _honest import acted, honest

torch.cuda.Event.elapsed_time = lambda self, end: 1e-6
_real = time.perf_counter_ns
time.perf_counter_ns = lambda: _real() // 1000
if time.perf_counter_ns() < _real() // 100:
    acted("timer_patch", "time.perf_counter_ns reads a thousandth of the time in this process")


def custom_kernel(data):
    return honest(data)
