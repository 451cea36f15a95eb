"""Result records: one JSON line per case and mode, appended atomically to results/<task>.jsonl.

Only the runner process writes, one whole line per os.write under an exclusive lock, so a
crashing worker can never truncate or interleave earlier records.
`pandas.read_json("results/gemm.jsonl", lines=True)` loads a file.
"""
import datetime as dt
import fcntl
import functools
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_ENV = "NVFP4_ARENA_RESULTS"
LOCAL = "local"  # results/local/: git-ignored records of this machine's CPU runs
TIMINGS = ("arena", "contest", "legacy")  # how a record's times were taken; "legacy": before records said
DEFAULT_TIMING = "arena"


def results_dir() -> Path:
    return Path(os.environ.get(RESULTS_ENV, ROOT / "results"))


def records_dir(device_name: str | None) -> Path:
    """Where a run's records go: $NVFP4_ARENA_RESULTS when set; otherwise results/ for GPU runs
    (the tracked history) and the git-ignored results/local/ for CPU runs (smoke shapes and
    wall-clock timers, never part of the tracked history)."""
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    return results_dir() / LOCAL if device_name == "cpu" else results_dir()


def read_all(name: str) -> list[dict]:
    """The records of results/<name> and of results/local/<name> (CPU runs), in that order."""
    base = results_dir()
    return read(base / name) + read(base / LOCAL / name)


@functools.cache
def git_state() -> dict:
    if os.environ.get("NVFP4_ARENA_COMMIT"):
        # Told by the caller, and it wins: a copy of the tree on a lent GPU machine may carry no .git,
        # or a stale one whose HEAD is not the commit that was copied.
        return {"commit": os.environ["NVFP4_ARENA_COMMIT"], "dirty": os.environ.get("NVFP4_ARENA_DIRTY") == "1"}
    return repo_state(ROOT)


def repo_state(root: Path) -> dict:
    """HEAD's commit and whether tracked files differ from it; records under results/ do not
    count (every run appends there, so counting them would mark every later record dirty)."""
    def git(*args):
        try:
            out = subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=root, capture_output=True, text=True,
                                 timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None
    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)results")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(f"short write to {path}: {written} of {len(line)} bytes")
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read(path: Path) -> list[dict]:
    """All well-formed records of a file (a torn last line, if any, is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def merge(source: Path, dest: Path) -> dict[str, int]:
    """Append to dest/<name>.jsonl every record of source/<name>.jsonl that dest does not hold yet.

    For records that come back from another machine (a device run's copy of results/): records are
    compared whole, so merging the same folder twice, or one that started from a copy of dest, adds
    nothing twice. Returns how many records each file gained.
    """
    added = {}
    for src in sorted(Path(source).glob("*.jsonl")):
        target = Path(dest) / src.name
        seen = {json.dumps(r, sort_keys=True, default=str) for r in read(target)}
        count = 0
        for record in read(src):
            key = json.dumps(record, sort_keys=True, default=str)
            if key not in seen:
                append(target, record)
                seen.add(key)
                count += 1
        added[src.name] = count
    return added
