"""Attack (the super-batch that won the contest's group GEMM until it was scrubbed): every slot of a sample is mapped in
the worker's process, so the first call of a sample computes every call's output at once, straight into each slot's c,
and the other calls return their c untouched. It finds the slots through the worker object (the garbage collector's
list of objects). Nothing is skipped: the work moves into the first call. Under the evaluator's clock, and under the
witness on a CPU, all of it is inside the sample: it is priced at its real cost, and passes. Stderr says how many
outputs each first call computed."""
import gc
import sys

from _honest import gemm

_state = {"done": set()}


def _slots():
    for obj in gc.get_objects():
        if type(obj).__name__ == "Worker" and isinstance(getattr(obj, "slots", None), dict):
            return list(obj.slots.values())
    return []


def custom_kernel(data):
    c = data[-1]
    if c.data_ptr() in _state["done"]:  # computed by the first call of this sample
        _state["done"].discard(c.data_ptr())
        return c
    slots = [s for s in _slots() if s[-1].data_ptr() != c.data_ptr()]
    c[:, :, 0] = gemm(data)
    for other in slots:
        other[-1][:, :, 0] = gemm(other)
        _state["done"].add(other[-1].data_ptr())
    if slots:
        print(f"[superbatch_slots] the first call computed {len(slots) + 1} outputs", file=sys.stderr, flush=True)
    return c
