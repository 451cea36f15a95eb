"""Memory shared with the worker: one slot per call of a sample, each its own allocation.

A slot holds one input tuple's tensors (the output buffer c included), laid out at page-aligned offsets of
one buffer per device: a memfd the worker maps (CPU tensors) and, on a GPU, one zeroed CUDA allocation from a
memory pool of its own (torch.cuda.MemPool), sized to fill its allocator segment, shared through CUDA IPC. The
worker maps whole segments, so nothing else lives in them: the evaluator's own copies, references and keys stay
in its private memory, and the check `isolated()` confirms that each CUDA segment it shares holds that slot's
buffer alone.

The layout travels to the worker as JSON (`Layout.to_wire()`): the input tuple's structure with each tensor replaced
by (device, offset, dtype, shape, stride). `write()` copies the evaluator's private inputs into a slot tensor by
tensor (the untimed calls, made once every write has ended). A timed sample's inputs are staged first (`Layout.stage()`: laid out as a slot is, in the evaluator's own memory), so
that a sample's writes take one copy per slot and device (`write_staged()`), not one launch per tensor.
"""
import functools
import io
import mmap
import os
from dataclasses import dataclass, field

import torch

from ..layout import dtype_name, flatten, output_buffers, span_bytes, unflatten, view

ALIGN = 4096
SEGMENT_ALIGN = 2 << 20  # torch's caching allocator rounds a large request to this
OWN_SEGMENT_BYTES = 12 << 20  # from here up a request gets a cudaMalloc of its own size: smaller ones share a
# segment of 2 MiB (up to 1 MiB) or 20 MiB (up to 10 MiB) with free space the worker could read through IPC


def segment_bytes(nbytes: int) -> int:
    """The size of a CUDA buffer that fills its allocator segment exactly: at least OWN_SEGMENT_BYTES."""
    return max(-(-nbytes // SEGMENT_ALIGN) * SEGMENT_ALIGN, OWN_SEGMENT_BYTES)


def ipc_handle(buffer: torch.Tensor) -> str:
    """A CUDA buffer's IPC handle (torch's own reduction) as hex, which harness.layout.open_cuda maps."""
    from multiprocessing.reduction import ForkingPickler

    from torch.multiprocessing.reductions import init_reductions
    init_reductions()
    out = io.BytesIO()
    ForkingPickler(out).dump(buffer)
    return out.getvalue().hex()


@dataclass
class Layout:
    structure: object
    tensors: list  # per tensor: {"device": "cpu"|"cuda", "offset", "bytes", "dtype", "shape", "stride"}
    sizes: dict  # bytes per device buffer
    outputs: list = field(default_factory=list)  # indices into `tensors` of the output buffers

    @classmethod
    def of(cls, template) -> "Layout":
        structure, tensors = flatten(template)
        output_ids = {id(t) for t in output_buffers(template)[0]}
        sizes, specs = {"cpu": 0, "cuda": 0}, []
        for t in tensors:
            where = "cuda" if t.is_cuda else "cpu"
            offset = sizes[where]
            nbytes = span_bytes(t)
            specs.append({"device": where, "offset": offset, "bytes": nbytes, "dtype": dtype_name(t.dtype),
                          "shape": list(t.shape), "stride": list(t.stride())})
            sizes[where] = -(-(offset + max(nbytes, 1)) // ALIGN) * ALIGN
        return cls(structure, specs, sizes, [i for i, t in enumerate(tensors) if id(t) in output_ids])

    @functools.cached_property
    def input_runs(self) -> list[tuple[str, int, int]]:
        """(device, start, end): the byte runs of each device buffer that hold no output, every input and the padding
        between tensors, so that a few compares cover a slot's inputs; worked out once per layout."""
        runs = []
        for where, size in self.sizes.items():
            start = 0
            for lo, hi in sorted((t["offset"], t["offset"] + t["bytes"]) for i, t in enumerate(self.tensors)
                                 if i in self.outputs and t["device"] == where) + [(size, size)]:
                if lo > start:
                    runs.append((where, start, lo))
                start = max(start, hi)
        return runs

    def to_wire(self) -> dict:
        return {"structure": self.structure, "tensors": self.tensors, "sizes": self.sizes}

    def views(self, buffers: dict) -> list:
        """Every tensor of the layout, as a view of its device's buffer in `buffers`."""
        return [view(buffers[spec["device"]], spec) for spec in self.tensors]

    def stage(self, private) -> "Staged":
        """The private input tuple copied into buffers of the evaluator's own, laid out as a slot is."""
        buffers = {where: torch.zeros(size, dtype=torch.uint8, device=where) for where, size in self.sizes.items()
                   if size}
        tensors = self.views(buffers)
        for staged, source in zip(tensors, flatten(private)[1]):
            staged.copy_(source)
        return Staged(unflatten(self.structure, tensors), buffers)

    def stage_cut(self, whole, count: int) -> list["Staged"]:
        """`count` input tuples cut along l from one drawn tuple (reference.draws: every tensor's last dimension is
        l times `count`), staged at once: one zeroed buffer per device holds their images one after another, and one
        copy per tensor fills them all, where stage() takes an allocation and a copy per tensor per tuple."""
        buffers = {where: torch.zeros(count * size, dtype=torch.uint8, device=where)
                   for where, size in self.sizes.items() if size}
        for spec, source in zip(self.tensors, flatten(whole)[1]):
            dtype = getattr(torch, spec["dtype"])
            images = buffers[spec["device"]].view(dtype).as_strided(
                (count, *spec["shape"]), (self.sizes[spec["device"]] // dtype.itemsize, *spec["stride"]),
                spec["offset"] // dtype.itemsize)
            images.copy_(source.unflatten(-1, (count, -1)).movedim(-2, 0))
        staged = []
        for i in range(count):
            own = {where: buffer[i * self.sizes[where]:(i + 1) * self.sizes[where]]
                   for where, buffer in buffers.items()}
            staged.append(Staged(unflatten(self.structure, self.views(own)), own))
        return staged


@dataclass
class Staged:
    """An input tuple laid out as a slot is (Layout.stage), in the evaluator's own memory: `data` is the tuple,
    views of `buffers`, one per device."""

    data: object
    buffers: dict


class Slot:
    """One call's inputs in shared memory, the evaluator's end."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.fd = None
        self.buffers = {}
        if layout.sizes["cpu"]:
            self.fd = os.memfd_create("nvfp4-arena-slot", os.MFD_CLOEXEC)
            os.ftruncate(self.fd, layout.sizes["cpu"])
            self._map = mmap.mmap(self.fd, layout.sizes["cpu"])
            self.buffers["cpu"] = torch.frombuffer(self._map, dtype=torch.uint8)
        if layout.sizes["cuda"]:
            self.pool = torch.cuda.MemPool()
            with torch.cuda.use_mem_pool(self.pool):  # zeroed: a fresh allocation may hold the evaluator's old data
                self.buffers["cuda"] = torch.zeros(segment_bytes(layout.sizes["cuda"]), dtype=torch.uint8,
                                                   device="cuda")
        self.tensors = layout.views(self.buffers)
        self.data = unflatten(layout.structure, self.tensors)

    def handle(self) -> dict:
        """What the worker needs to map this slot: its CUDA buffer's IPC handle."""
        return {"cuda": ipc_handle(self.buffers["cuda"])} if "cuda" in self.buffers else {}

    def isolated(self, segments: list | None = None) -> bool:
        """True when the CUDA segment the worker maps holds this slot's buffer and nothing else. segments: the
        allocator's snapshot (torch.cuda.memory_snapshot(), taken here if not given; one serves many slots)."""
        buf = self.buffers.get("cuda")
        if buf is None:
            return True
        ptr = buf.data_ptr()
        for segment in torch.cuda.memory_snapshot() if segments is None else segments:
            if segment["address"] <= ptr < segment["address"] + segment["total_size"]:
                live = [b for b in segment["blocks"] if b["state"] == "active_allocated"]
                return len(live) == 1 and segment["total_size"] == buf.numel()
        return False

    def write(self, private) -> None:
        """Copy the evaluator's private input tuple into the slot, tensor by tensor (for an untimed call)."""
        for slotted, source in zip(self.tensors, flatten(private)[1]):
            slotted.copy_(source)

    def input_pairs(self, staged: Staged) -> list:
        """(slot bytes, staged bytes) over the layout's input runs: equal bits mean the worker changed no input."""
        return [(self.buffers[where][start:end], staged.buffers[where][start:end])
                for where, start, end in self.layout.input_runs]

    def write_staged(self, staged: Staged, where: str | None = None) -> None:
        """Copy a staged input tuple into the slot: one copy per device (`where`: that device's alone)."""
        for device, buffer in staged.buffers.items():
            if where in (None, device):
                self.buffers[device][:buffer.numel()].copy_(buffer)

    def close(self):
        self.tensors, self.data, self.buffers = [], None, {}
        self.pool = None  # a private pool's segments go back to the driver with it (Evaluation.prepare)
        if self.fd is not None:  # the mapping goes with the last view of it
            os.close(self.fd)
            self.fd = None
