"""The checks behind the defenses (harness.defenses holds them as per-sample hooks): each turns a
known cheat into a verdict. Nothing here imports the worker or times anything.

- Integrity: the timers, clone, flush, checker and result channel are snapshotted before the
  submission is imported; any replacement (object or code) is reported by name. Measurements
  themselves go through references saved at import time, so a patch cannot change them.
- Outputs: plain torch.Tensor objects with their own storage, not aliasing any input but the
  designated output c, and distinct from each other within a sample.
- Deferred writes: a secret random subset of each output is read when the call returns and
  again after a device-wide synchronize; any difference is a verdict.
- Fresh inputs: each sample's operands negated by a secret pattern (FreshInputs, sign_patterns),
  and every output of every sample compared in a few stacked passes (StackedCheck).
"""
import secrets
import sys
import threading
import time

import torch

DEFERRED_PROBE = 64  # output elements fingerprinted per call
CPU_SETTLE_S = 0.02  # on a CPU, time given to a deferred writer before the second fingerprint


WATCHED = (
    "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time", "torch.cuda.Event.synchronize",
    "torch.cuda.synchronize", "torch.Tensor.clone", "torch.Tensor.copy_", "torch.Tensor.zero_", "torch.randn",
    "torch.equal", "time.perf_counter_ns", "harness.channel.send",
    "harness.device.GpuDevice.flush", "harness.device.GpuDevice.contest_clear", "harness.device.GpuDevice.hold",
    "harness.device.GpuDevice.release", "harness.device.GpuDevice.start", "harness.device.GpuDevice.stop",
    "harness.device.GpuDevice.elapsed_ns", "harness.device.GpuDevice.synchronize", "harness.device.HostDevice.start",
    "harness.device.HostDevice.stop", "harness.device.HostDevice.elapsed_ns", "harness.timing.measure",
    "harness.timing.run_sample", "reference.checker.compare", "reference.checker.compare_groups",
    "harness.guard.inspect_outputs", "harness.guard.Integrity.replaced", "harness.guard.StackedCheck.ok",
)


def resolve(dotted: str):
    """The object a dotted name points at now, looked up afresh from the loaded modules (None if absent)."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        obj = sys.modules.get(".".join(parts[:cut]))
        if obj is None:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name, None)
        return obj
    return None


def _code(obj):
    return getattr(obj, "__code__", None)


class Integrity:
    """Snapshot of the watched objects (and the task module's functions), taken before the
    submission is imported; `extra` names more objects to watch (the worker's own entry points)."""

    def __init__(self, task_module, extra: tuple = ()):
        task = f"reference.{task_module.__name__.split('.')[-1]}"
        names = ("generate_input", "ref_kernel", "check_output", "fresh_slots", "rebuild")
        self.names = WATCHED + tuple(extra) + tuple(f"{task}.{n}" for n in names)
        self.saved = {name: resolve(name) for name in self.names}
        self.codes = {name: _code(obj) for name, obj in self.saved.items()}

    def replaced(self) -> list[str]:
        return [name for name in self.names
                if (now := resolve(name)) is not self.saved[name] or _code(now) is not self.codes[name]]


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


def sign_patterns(n_inputs: int):
    """Secret negate/keep choices per input, one list per sample. The first timed sample is the
    exact opposite of the correctness pass, so anything remembered from it is wrong at once."""
    first = [bool(secrets.randbits(1)) for _ in range(n_inputs)]
    yield first
    yield [not s for s in first]
    while True:
        yield [bool(secrets.randbits(1)) for _ in range(n_inputs)]


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
