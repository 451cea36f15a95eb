"""Attack (false number, GPU): the last 60% of a sample's calls on a second stream that the worker's own events and
its "done" do not wait for, in two samples of three: the end event, and "done" behind it, come after 40% of the
work. The outputs are right. Under the evaluator's clock the tail is counted (its context keeps the GPU until the
tail ends) or, past a time slice, found by the spot check. Stderr says which calls went to the side stream."""
import sys

import torch
from _honest import gemm

CALLS = 50  # a gemm sample's calls (leaderboard_shapes.yaml)
_state = {"call": 0}
_side = torch.cuda.Stream() if torch.cuda.is_available() else None


def custom_kernel(data):
    call = _state["call"] % CALLS
    sample = _state["call"] // CALLS
    _state["call"] += 1
    c = data[-1]
    if _side is None or sample % 3 == 2 or call < 0.4 * CALLS:
        c[:, :, 0] = gemm(data)
        return c
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        c[:, :, 0] = gemm(data)
    if call == CALLS - 1:
        print(f"[side_stream_tail] sample {sample}: calls {int(0.4 * CALLS)}..{CALLS - 1} on the side stream",
              file=sys.stderr, flush=True)
    return c
