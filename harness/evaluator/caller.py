"""What a run through the standing evaluator takes from the command line that asked for it, beside its arguments,
folder, environment and stdio (harness.forward): its resource limits, scheduling policy and priority, nice value,
CPU affinity and umask. So a served run starts where a run of its own would, whatever was done to the standing
evaluator's own process meanwhile: any process of its user that can name it may lower its limits (prlimit), renice
it, put it in SCHED_IDLE or pin it to one CPU, and a fork inherits all of that.

The server reads the command line's state while the pidfd it holds shows that very process alive (harness.peers),
and the forked run takes it on before anything else runs (`take_on`). Where the kernel refuses (a hard limit, a nice
value or a scheduling policy that this process may no longer raise itself to without privilege), the run is declined
and the command line runs it itself.
"""
import os
import resource
from dataclasses import dataclass

from ..peers import status

LIMITS = sorted({getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")})


@dataclass(frozen=True)
class CallerState:
    """A process's limits ({resource: (soft, hard)}), scheduling, nice value, CPU affinity and umask."""

    limits: dict
    policy: int
    priority: int
    nice: int
    affinity: frozenset
    umask: int

    @classmethod
    def of(cls, pid: int) -> "CallerState | None":
        """The state of process `pid`, or None where it cannot be read (the process gone)."""
        try:
            return cls({limit: resource.prlimit(pid, limit) for limit in LIMITS}, os.sched_getscheduler(pid),
                       os.sched_getparam(pid).sched_priority, os.getpriority(os.PRIO_PROCESS, pid),
                       frozenset(os.sched_getaffinity(pid)), int((status(pid) or {})["Umask"], 8))
        except (OSError, KeyError, ValueError):
            return None

    def take_on(self) -> str | None:
        """Give this process the state (the limits first: RLIMIT_NICE bounds the nice value it may take); why it
        could not, or None."""
        try:
            for limit, pair in self.limits.items():
                resource.setrlimit(limit, pair)
            os.sched_setscheduler(0, self.policy, os.sched_param(self.priority))
            os.setpriority(os.PRIO_PROCESS, 0, self.nice)
            os.sched_setaffinity(0, self.affinity)
        except (OSError, ValueError) as exc:
            return (f"this process may not take on the command line's limits, scheduling or CPUs ({exc}): another "
                    f"process lowered its own; restart `serve`")
        os.umask(self.umask)
        return None
