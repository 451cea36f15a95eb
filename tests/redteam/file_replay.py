"""Attack (file replay, gpu-mode/reference-kernels issue #162): solve once, store the answers in a file that outlives
the run, and let a later run replay them instead of computing. /dev/shm is writable by every worker and kept after
it, so the store is a folder there: where it does not exist when this file is imported, the run records (computes
honestly and stores each output, by a fingerprint of its input, up to STORED of them); where it exists, the run
replays (answers every call whose fingerprint is stored and leaves c as it is for any other, as a replayer that
trusts its inputs to repeat would). Under the contest's fixed benchmark seeds every timed input of a second run
would be stored; here the correctness inputs are the contest's and repeat, while every recorded sample's inputs
come from seeds keyed afresh in each run. NVFP4_ARENA_REPLAY_DIR names the folder (default under /dev/shm).

Stderr says which phase the run is in, and in a replaying run how many calls were answered from the file."""
import hashlib
import os
import sys
from pathlib import Path

import torch

from _honest import honest

STORE = Path(os.environ.get("NVFP4_ARENA_REPLAY_DIR", "/dev/shm/redteam_file_replay"))
STORED = 120  # outputs a recording run keeps: every correctness input and a few samples'
REPLAYING = STORE.is_dir()
STORE.mkdir(exist_ok=True)
_counts = {"replayed": 0, "missed": 0, "stored": 0}
print(f"[file_replay] {'replaying from' if REPLAYING else 'recording into'} {STORE}", file=sys.stderr, flush=True)


def fingerprint(data) -> str:
    digest = hashlib.sha256()
    for tensor in data[:-1]:
        digest.update(tensor.contiguous().view(torch.uint8).cpu().numpy().tobytes())
    return digest.hexdigest()[:32]


def custom_kernel(data):
    c = data[-1]
    answer = STORE / f"{fingerprint(data)}.pt"
    if not REPLAYING:
        out = honest(data)
        if _counts["stored"] < STORED:
            torch.save(out.cpu(), answer)
            _counts["stored"] += 1
        return out
    if answer.exists():
        c.copy_(torch.load(answer).to(c.device))
        _counts["replayed"] += 1
        print(f"[file_replay] replayed {_counts['replayed']} calls from the file", file=sys.stderr, flush=True)
    else:
        _counts["missed"] += 1
        if _counts["missed"] == 1:
            print("[file_replay] an input not in the file: c left as it is", file=sys.stderr, flush=True)
    return c
