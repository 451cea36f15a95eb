"""The timed sample loop, as the contest's: synchronize, clear the L2, start event, N calls, end
event, synchronize, divide by N; repeat until the stopping rule says enough.

Two ways to clear, by `method`:
- "arena" (default): drop persisting-L2 windows and write 4x the L2 size (a fraction of a
  millisecond), then hold the stream with a kernel that fills every SM until the host has queued
  all N calls and the end event (harness.hold). The GPU starts the region with everything queued,
  as behind the contest's long clear, so the host's queueing time stays out of the number.
- "contest": the contest's own clear (a float32 randn of 4 or 62.5 GiB, no synchronize before the
  start event), which hides the host for as long as it runs.

Either way the host's time to queue one call is measured too (the calls between two host clock
reads), and the defenses run through their hooks outside the timed region: before the calls,
after the end event, and after the sample's synchronize.
"""
import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from .rules import StopRule


@dataclass
class Sample:
    """One timed sample, as the defenses see it."""

    number: int  # 1-based
    inputs: list
    signs: list
    outputs: list = field(default_factory=list)
    host_ns: float = 0.0  # host time to queue all the calls
    pending_ns: float = 0.0  # device still busy after the end event was reached
    idle_pending_ns: float = 0.0  # the same measurement at once after, with nothing pending: its control
    region_ns: float = 0.0  # the timed region (GPU time between the events)
    hold_timed_out: bool = False


@dataclass
class Timing:
    durations: list = field(default_factory=list)  # per sample: region / calls
    host_ns: list = field(default_factory=list)  # per sample: host time / calls
    hold_timeouts: int = 0
    pending_ns: list = field(default_factory=list)  # per sample: device busy after the end event (host clock)
    defense_ns: float = 0.0  # host time spent in the defenses' hooks


class Verdict(Exception):
    """A defense fired: status and message for the record."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def _judge(hook, defenses: list, sample, spent: list):
    """Runs one hook of every defense; the first finding becomes a Verdict."""
    started = time.perf_counter_ns()
    for d in defenses:
        found = getattr(d, hook)(sample) if sample is not None else getattr(d, hook)()
        if found:
            status, message = found if isinstance(found, tuple) else ("fail", found)
            raise Verdict(status, f"sample {sample.number}: {message}" if sample is not None else message)
    spent[0] += time.perf_counter_ns() - started


def run_sample(kernel, sample: Sample, device, method: str, defenses: list, spent: list) -> Sample:
    _judge("before_calls", defenses, sample, spent)
    device.synchronize()
    if method == "contest":
        device.contest_clear()
    else:
        device.flush()
        device.hold()
    device.start()
    queued = device.now()
    sample.outputs = [kernel(x) for x in sample.inputs]
    sample.host_ns = float(device.now() - queued)
    device.stop()
    if method != "contest":
        device.release()
    sample.pending_ns = device.pending_ns(device.wait_end())
    sample.idle_pending_ns = device.idle_pending_ns()
    sample.region_ns = device.elapsed_ns()
    _judge("after_calls", defenses, sample, spent)
    device.synchronize()
    sample.hold_timed_out = method != "contest" and device.hold_timed_out()
    _judge("after_sample", defenses, sample, spent)
    return sample


@contextmanager
def collector_paused():
    """Python's garbage collector off for one sample: a collection of a large heap takes hundreds of µs,
    and one landing between the end event and the escape watch's synchronize reads as device work that
    outlasted the region (or, inside the calls, as host time). It runs again between samples."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def measure(kernel, next_inputs, device, method: str, rule: StopRule, defenses: list, on_sample=None) -> Timing:
    """Samples until `rule` is satisfied. next_inputs() -> (inputs, signs) for the next sample."""
    timing = Timing()
    spent = [0.0]
    started = device.now()
    while True:
        inputs, signs = next_inputs()
        with collector_paused():
            sample = run_sample(kernel, Sample(len(timing.durations) + 1, inputs, signs), device, method, defenses,
                                spent)
        calls = len(sample.inputs)
        timing.durations.append(sample.region_ns / calls)
        timing.host_ns.append(sample.host_ns / calls)
        timing.hold_timeouts += sample.hold_timed_out
        timing.pending_ns.append(sample.pending_ns)
        if on_sample:
            on_sample(timing)
        if rule.done(timing.durations, device.now() - started):
            break
    _judge("after_all", defenses, None, spent)
    timing.defense_ns = spent[0]
    return timing
