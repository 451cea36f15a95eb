"""Cheat: make the timers report almost nothing."""
import time

import torch
from _honest import honest

torch.cuda.Event.elapsed_time = lambda self, end: 1e-6
_real = time.perf_counter_ns
time.perf_counter_ns = lambda: _real() // 1000


def custom_kernel(data):
    return honest(data)
