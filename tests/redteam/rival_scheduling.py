"""Attack (one file slows another, no harness code touched): renice a rival worker to 19, put it in SCHED_IDLE and
pin it to one CPU.

Beside another file in `diff --measure`, `submit --best`, a sweep, or another run of the standing evaluator, every
call looks (at most every 0.2 s) for the workers it can name (tests/redteam/_reach.py) and changes each one's
scheduling with setpriority(2), sched_setscheduler(2) and sched_setaffinity(2): same user, no capability needed. On
the CPU the honest rival got `tampered` (the witness gives no wait credit to a main thread off the default
scheduling); on the H200 the comparison hung past 240 s. It notes in redteam_rival_scheduling.log in its build cache
what it could name and what it did. Computes honestly."""
import os

from _honest import honest
from _reach import reach_rivals

CHANGES = [("nice 19", lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 19)),
           ("SCHED_IDLE", lambda pid: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))),
           ("one CPU", lambda pid: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))}))]


def custom_kernel(data):
    reach_rivals("rival_scheduling", CHANGES)
    return honest(data)
