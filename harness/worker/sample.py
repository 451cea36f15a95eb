"""What the worker does around the submission's calls: one untimed call, or one timed sample.

A timed sample is the contest's: the N calls back to back between two CUDA events. On a GPU with arena timing the
worker's stream waits for the evaluator's "go", then runs the start event, the N calls, the end event, the copies of
any returned output that is not its slot's c into c, and writes "done"; the worker says "queued" once all of it is
queued, and the evaluator then writes the inputs, flushes the L2 and gives "go". The evaluator's own clock around
"go" and "done" is the number that ranks (harness.evaluator.clock); the events here are a cross-check. Under contest
timing the evaluator has written the inputs first and the worker runs the contest's clear and times the calls with
its events. On a CPU the calls run when the evaluator says "go", and are copied into c afterwards. Nothing here
decides a verdict: every number and output goes to the evaluator.
"""
import gc
import sys
import threading
import time
import types
from contextlib import contextmanager

import torch

from harness.layout import output_buffers
from harness.rules import CONTEST


def place_output(out, data) -> str:
    """Copy a returned output into its slot's c where it is another tensor; '' or what is wrong with it."""
    targets, grouped = output_buffers(data)
    if grouped and not isinstance(out, (list, tuple)):
        return f"returned a {type(out).__name__}, expected a list of {len(targets)} tensors (one per group)"
    outs = list(out) if grouped else [out]
    if len(outs) != len(targets):
        return f"returned {len(outs)} outputs, expected {len(targets)} (one per group)"
    for g, (o, c) in enumerate(zip(outs, targets)):
        name = f"group {g}" if grouped else "output"
        if type(o) is not torch.Tensor:  # a subclass could run code of its own when the worker reads it into c
            return f"{name}: expected a torch.Tensor, got {type(o).__name__}"
        if tuple(o.shape) != tuple(c.shape):
            return f"{name}: shape {tuple(o.shape)} != expected {tuple(c.shape)}"
        if o.dtype != c.dtype:
            return f"{name}: dtype {o.dtype} != expected {c.dtype}"
        if o.device == c.device and o.data_ptr() == c.data_ptr() and o.stride() == c.stride():
            continue
        try:
            c.copy_(o)
        except RuntimeError as exc:
            return f"{name}: could not be read into its output buffer ({exc})"
    return ""


@contextmanager
def collector_paused():
    """Python's garbage collector off for one sample: a collection of a large heap takes hundreds of µs and
    would land inside the calls as host time. It runs again between samples."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def call_once(kernel, data, device) -> dict:
    """One untimed call (first calls, correctness): host time until its work is done."""
    device.synchronize()
    started = time.perf_counter_ns()
    out = kernel(data)
    device.synchronize()
    host_ns = time.perf_counter_ns() - started
    problem = place_output(out, data)
    device.synchronize()
    return {"host_ns": host_ns, "problem": problem}


def timed_sample(kernel, batch: list, device, method: str, send, wait_go, sequence: int = 0) -> dict:
    """One sample of N calls (none: a null sample of the calibration, which touches memory instead); sends "queued"
    once they are queued (GPU) or before they run (CPU)."""
    clocked = device.gpu and method != CONTEST
    with collector_paused():
        device.synchronize()
        if device.gpu:
            if clocked:
                device.wait_go(sequence)
            else:
                device.contest_clear()
            device.start()
            queued = time.perf_counter_ns()
            outs = [kernel(d) for d in batch]
            if not batch:
                device.touch()
            host_ns = time.perf_counter_ns() - queued
            device.stop()
            if clocked:  # the outputs in place before "done": the evaluator's spot check reads them then
                problems = [place_output(o, d) for o, d in zip(outs, batch)]
                device.signal_done(sequence)
            send("queued", host_ns=host_ns)
        else:
            send("queued", host_ns=0)
            wait_go()
            device.start()
            outs = [kernel(d) for d in batch]
            device.stop()
            host_ns = 0
        end_reached = device.wait_end()
        pending_ns = device.pending_ns(end_reached)
        region_ns = device.elapsed_ns()
    if not clocked:
        problems = [place_output(o, d) for o, d in zip(outs, batch)]
    device.synchronize()
    return {"region_ns": region_ns, "host_ns": host_ns, "pending_ns": pending_ns, "problems": problems}


class SelfCheck:
    """Defence in depth inside the worker (a speed bump: the submission shares this process and can undo any of
    it): after each sample, no torch function or dispatch mode left on, no trace or profile hook, no thread the
    sample started, the worker's own functions and its classes' methods unreplaced (its device's wait for "go",
    write of "done" and start among them), and its CUDA context's persisting-L2 limit as it was before the
    submission was imported (lines kept persisting would survive the L2 flush; the limit is per context, so only the
    worker can read it). The evaluator's checks do not depend on it."""

    def __init__(self, modules: list, device, instances: tuple = ()):
        """Made before the submission is imported, so that what its import replaces is found too. modules: whose
        functions, modules, and classes' methods must stay as they are; instances: objects of the worker's (its
        device, the evaluator's clock words it maps) whose methods no attribute of their own may shadow."""
        self.device = device
        self.l2_limit = device.persisting_l2_limit()
        # the probes, bound now: swapping the torch, sys or threading these modules name changes none of them
        self.probes = (torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack, sys.gettrace,
                       sys.getprofile, threading.enumerate)
        self.functions = {}
        for module in modules:
            owner = getattr(module, "__name__", type(module).__name__)
            for name, obj in vars(module).items():
                self._keep(owner, module, name, obj)
                if isinstance(obj, type) and obj.__module__ == owner:
                    for attr, member in vars(obj).items():
                        self._keep(f"{owner}.{name}", obj, attr, member)
        self.instances = [i for i in instances if i is not None]
        self.threads = set(threading.enumerate())

    def imported(self):
        """The submission is imported: threads its import started (a compiler's pool) are its own, not a sample's."""
        self.threads = set(self.probes[4]())

    def _keep(self, owner: str, holder, name: str, obj):
        if isinstance(obj, types.FunctionType):  # plain Python functions (a Triton kernel object is left alone)
            self.functions[f"{owner}.{name}"] = (holder, name, obj, obj.__code__)
        elif isinstance(obj, (types.ModuleType, types.BuiltinFunctionType)):  # what they call through (the saved
            # clock among them)
            self.functions[f"{owner}.{name}"] = (holder, name, obj, None)

    def findings(self) -> list[str]:
        found = []
        function_modes, dispatch_modes, gettrace, getprofile, enumerate_threads = self.probes
        if function_modes():
            found.append("a torch function mode is active")
        if dispatch_modes():
            found.append("a torch dispatch mode is active")
        if gettrace() is not None or getprofile() is not None:
            found.append("a trace or profile hook is set")
        extra = [t.name for t in enumerate_threads() if t not in self.threads and t.is_alive()]
        if extra:
            found.append(f"threads left running: {', '.join(extra)}")
        replaced = [name for name, (module, attr, obj, code) in self.functions.items()
                    if getattr(module, attr, None) is not obj or (code is not None and obj.__code__ is not code)]
        replaced += [f"{type(i).__name__}.{attr}" for i in self.instances for attr in vars(i)
                     if callable(getattr(type(i), attr, None))]
        if replaced:
            found.append(f"worker functions replaced: {', '.join(sorted(replaced))}")
        l2_limit = self.device.persisting_l2_limit()
        if l2_limit != self.l2_limit:
            found.append(f"the persisting-L2 cache limit changed ({self.l2_limit} -> {l2_limit} bytes)")
        return found
