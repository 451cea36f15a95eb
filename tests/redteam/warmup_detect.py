"""Attack (warm-up detection, gpu-mode/pygpubench exploits/submission_warmup.py and submission_combined.py): tell the
warm-up from the timed run and behave differently in each. pygpubench's warm-up called the kernel on one input
over and over, and the number of timed calls came from the warm-up's time: a file that slept in the warm-up was
timed 3 times instead of 100, fewer chances to catch a wrong output. Our warm-up also times one draw throughout,
as the contest's loop does, so it is as easy to tell: this file takes a call whose input (a fingerprint of a) it
has seen before for the warm-up and sleeps SLEEP_S in it, and computes honestly always.

The recorded job's stopping rule reads only its own samples, all of fresh inputs, each checked. Stderr says when
the warm-up was recognised and when fresh inputs came again."""
import sys
import time

import torch

from _honest import honest

SLEEP_S = 0.02
_seen = set()
_state = {"warm": False, "slept": 0}


def custom_kernel(data):
    key = bytes(data[0].view(torch.uint8).flatten()[:64].cpu().tolist())
    warm = key in _seen
    _seen.add(key)
    if warm != _state["warm"]:
        _state["warm"] = warm
        print(f"[warmup_detect] {'repeated inputs: the warm-up, sleeping in each call' if warm else 'fresh inputs'} "
              f"(slept {_state['slept']} times so far)", file=sys.stderr, flush=True)
    if warm:
        time.sleep(SLEEP_S)
        _state["slept"] += 1
    return honest(data)
