"""Attack (one file sinks another, no harness code touched): set a rival worker's CPU-time limit.

Beside another file in `diff --measure`, `submit --best`, a sweep, or another run of the standing evaluator, every
call looks (at most every 0.2 s) for the workers it can name (tests/redteam/_reach.py: the ones that share its
grandparent) and sets each one's RLIMIT_CPU to 1 s with prlimit(2): both workers are of one user and hold no
capability, so the kernel allows it unless the rival is out of reach. The rival has long used its second, and dies of
SIGXCPU (on the H200, gemm v27 crashed so in round 2 and the comparison stopped). It notes in redteam_rival_limits.log
in its build cache what it could name and what it did. Computes honestly."""
import resource

from _honest import honest
from _reach import reach_rivals

LIMIT = ("RLIMIT_CPU 1 s", lambda pid: resource.prlimit(pid, resource.RLIMIT_CPU, (1, resource.RLIM_INFINITY)))


def custom_kernel(data):
    reach_rivals("rival_limits", [LIMIT])
    return honest(data)
