"""What a try is and how one is named. A try is one code of a named file: the records of one name
(a record's `version`: a lineage version, a file's stem, or the label given with --name) and one
code hash (a record's code_sha256: its content less its module docstring, harness.submission.code_sha256;
the whole content's sha256 in older records whose content was not found again). Views show a try as
`name@1a2b3c4` (the first 7 hex of its code hash), except the current code of a lineage version
(submissions/<task>/vN.py as it is now), which keeps its bare name `vN`; records without a hash keep their
name. On the command line `name@1a2b` (a prefix of at least 4 hex) picks one try; a bare name or a file's
path picks that name's current code where it has runs, otherwise its newest try that has."""
import re
from pathlib import Path

from reference import TASKS

from .. import sources
from ..paths import ROOT
from ..results import read_all
from ..submission import LINEAGE_NAME, SUBMISSIONS, Submission, SubmissionError, code_sha256, version_key
from ..submission import resolve as resolve_file

SHOWN = 7  # hex digits of a try's hash in its label
PREFIX = re.compile(r"[0-9a-f]{4,64}")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


class TryError(ValueError):
    """A name@hash that picks no stored try, or several; the message lists the tries of that name."""


def code_of(path: Path) -> str:
    """The code hash of a file as it is now."""
    return code_sha256(Path(path).read_text())


def record_code(record: dict) -> str | None:
    """The code hash of the try a record belongs to."""
    return record.get("code_sha256") or record.get("sha256")


def current_code(task: str, name: str) -> str | None:
    """The code hash of submissions/<task>/<name>.py as it is now; None for a name outside the lineage."""
    path = SUBMISSIONS / task / f"{name}.py"
    return code_of(path) if LINEAGE_NAME.fullmatch(name) and path.is_file() else None


def width(codes) -> int:
    """Hex digits that tell a name's tries apart: SHOWN, or more where two of its codes share that many (as git
    lengthens an abbreviated hash)."""
    codes = {c for c in codes if isinstance(c, str) and c}
    n = SHOWN
    while len({c[:n] for c in codes}) < len(codes):
        n += 1
    return n


def label(task: str, name: str, code, digits: int = SHOWN) -> str:
    if not isinstance(code, str) or not code or code == current_code(task, name):
        return name
    return f"{name}@{code[:digits]}"


def labels(task: str, df) -> list[str]:
    """The try label of each row of a records frame with `name` and `code` columns."""
    digits = {name: width(codes) for name, codes in df.groupby("name")["code"]} if len(df) else {}
    known = {}
    for pair in zip(df["name"], df["code"]):
        if pair not in known:
            known[pair] = label(task, *pair, digits.get(pair[0], SHOWN))
    return [known[pair] for pair in zip(df["name"], df["code"])]


def split(text: str) -> tuple[str, str | None]:
    """'my_kernel@1a2b' -> ('my_kernel', '1a2b'); text without a hex part after its last @ is a name."""
    name, at, prefix = text.rpartition("@")
    if not (at and name and re.fullmatch(r"[0-9a-f]+", prefix.lower())):
        return text, None
    if not PREFIX.fullmatch(prefix.lower()):
        raise TryError(f"{text}: give at least 4 hex digits of the try's hash (its label shows 7)")
    return name, prefix.lower()


def name_of(try_label: str, df) -> str:
    """The name a label belongs to (df: a records frame with `version` labels and `name` columns)."""
    mine = df[df["version"] == try_label]
    return mine["name"].iloc[0] if len(mine) else try_label


def newest_first(df, name: str) -> list[str]:
    """The labels of a name's tries in a records frame, the one run most recently first."""
    mine = df[df["name"] == name]
    return list(mine.groupby("version")["timestamp"].max().sort_values(ascending=False, kind="stable").index)


def stand_in(name: str, present, df) -> str | None:
    """Where a view needs one number for a name (a parent, v0): its current content if that has runs
    among `present`, else its newest try that has."""
    return next((t for t in [name, *newest_first(df, name)] if t in present), None)


def edited_since(task: str, try_label: str, df) -> bool:
    """A lineage version's earlier content, or a try of another name that has a newer try."""
    name = name_of(try_label, df)
    if current_code(task, name):
        return try_label != name
    newest = newest_first(df, name)
    return bool(newest) and newest[0] != try_label


def order(wanted: list[str], lineage: list[str], df) -> list[str]:
    """Labels in the order views list them: lineage names in lineage order, then other names in version
    order; a name's current content first, then its tries newest first."""
    by_name = {}
    for t in dict.fromkeys(wanted):
        by_name.setdefault(name_of(t, df), []).append(t)
    names = [n for n in lineage if n in by_name] + sorted(set(by_name) - set(lineage), key=version_key)
    out = []
    for name in names:
        rank = {t: i for i, t in enumerate([name, *newest_first(df, name)])}
        out += sorted(by_name[name], key=lambda t: rank.get(t, len(rank)))
    return out


def matching(name: str, prefix: str, codes) -> str:
    """The one code hash among a name's tries (newest first) that starts with the prefix; a TryError if none or
    several."""
    shas = [s for s in dict.fromkeys(codes) if isinstance(s, str)]
    found = [s for s in shas if s.startswith(prefix)]
    if len(found) == 1:
        return found[0]
    if not shas:
        raise TryError(f"no stored runs named {name}")
    listed = ", ".join(f"{name}@{s[:width(shas)]}" for s in (found or shas))
    if found:
        raise TryError(f"several tries of {name} have a hash starting {prefix} ({listed}): give more of it")
    raise TryError(f"no try of {name} has a hash starting {prefix}; its tries, newest first: {listed}")


def pick(task: str, text: str, present, df, boards: dict) -> str:
    """The label of the try a name on the command line means, among the tries of a view (present);
    df: the records frame the view read (every GPU and method, for the order of a name's tries). A path
    that is no file (any more) names its stem."""
    if Path(text).is_file():
        sub = resolve_file(text, task, boards)
        digits = width([*df[df["name"] == sub.version]["code"], sub.code_sha256])
        wanted = [label(task, sub.version, sub.code_sha256, digits), *newest_first(df, sub.version)]
    else:
        name, prefix = split(Path(text).stem if text.endswith(".py") else text)
        if prefix is not None:
            newest = df[df["name"] == name].sort_values("timestamp", ascending=False)["code"]
            return label(task, name, matching(name, prefix, newest), width(newest))
        wanted = [name, *newest_first(df, name)]
    return next((t for t in wanted if t in present), wanted[0])


def locate(records: list[dict], code: str) -> Path | None:
    """A file holding this code: a recorded file if it still does, else a copy kept of a content of it."""
    mine = [r for r in records if record_code(r) == code]
    for recorded in dict.fromkeys(r.get("submission") for r in mine):
        path = ROOT / recorded if recorded else None
        if path and path.is_file() and code_of(path) == code:
            return path
    kept = (sources.kept(sha) for sha in dict.fromkeys(r.get("sha256") for r in mine) if isinstance(sha, str))
    return next((path for path in kept if path and code_of(path) == code), None)


def runnable(task: str, try_label: str, df, records: list[dict]) -> bool:
    """Whether a try of a view (df: its records frame) can be run again by its label (resolve): a lineage version's
    current file, or a try whose code is still somewhere (locate, among the task's `records`)."""
    mine = df[df["version"] == try_label]
    if not len(mine):
        return False
    name, code = mine["name"].iloc[0], mine["code"].iloc[0]
    if try_label == name:
        return current_code(task, name) is not None
    return isinstance(code, str) and locate(records, code) is not None


def stored(name: str, task: str | None) -> list[dict]:
    """Every stored record of a name (any mode), newest first; of one task or of all."""
    records = [r for t in ([task] if task else TASKS) for r in read_all(f"{t}.jsonl") if r.get("version") == name]
    return sorted(records, key=lambda r: r.get("timestamp", ""), reverse=True)


def past(name: str, prefix: str, task: str | None, boards: dict) -> Submission:
    """A stored try to run again, under its name."""
    records = stored(name, task)
    try:
        code = matching(name, prefix, [record_code(r) for r in records])
    except TryError as exc:
        raise SubmissionError(str(exc)) from None
    mine = [r for r in records if record_code(r) == code]
    path = locate(mine, code)
    if path is None:
        raise SubmissionError(f"{name}@{code[:SHOWN]}: its file ({mine[0].get('submission')}) has changed since and "
                              f"no copy of it was kept (copies are kept of runs that stored records on this "
                              f"machine); its stored runs still show in list and diff")
    sub = resolve_file(str(path), task or mine[0].get("task"), boards)
    sub.version = name
    return sub


def resolve(text: str, task: str | None, boards: dict, name: str | None = None) -> Submission:
    """The file a command runs: a lineage version, a path, or a past try `name@hash`; with `name`
    (--name), its records are stored under that name instead of the file's."""
    if Path(text).is_file():
        sub = resolve_file(text, task, boards)
    else:
        try:
            base, prefix = split(text)
        except TryError as exc:
            raise SubmissionError(str(exc)) from None
        sub = past(base, prefix, task, boards) if prefix else resolve_file(text, task, boards)
    if name is not None:
        if not NAME.fullmatch(name) or LINEAGE_NAME.fullmatch(name):
            raise SubmissionError(f"--name {name!r}: use letters, digits and . _ + - (no @), and not a lineage "
                                  f"version's form vN")
        sub.version = name
    return sub
