"""The content of every try whose records were stored, kept by its sha256 in the git-ignored
results/local/tries/, so that a past try (`name@hash`) can be run, measured or submitted again after
its file was edited."""
import hashlib
import os
from pathlib import Path

from .results import LOCAL, results_dir


def folder() -> Path:
    return results_dir() / LOCAL / "tries"


def keep(path: Path, sha256: str) -> None:
    """A copy of the file, if it still holds the content with this hash (it may have been edited since),
    written whole or not at all. Where it cannot be written, the run goes on: only running this try
    again by its hash will not work."""
    kept = folder() / f"{sha256}.py"
    try:
        text = Path(path).read_text()
        if kept.exists() or hashlib.sha256(text.encode()).hexdigest() != sha256:
            return
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial = kept.with_suffix(f".{os.getpid()}.part")
        partial.write_text(text)
        os.replace(partial, kept)
    except OSError:
        return


def kept(sha256: str) -> Path | None:
    path = folder() / f"{sha256}.py"
    return path if path.is_file() else None
