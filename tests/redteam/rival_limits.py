"""Attack (one file sinks another, no harness code touched): set a rival worker's CPU-time limit.

Beside another file in `diff --measure`, `submit --best`, a sweep, or another run of the standing evaluator, every
call looks (at most every 0.2 s) for the workers it can name (tests/redteam/_reach.py: the ones that share its
grandparent) and sets each one's RLIMIT_CPU to 1 s with prlimit(2): both workers are of one user and hold no
capability, so the kernel allows it unless the rival is out of reach. The rival has long used its second, and dies of
SIGXCPU (on the H200, gemm v27 crashed so in round 2 and the comparison stopped). It notes in redteam_rival_limits.log
in its build cache what it could name and what it did. Computes honestly."""
import os
import resource
import time

from _honest import honest
from _reach import note, rivals, visible

_last = [0.0]


def reach():
    found = rivals()
    done = []
    for pid in found:
        try:
            resource.prlimit(pid, resource.RLIMIT_CPU, (1, resource.RLIM_INFINITY))
            done.append(f"{pid}: RLIMIT_CPU 1 s")
        except OSError as exc:
            done.append(f"{pid}: RLIMIT_CPU 1 s: {exc.strerror}")
    note("rival_limits", f"looked: {len(visible())} processes named, rivals {found}; {', '.join(done) or 'none'}")


def custom_kernel(data):
    if time.monotonic() - _last[0] > 0.2:
        _last[0] = time.monotonic()
        reach()
    return honest(data)
