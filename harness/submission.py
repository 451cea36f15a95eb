"""Finding a submission file, reading its #!POPCORN headers and docstring, and importing it
the way the contest does (module name `submission`, `from task import ...` resolvable)."""
import ast
import hashlib
import importlib.util
import io
import linecache
import re
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from .paths import ROOT

SUBMISSIONS = ROOT / "submissions"
POPCORN = re.compile(r"^\s*#!POPCORN\s+(\S+)\s+(.*?)\s*$")
LINEAGE_NAME = re.compile(r"v\d+\w*")


class SubmissionError(Exception):
    """A submission that cannot be found or does not name a task; the message is for the user."""


@dataclass
class Submission:
    path: Path
    task: str
    version: str  # "v7" for lineage files; otherwise the file stem, or "folder-v7" where the stem looks like a version;
    # or the label given with --name (harness.views.tries)
    sha256: str  # of the file's content
    code_sha256: str  # of its content less its module docstring (code_sha256)
    headers: dict = field(default_factory=dict)
    text: str | None = field(default=None, repr=False)  # the content read once, hashed, imported by the worker and
    # submitted (resolve reads it; None where nothing was read: the worker reads the path)


def version_key(name: str):
    """Sort key putting v2 before v10; names that are not versions sort last."""
    m = re.match(r"v(\d+)(.*)", name)
    return (int(m.group(1)), m.group(2)) if m else (1 << 30, name)


def lineage_task(path: Path) -> str | None:
    """The task whose lineage folder (submissions/<task>/) holds this file, if any."""
    folder = path.resolve().parent
    return folder.name if folder.parent == SUBMISSIONS.resolve() else None


def popcorn_headers(text: str) -> dict:
    """`#!POPCORN key value` lines -> {key: value}; the last occurrence of a key wins."""
    headers = {}
    for line in text.splitlines():
        m = POPCORN.match(line)
        if m:
            headers[m.group(1).lower()] = m.group(2)
    return headers


def task_from_leaderboard(name: str, leaderboards: dict) -> str | None:
    """Map a leaderboard name (nvfp4_gemm, nvfp4-gemm, ...) to a task."""
    wanted = name.strip().lower().replace("-", "_")
    for task, board in leaderboards.items():
        if wanted in (board.lower(), task):
            return task
    return None


def code_sha256(text: str) -> str:
    """The sha256 of a file's content less its module docstring, what identifies a try (harness.views.tries):
    writing a measured effect into a version's docstring leaves its code, and the runs that measured it, one try.
    A file that does not parse, or that declares an encoding other than UTF-8 (Python would read other code from
    its bytes than this text holds), is hashed whole."""
    data = text.encode()
    try:
        declared = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        body = ast.parse(text).body if declared in ("utf-8", "utf-8-sig") else []
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # what a file can make the parser raise
        body = []
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        starts = [0]
        for line in data.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        begin = starts[first.lineno - 1] + first.col_offset  # ast's offsets count UTF-8 bytes
        end = starts[first.end_lineno - 1] + first.end_col_offset
        data = data[:begin] + data[end:]
    return hashlib.sha256(data).hexdigest()


def docstring(path: Path) -> str:
    try:
        return ast.get_docstring(ast.parse(path.read_text())) or ""
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return ""


def resolve(submission: str, task: str | None, leaderboards: dict) -> Submission:
    """`vN` (with a task) or a path -> Submission. Raises SubmissionError with a clear message."""
    candidate = Path(submission)
    if not candidate.suffix and task and LINEAGE_NAME.fullmatch(submission):
        candidate = SUBMISSIONS / task / f"{submission}.py"
    elif not candidate.exists() and not task:
        raise SubmissionError(f"'{submission}' is not a file; to run a lineage version, name the task too "
                              f"(--task {' | '.join(leaderboards)}).")
    if not candidate.is_file():
        where = SUBMISSIONS / str(task)
        named = candidate.parent == where  # a version name, not a path
        have = sorted((p.stem for p in where.glob("v*.py")), key=version_key) if named and where.is_dir() else []
        hint = f" Versions there: {', '.join(have)}." if have else ""
        raise SubmissionError(f"submission file {candidate} does not exist.{hint}")
    text = candidate.read_text()
    headers = popcorn_headers(text)
    header_task = None
    if "leaderboard" in headers:
        header_task = task_from_leaderboard(headers["leaderboard"], leaderboards)
        if header_task is None:
            raise SubmissionError(f"{candidate} names leaderboard '{headers['leaderboard']}' in its #!POPCORN "
                                  f"header, which is none of {', '.join(leaderboards.values())}.")
    if task and header_task and task != header_task:
        raise SubmissionError(f"{candidate} is for leaderboard '{headers['leaderboard']}' (task {header_task}) "
                              f"but --task {task} was given.")
    folder_task = lineage_task(candidate)
    if folder_task not in leaderboards:
        folder_task = None
    task = task or header_task or folder_task
    if task is None:
        raise SubmissionError(f"cannot tell which task {candidate} is for: pass --task, or add a "
                              f"'#!POPCORN leaderboard nvfp4_<task>' line to the file.")
    version = candidate.stem
    if folder_task != task and LINEAGE_NAME.fullmatch(version):
        version = f"{candidate.resolve().parent.name}-{version}"  # not to be taken for the lineage's own file
    return Submission(candidate.resolve(), task, version, hashlib.sha256(text.encode()).hexdigest(), code_sha256(text),
                      headers, text)


def import_submission(path: Path, source: str | None = None):
    """Import the file as module `submission`, with the repo root first on sys.path (for `task`). With `source`,
    that content runs under the file's name, whatever the file holds by now: the worker imports what the
    evaluator read and hashed, not what a later edit, or another run's worker, left at the path."""
    for p in (str(path.parent), str(ROOT)):
        if p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    if source is None:
        spec.loader.exec_module(module)
    else:  # what inspect and tracebacks read for the file's lines (Triton compiles a kernel from its source) is that
        # content too: an entry without a time stamp stays in linecache's cache
        linecache.cache[str(path)] = (len(source), None, source.splitlines(keepends=True), str(path))
        exec(compile(source, str(path), "exec"), module.__dict__)
    if not callable(getattr(module, "custom_kernel", None)):
        raise SubmissionError(f"{path} defines no custom_kernel(data) function.")
    return module
