"""Shared by the red-team files that reach for processes outside their worker (not a submission itself): which
processes this process can name, which of them are other workers or the evaluators above it, and a log kept in
the file's build cache (XDG_CACHE_HOME), which outlives the run, for the tests to read."""
import os
import time

LOOK_EVERY_S = 0.2
_looked = {}


def note(name: str, text: str) -> None:
    with open(os.path.join(os.environ["XDG_CACHE_HOME"], f"redteam_{name}.log"), "a") as f:
        f.write(text + "\n")


def visible() -> list[int]:
    """Every process this one can name (/proc lists them)."""
    return sorted(int(entry) for entry in os.listdir("/proc") if entry.isdigit())


def _read(pid: int, what: str) -> str:
    try:
        with open(f"/proc/{pid}/{what}", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def parent(pid: int) -> int:
    status = dict(line.split(":\t", 1) for line in _read(pid, "status").splitlines() if ":\t" in line)
    return int(status.get("PPid", "0").strip() or 0)


def rivals() -> list[int]:
    """Workers of other files, or of other runs, that this process can name and that have the same grandparent as
    this worker (the evaluator of `diff --measure`, the sweep, the standing evaluator or the test that started them
    all): a forked worker is named nvfp4-worker, a fresh one runs `-m harness.worker`. Nothing else on the machine."""
    grandparent = parent(os.getppid())
    return [pid for pid in visible() if pid != os.getpid() and grandparent > 0
            and (_read(pid, "comm").strip() == "nvfp4-worker" or "-m harness.worker" in _read(pid, "cmdline"))
            and parent(parent(pid)) == grandparent]


def evaluators_above() -> list[int]:
    """This worker's ancestors that run the harness (run.py, a forked run or the standing evaluator), nearest first:
    never anything above them on the machine."""
    found, pid = [], os.getppid()
    while pid > 0 and "run.py" in _read(pid, "cmdline"):
        found.append(pid)
        pid = parent(pid)
    return found


def reach_rivals(name: str, changes: list) -> None:
    """At most every LOOK_EVERY_S: apply each (what, change(pid)) to every rival, and note what this process could name
    and which changes took."""
    if time.monotonic() - _looked.get(name, 0.0) < LOOK_EVERY_S:
        return
    _looked[name] = time.monotonic()
    found, done = rivals(), []
    for pid in found:
        for what, change in changes:
            try:
                change(pid)
                done.append(f"{pid}: {what}")
            except OSError as exc:
                done.append(f"{pid}: {what}: {exc.strerror}")
    note(name, f"looked: {len(visible())} processes named, rivals {found}; {', '.join(done) or 'none'}")
