"""Attack (a process that outlives the run, through the spare worker's `preexisting` set): in the default modes
(test, then benchmark), the benchmark's worker is a spare started just after the test worker
(harness/evaluator/supervisor.py start_spares). WorkerProcess.__init__ records `preexisting = set(_children())`, the
evaluator's live children at that moment, which includes the test worker itself. Those pids are "not the worker's
own" forever after (`_not_its_own`): `descendants()` leaves them out, so the per-sample check for leftover
processes does not see them, and `kill_strays(..., spare=_not_its_own())` at stop does not kill them.

The test worker is stopped before the benchmark starts, so its pid is free. pid_max is small (32768 here; the
kernel's default on small machines), so the benchmark worker, at import, cycles the pid counter with short-lived
threads up to the test worker's old pid less one, then forks so that an orphan (re-parented to the evaluator, the
subreaper) gets exactly that pid. It leaves the worker's process group (setsid), so killpg does not reach it.
The run passes; the orphan outlives the evaluator and is free to keep a CPU (or, on a GPU host, the GPU) busy while
later runs of other files are measured. Here it hogs one CPU for HOG_S seconds after the evaluator is gone, then
exits. The orphan says on stderr that it landed at the old pid (or the worker that it never did, after PLANT_S
seconds of tries). Computes honestly. The evaluator now tells processes apart by pid and start time, so the orphan is its
worker's stray and is killed when the worker stops."""
import os
import threading
import time

from _honest import acted, honest

HOG_S = 20.0
PLANT_S = 60.0  # how long the worker tries to land its orphan at the old pid (other processes take pids too)
NEAR = 16  # forks start this close below the old pid: the pids between may be held by processes that live on


def hidden(evaluator: int) -> None:
    """The orphan at the recycled pid: outlive the evaluator, then hog a CPU for a while."""
    os.setsid()  # out of the worker's process group: killpg(worker) does not reach it
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 4096)  # the channel and the output pipe: the evaluator sees its worker's ends close normally
    while os.getppid() == evaluator:
        time.sleep(0.2)
    end = time.monotonic() + HOG_S
    x = 0
    while time.monotonic() < end:
        x += 1
    os._exit(0)


def last_tid() -> int:
    t = threading.Thread(target=lambda: None)
    t.start()
    tid = t.native_id
    t.join()
    return tid


def plant(target: int, evaluator: int) -> None:
    a = os.fork()
    if a:
        os.waitpid(a, 0)
        return
    try:  # A: a child of the worker; its orphan B must land on `target`
        deadline = time.monotonic() + PLANT_S
        while time.monotonic() < deadline:
            b = last_tid()  # the pid counter goes round, a thread at a time, until it comes near
            while target - NEAR <= b < target:  # then fork, a pid at a time, until a child lands on it or past it
                b = os.fork()
                if b == 0:
                    if os.getpid() != target:
                        os._exit(0)
                    while os.getppid() != evaluator:  # A leaves at once: B is re-parented to the evaluator
                        time.sleep(0.001)
                    acted("pid_reuse", "an orphan runs at the test worker's old pid")
                    hidden(evaluator)
                if b == target:
                    os._exit(0)
                os.waitpid(b, 0)
        acted("pid_reuse", f"no orphan landed at the test worker's old pid in {PLANT_S:g} s")
    finally:
        os._exit(1)


def main() -> None:
    evaluator = os.getppid()
    state = os.path.join(os.environ["XDG_CACHE_HOME"], f"pid_reuse.{evaluator}")  # its build cache, kept between workers
    if not os.path.exists(state):  # the test worker: leave its pid for the benchmark's worker
        with open(state, "w") as f:
            f.write(str(os.getpid()))
        return
    target = int(open(state).read())
    if target == os.getpid():
        return
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{target}") and time.monotonic() < deadline:
        time.sleep(0.05)
    plant(target, evaluator)


main()


def custom_kernel(data):
    return honest(data)
