"""Run-time defenses inside the worker: checks that turn the known cheats into verdicts.

- Integrity: the timers, clone, flush, checker and result channel are snapshotted before the
  submission is imported; any replacement (object or code) is reported by name. Measurements
  themselves go through references saved at import time, so a patch cannot change them.
- Outputs: plain torch.Tensor objects with their own storage, not aliasing any input but the
  designated output c, and distinct from each other within a sample.
- Deferred writes: a secret random subset of each output is read when the call returns and
  again after a device-wide synchronize; any difference is a verdict.
- Escapes: Python threads still alive after the calls, work still pending on the device after
  the timed region's end event (side streams), a persisting-L2 limit left set.
"""
import ctypes
import secrets
import threading
import time

import torch

from . import device

ESCAPE_MIN_NS = 50_000.0  # pending device work after the end event beyond this ...
ESCAPE_FRACTION = 0.25  # ... and beyond this share of the timed region is suspicious ...
ESCAPE_REPEATS = 3  # ... and a verdict once it happens in this many samples in a row (host jitter is sporadic)
DEFERRED_PROBE = 64  # output elements fingerprinted per call
CPU_SETTLE_S = 0.02  # on a CPU, time given to a deferred writer before the second fingerprint


def _watched() -> dict:
    """Objects a cheat would replace, by name. Resolved fresh each time they are checked."""
    import multiprocessing.connection as mpc

    import reference.checker as checker
    from harness import worker
    return {
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.Tensor.clone": torch.Tensor.clone,
        "torch.Tensor.copy_": torch.Tensor.copy_,
        "torch.equal": torch.equal,
        "time.perf_counter_ns": time.perf_counter_ns,
        "multiprocessing.connection.Connection.send": mpc.Connection.send,
        "harness.device.RegionTimer.start": device.RegionTimer.start,
        "harness.device.RegionTimer.stop": device.RegionTimer.stop,
        "harness.device.RegionTimer.elapsed_ns": device.RegionTimer.elapsed_ns,
        "harness.device.DeviceChores.before_sample": device.DeviceChores.before_sample,
        "harness.device.DeviceChores.synchronize": device.DeviceChores.synchronize,
        "harness.worker.clone_data": worker.clone_data,
        "harness.worker.Jobs.benchmark": worker.Jobs.benchmark,
        "harness.worker.Jobs.test": worker.Jobs.test,
        "harness.worker.Jobs.compare_all": worker.Jobs.compare_all,
        "reference.checker.compare": checker.compare,
        "reference.checker.compare_groups": checker.compare_groups,
        "harness.guard.inspect_outputs": inspect_outputs,
        "harness.guard.Integrity.replaced": Integrity.replaced,
    }


def _code(obj):
    return getattr(obj, "__code__", None)


class Integrity:
    """Snapshot of the watched objects (and the task module's functions), taken before import."""

    def __init__(self, task_module):
        self.task_module = task_module
        self.saved = {**_watched(), **self._task_functions()}
        self.codes = {name: _code(obj) for name, obj in self.saved.items()}

    def _task_functions(self) -> dict:
        names = ("generate_input", "ref_kernel", "check_output", "fresh_slots", "rebuild")
        return {f"reference.{self.task_module.__name__.split('.')[-1]}.{n}": getattr(self.task_module, n) for n in names}

    def replaced(self) -> list[str]:
        now = {**_watched(), **self._task_functions()}
        return [name for name, obj in self.saved.items()
                if now.get(name) is not obj or _code(now.get(name)) is not self.codes[name]]


def _storages(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _storages(item)


def _span(t: torch.Tensor) -> tuple[int, int, str]:
    """The bytes a tensor covers: [first, last + 1) on its device."""
    start = t.data_ptr()
    extent = 1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride())) if t.numel() else 0
    return start, start + extent * t.element_size(), str(t.device)


def _overlaps(x, y) -> bool:
    (a0, a1, da), (b0, b1, db) = _span(x), _span(y)
    return da == db and a0 < b1 and b0 < a1 and a1 > a0


def inspect_outputs(outputs, data, allowed: list) -> str:
    """'' when every output is a plain tensor that aliases no input but its own allowed buffer."""
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    inputs = None
    for i, out in enumerate(outs):
        if type(out) is not torch.Tensor:
            return f"output {i} is a {type(out).__module__}.{type(out).__name__}, not a plain torch.Tensor"
        own = allowed[i] if i < len(allowed) else None
        if out is own:
            continue  # the designated buffer itself: the common, cheap case
        inputs = inputs if inputs is not None else list(_storages(data))
        for x in inputs:
            if x is not own and _overlaps(out, x):
                return f"output {i} shares storage with an input tensor of shape {tuple(x.shape)} ({x.dtype})"
    return ""


def distinct_outputs(batch_outputs: list) -> str:
    """'' when no two calls of one sample returned the same storage."""
    seen = {}
    for call, outputs in enumerate(batch_outputs):
        for out in outputs if isinstance(outputs, (list, tuple)) else [outputs]:
            if isinstance(out, torch.Tensor):
                key = (out.data_ptr(), out.device)
                if key in seen and seen[key] != call:
                    return f"calls {seen[key]} and {call} returned the same output storage"
                seen[key] = call
    return ""


class DeferredWriteProbe:
    """Fingerprints of a secret random subset of an output: at return, and after synchronizing."""

    def __init__(self, outputs):
        self.outs = [o for o in (outputs if isinstance(outputs, (list, tuple)) else [outputs])
                     if isinstance(o, torch.Tensor) and o.numel() > 0]
        self.index = [torch.tensor([secrets.randbelow(o.numel()) for _ in range(DEFERRED_PROBE)], device=o.device)
                      for o in self.outs]
        self.first = self._read()  # copies on the current stream only: side streams are not waited for

    def _read(self):
        """The probed elements' bits, copied on the current stream (NaN-safe to compare)."""
        return [o.detach().reshape(-1)[i].to("cpu").view(torch.uint8) for o, i in zip(self.outs, self.index)]

    def changed(self) -> str:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        else:
            time.sleep(CPU_SETTLE_S)
        for n, (a, b) in enumerate(zip(self.first, self._read())):
            if not torch.equal(a, b):
                return f"output {n} changed after custom_kernel returned (work finishing outside the call)"
        return ""


def threads() -> set:
    return set(threading.enumerate())


def new_threads(before: set) -> str:
    extra = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    return f"the submission left {len(extra)} thread(s) running after its calls: {', '.join(t.name for t in extra)}" \
        if extra else ""


def _flat_words(t: torch.Tensor) -> torch.Tensor:
    """The bytes of a dense tensor as one flat int32 (or int16/uint8) view, without copying."""
    nbytes = t.numel() * t.element_size()
    flat = torch.as_strided(t.detach(), (t.numel(),), (1,), t.storage_offset()).view(torch.uint8)
    for dtype, size in ((torch.int32, 4), (torch.int16, 2)):
        if nbytes % size == 0 and flat.data_ptr() % size == 0:
            return flat.view(dtype)
    return flat


def fingerprint(tensors: list) -> list:
    """Checksums of dense tensors' bytes (sums of all int32 words and of every other word), to
    notice an input modified in place: no temporaries, one host sync in all."""
    by_device = {}
    for i, t in enumerate(tensors):
        w = _flat_words(t)
        by_device.setdefault(w.device, []).append((i, torch.stack((w.sum(dtype=torch.int64), w[::2].sum(dtype=torch.int64)))))
    sums = [None] * len(tensors)
    for pairs in by_device.values():  # one host sync per device
        for (i, _), value in zip(pairs, torch.stack([p for _, p in pairs]).cpu().tolist()):
            sums[i] = value
    return sums


def persisting_l2_limit(cudart) -> int:
    if cudart is None:
        return 0
    value = ctypes.c_size_t(0)
    if cudart.cudaDeviceGetLimit(ctypes.byref(value), device.DeviceChores.CUDA_LIMIT_PERSISTING_L2) != 0:
        return 0
    return value.value


def sign_patterns(n_inputs: int):
    """Secret negate/keep choices per input, one list per sample. The first timed sample is the
    exact opposite of the correctness pass, so anything remembered from it is wrong at once."""
    first = [bool(secrets.randbits(1)) for _ in range(n_inputs)]
    yield first
    yield [not s for s in first]
    while True:
        yield [bool(secrets.randbits(1)) for _ in range(n_inputs)]


def pending_after(end_event_done_ns: int) -> float:
    """Nanoseconds a device-wide synchronize still waited after the end event had completed."""
    torch.cuda.synchronize()
    return float(time.perf_counter_ns() - end_event_done_ns)


class EscapeWatch:
    """Counts samples in a row whose device stayed busy after the end event."""

    def __init__(self):
        self.in_a_row = 0

    def observe(self, pending_ns: float, region_ns: float) -> str:
        if pending_ns <= max(ESCAPE_MIN_NS, ESCAPE_FRACTION * region_ns):
            self.in_a_row = 0
            return ""
        self.in_a_row += 1
        if self.in_a_row < ESCAPE_REPEATS:
            return ""
        return (f"the device was still busy {pending_ns / 1e3:.0f} µs after the timed region ended "
                f"({region_ns / 1e3:.0f} µs), {self.in_a_row} samples in a row: work escaped the timing events "
                f"(side stream or thread)")


class ReferenceTrap:
    """Records calls into the evaluator's reference code (or torch._scaled_mm) made from inside
    custom_kernel. Installed before the submission is imported; the calls still go through."""

    def __init__(self):
        self.inside = False
        self.calls = []

    def install(self):
        import sys
        import types
        for module_name, module in list(sys.modules.items()):
            if module is None or not (module_name == "reference" or module_name.startswith("reference.")):
                continue
            for name, obj in list(vars(module).items()):
                if isinstance(obj, types.FunctionType) and obj.__module__.startswith("reference"):
                    setattr(module, name, self._wrap(obj, f"{module_name}.{name}"))
        if hasattr(torch, "_scaled_mm"):
            torch._scaled_mm = self._wrap(torch._scaled_mm, "torch._scaled_mm")

    def _wrap(self, fn, name):
        import functools

        @functools.wraps(fn)
        def traced(*args, **kwargs):
            if self.inside:
                self.calls.append(name)
            return fn(*args, **kwargs)
        return traced

    def verdict(self) -> str:
        if not self.calls:
            return ""
        names = sorted(set(self.calls))
        self.calls.clear()
        return "custom_kernel called the evaluator's reference code: " + ", ".join(names)


class StackedCheck:
    """Checks all N outputs of a sample with one stacked comparison and one host sync.

    Expected outputs and their tolerances (atol + rtol*|ref|, sign-free) are stacked once per
    output slot (one slot per group for group GEMM); each sample's outputs are stacked, multiplied
    by the sign pattern (exact) and compared in a handful of passes. Any doubt (a mismatch, NaN,
    inf, an odd output) returns False, and the caller runs the detailed per-output comparison.
    """

    def __init__(self, expected: list):
        from reference.checker import ATOL, RTOL
        self.grouped = isinstance(expected[0], list)
        slots = list(zip(*expected)) if self.grouped else [expected]
        self.stacks = [torch.stack(list(s)) for s in slots]
        self.tolerances = [ATOL + RTOL * ref.abs() for ref in self.stacks]

    def ok(self, outputs: list, signs: list) -> bool:
        try:
            slots = list(zip(*outputs)) if self.grouped else [outputs]
            if len(slots) != len(self.stacks):
                return False
            signs_cpu = torch.tensor([-1.0 if s else 1.0 for s in signs])
            factors, bad = {}, []
            for got, ref, tol in zip(slots, self.stacks, self.tolerances):
                if any(type(o) is not torch.Tensor or o.shape != ref.shape[1:] or o.dtype != ref.dtype for o in got):
                    return False
                key = (ref.dtype, ref.device)
                if key not in factors:
                    factors[key] = signs_cpu.to(dtype=ref.dtype, device=ref.device)
                received = torch.stack(list(got)).mul_(factors[key].view(-1, *[1] * (ref.dim() - 1)))
                bad.append((~(received.sub_(ref).abs_() <= tol)).count_nonzero())  # NaN counts as bad
            return int(torch.stack(bad).sum().item()) == 0
        except (TypeError, RuntimeError, ValueError):
            return False


def _physical_order(t: torch.Tensor) -> list[int]:
    """Dimensions from the largest stride to the smallest: the order the bytes are laid out in."""
    return sorted(range(t.dim()), key=lambda d: -t.stride(d))


class FreshInputs:
    """Each sample's fresh inputs in a few kernels: per slot (a group's operand to negate and its
    output buffer), the N inputs' tensors are stacked once; a sample is one XOR with the secret
    sign pattern and one clone per slot, then views with the original shapes and strides."""

    def __init__(self, task, inputs: list):
        self.task, self.inputs = task, inputs
        per_input = [task.fresh_slots(d) for d in inputs]
        self.slots = []
        for s in range(len(per_input[0])):
            flips = [p[s][0] for p in per_input]
            outs = [p[s][1] for p in per_input]
            self.slots.append((self._stack(flips, byte_view=True), self._stack(outs, byte_view=False),
                               flips[0], outs[0]))

    @staticmethod
    def _stack(tensors, byte_view: bool):
        t0 = tensors[0]
        order = _physical_order(t0)
        dtype = torch.uint8 if byte_view else t0.dtype
        base = torch.empty((len(tensors), *[t0.shape[d] for d in order]), dtype=dtype, device=t0.device)
        for i, t in enumerate(tensors):
            base[i].copy_((t.view(torch.uint8) if byte_view else t).permute(*order))
        return base

    @staticmethod
    def _views(base, template, as_dtype):
        order = _physical_order(template)
        inverse = [1 + order.index(d) for d in range(template.dim())]
        return base.permute(0, *inverse).view(as_dtype).unbind(0)

    def sample(self, signs: list) -> list:
        """Input tuples for one sample; input i's operand is negated where signs[i] is True."""
        n = len(self.inputs)
        flips = []
        for flip_base, out_base, flip0, out0 in self.slots:
            mask = torch.tensor([0x88 if s else 0 for s in signs], dtype=torch.uint8)
            mask = mask.to(flip_base.device).view(n, *[1] * (flip_base.dim() - 1))
            flips.append((self._views(flip_base ^ mask, flip0, flip0.dtype), self._views(out_base.clone(), out0, out0.dtype)))
        return [self.task.rebuild(d, [(f[i], o[i]) for f, o in flips]) for i, d in enumerate(self.inputs)]
