"""How a slot's input tuple is laid out in shared memory: the structure, and each tensor as a view of its
device's byte buffer. Both sides use it: the evaluator to build slots (harness.evaluator.slots), the worker to map
them (`open_slot`). It holds no state."""
import mmap

import torch

def flatten(data) -> tuple[object, list]:
    """(structure, tensors): the structure is JSON with {"t": i} where tensor i stood."""
    tensors = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            tensors.append(x)
            return {"t": len(tensors) - 1}
        if isinstance(x, tuple):
            return {"tuple": [walk(v) for v in x]}
        if isinstance(x, list):
            return {"list": [walk(v) for v in x]}
        if isinstance(x, (int, float, str, bool)) or x is None:
            return {"v": x}
        raise TypeError(f"cannot share a {type(x).__name__} with the worker")
    return walk(data), tensors


def unflatten(structure, tensors: list):
    if "t" in structure:
        return tensors[structure["t"]]
    if "tuple" in structure:
        return tuple(unflatten(s, tensors) for s in structure["tuple"])
    if "list" in structure:
        return [unflatten(s, tensors) for s in structure["list"]]
    return structure["v"]


def span_bytes(t: torch.Tensor) -> int:
    """Bytes from a tensor's first element to one past its last, whatever its strides."""
    if t.numel() == 0:
        return 0
    return (1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()))) * t.element_size()


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def view(buffer: torch.Tensor, spec: dict) -> torch.Tensor:
    """The tensor a layout entry describes, as a view of the byte buffer it lives in."""
    dtype = getattr(torch, spec["dtype"])
    raw = buffer[spec["offset"]:spec["offset"] + spec["bytes"]]
    size = dtype.itemsize
    flat = raw.view(dtype) if spec["bytes"] % size == 0 else raw[:spec["bytes"] // size * size].view(dtype)
    return flat.as_strided(spec["shape"], spec["stride"])



def output_buffers(data) -> tuple[list, bool]:
    """The output buffers of one input tuple (each group's c for group GEMM), and whether it is grouped."""
    if isinstance(data[0], list):
        return [abc[2] for abc in data[0]], True
    return [data[-1]], False


def open_cuda(handle: str) -> torch.Tensor:
    """The CUDA buffer an IPC handle from harness.evaluator.slots.ipc_handle names, mapped in this process."""
    import pickle

    from torch.multiprocessing.reductions import init_reductions
    init_reductions()
    return pickle.loads(bytes.fromhex(handle))


def open_slot(layout: dict, fd: int | None, handle: dict):
    """The worker's end: the input tuple a slot holds, as views of the mapped buffers."""
    buffers = {}
    if layout["sizes"]["cpu"]:
        mapped = mmap.mmap(fd, layout["sizes"]["cpu"])
        buffers["cpu"] = torch.frombuffer(mapped, dtype=torch.uint8)
    if handle.get("cuda"):
        buffers["cuda"] = open_cuda(handle["cuda"])
    tensors = [view(buffers[s["device"]], s) for s in layout["tensors"]]
    return unflatten(layout["structure"], tensors)
