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
import sys
import tarfile
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from reference import TASKS

from .paths import ROOT

RESULTS_ENV = "NVFP4_ARENA_RESULTS"
LOCAL = "local"  # results/local/: git-ignored records of this machine's CPU runs


def results_dir() -> Path:
    return Path(os.environ.get(RESULTS_ENV, ROOT / "results"))


def records_dir(device_name: str | None) -> Path:
    """Where a run's records go: $NVFP4_ARENA_RESULTS when set; otherwise results/ for GPU runs
    (the tracked history) and the git-ignored results/local/ for CPU runs (smoke shapes and
    wall-clock timers, never part of the tracked history)."""
    if os.environ.get(RESULTS_ENV):
        return Path(os.environ[RESULTS_ENV])
    return home_of(results_dir(), device_name)


def home_of(base: Path, device_name: str | None) -> Path:
    """Where under a results folder a device's records belong: base for a GPU's, base/local/ for a CPU's."""
    return base / LOCAL if device_name == "cpu" else base


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
    """HEAD's commit and whether the code differs from it: changed tracked files (records under results/ do
    not count: every run appends there, so counting them would mark every later record dirty), and untracked
    files under harness/ and reference/ (a stray module there can shadow or extend the evaluator's code)."""
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
    stray = git("ls-files", "--others", "--exclude-standard", "--", "harness", "reference")
    untracked = [line for line in (stray or "").splitlines() if line]
    state = {"commit": commit, "dirty": bool(status) or bool(untracked) if status is not None else None}
    if untracked:
        state["untracked"] = untracked[:20]
    return state


def repo_path(path) -> str:
    """A submission's path inside the repository when it lives there, else its whole path (a try named later, from
    another folder, is found in its file while that holds its code: harness.views.tries.locate)."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(resolved)


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def append(path: Path, record: dict) -> None:
    """One whole line under an exclusive lock; it starts on a fresh line even after a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and _last_byte(path, size) != b"\n":
            line = b"\n" + line
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(f"short write to {path}: {written} of {len(line)} bytes")
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _last_byte(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _optional(r: dict, key: str, kind) -> bool:
    return r.get(key) is None or isinstance(r[key], kind)


def _hex(value) -> bool:
    return value is None or (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value))


def is_record(r) -> bool:
    """A result record as the runner writes it (any schema): the fields the views rely on, typed (a record merged
    from another machine's archive meets the same test)."""
    return (isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("run_id", "version", "mode", "status"))
            and isinstance(r.get("index", 0), int) and not isinstance(r.get("index", 0), bool)
            and all(_optional(r, k, str) for k in ("timestamp", "kind", "shape", "timing", "message", "submission"))
            and _optional(r, "gpu", dict) and _hex(r.get("sha256")) and _hex(r.get("code_sha256"))
            and (r.get("gpu") is None or _optional(r["gpu"], "name", str))
            and (r.get("stats") is None or (isinstance(r["stats"], dict) and _number(r["stats"].get("mean"))
                                             and all(_number(r["stats"][k]) for k in ("median", "host_ns")
                                                     if r["stats"].get(k) is not None))))


def is_entry(r) -> bool:
    """A local leaderboard entry."""
    return (isinstance(r, dict) and isinstance(r.get("task"), str) and isinstance(r.get("version"), str)
            and (r.get("geomean_ns") is None or _number(r["geomean_ns"]))
            and all(_optional(r, k, str) for k in ("gpu", "when", "shapes", "timing")) and _hex(r.get("sha256")))


def validator(path: Path):
    return is_entry if Path(path).name == "leaderboard.jsonl" else is_record


_warned = set()


def read(path: Path) -> list[dict]:
    """The valid records of a file. Lines that are not (a torn line, other JSON, a record with a
    field of the wrong type) are skipped and counted in one warning per file."""
    path = Path(path)
    if not path.exists():
        return []
    valid, records, bad = validator(path), [], 0
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if valid(record):
            records.append(record)
        else:
            bad += 1
    if bad and path not in _warned:
        _warned.add(path)
        print(f"warning: {path}: skipped {bad} line(s) that are not records", file=sys.stderr)
    return records


RECORD_FILES = {f"{task}.jsonl" for task in TASKS} | {"leaderboard.jsonl"}  # the files the views read


@dataclass
class Merged:
    """One record file merged: where it was (inside the folder or archive given), how many valid records it held,
    and how many of them were new in each file they went to."""

    source: str
    records: int
    added: dict[str, int]  # target file -> records appended


@dataclass
class Merge:
    """What a merge did: each record file found, and the other .jsonl files it left alone (notes' raw runs: the
    views read only RECORD_FILES)."""

    files: list[Merged]
    left_out: list[str]


def merge_file(src: Path, dest: Path) -> tuple[int, dict[str, int]]:
    """Append to dest every record of src that dest does not hold yet, each to dest/<name> or, a CPU's,
    dest/local/<name> (as records_dir places them): (records in src, {target: records appended})."""
    seen, added = {}, {}
    records = read(src)
    for record in records:
        gpu = record.get("gpu")  # a run's: {"name": ...}; a leaderboard entry's: the name
        target = home_of(Path(dest), gpu.get("name") if isinstance(gpu, dict) else gpu) / src.name
        if target not in seen:
            seen[target] = {json.dumps(r, sort_keys=True, default=str) for r in read(target)}
            added[str(target)] = 0
        key = json.dumps(record, sort_keys=True, default=str)
        if key not in seen[target]:
            append(target, record)
            seen[target].add(key)
            added[str(target)] += 1
    return len(records), added


def merge(source: Path, dest: Path, shown: Path | None = None) -> Merge:
    """Every record file (RECORD_FILES) under a results folder, at any depth (results/local/ included, or a
    folder of several machines' copies), merged into dest by merge_file.

    For records that come back from another machine (a device run's copy of results/, `tar czf results.tgz results`
    of a checkout): records are compared whole, so merging the same folder twice, or one that started from a copy
    of dest, adds nothing twice; lines that are not records are skipped (read warns). `shown`: the folder the
    sources are named relative to (default: source).
    """
    source = Path(source)
    files, left_out = [], []
    for path in sorted(source.rglob("*.jsonl")):
        where = str(path.relative_to(shown or source))
        if path.name not in RECORD_FILES:
            left_out.append(where)
            continue
        count, added = merge_file(path, dest)
        files.append(Merged(where, count, added))
    return Merge(files, left_out)


class MergeError(Exception):
    """An archive that cannot be read; the message is for the user."""


def merge_from(source: Path, dest: Path) -> Merge:
    """merge() from a results folder, or from an archive of one (a .tgz, such as `tar czf results.tgz results`
    makes: its paths are named as inside the archive). MergeError: an unreadable archive."""
    if not source.is_file():
        return merge(source, dest)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            with tarfile.open(source) as archive:
                archive.extractall(tmp, filter="data")
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise MergeError(f"{source}: not a readable archive of records ({type(exc).__name__}: {exc}); "
                             f"nothing was merged.") from None
        return merge(Path(tmp), dest)
