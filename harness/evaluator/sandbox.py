"""What the evaluator grants a worker, and what it reports about the environment a run trusts.

- `worker_environment(paths)`: the worker's environment and the folders it may write: its own temporary folder,
  which becomes TMPDIR, and the build cache of the files it runs (`build_cache(paths)`: torch extensions, Triton,
  CUDA's JIT, XDG caches), one folder per set of file contents under ~/.cache/nvfp4-arena/builds/. A file can
  so reuse its own builds but never write another file's: one that planted a wrong extension in a shared
  cache would change the verdict of a later run of another file. Nothing a worker may write holds the
  repository, the results folder or the Python environment. The worker applies the rule itself before
  importing torch (harness.worker.confine).
- `trim_build_cache(folder)`: a file's build cache over BUILD_CACHE_CAP after its worker ends is removed whole (its
  next run builds again): one file cannot fill the disk run after run.
- `remove_build_locks(folder, ...)`: the lock files torch's extension builds leave in a build cache when their
  worker is killed mid-build (load_inline waits on such a lock forever, so every later run of the file would time
  out).
- `startup_hooks()`: `.pth` files with code and sitecustomize/usercustomize modules on this interpreter's
  path: each runs in every Python process, the evaluator's included, so a run names them.
"""
import hashlib
import os
import shutil
import site
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..paths import ROOT

BUILDS = Path.home() / ".cache" / "nvfp4-arena" / "builds"
BUILD_CACHE_CAP = 8 << 30  # bytes a file's build cache may keep between its runs
BUILD_LOCK = "lock"  # the file torch.utils.cpp_extension holds in an extension's build folder while it builds
CACHE_FOLDERS = {"TORCH_EXTENSIONS_DIR": "torch_extensions", "TRITON_CACHE_DIR": "triton/cache", "TRITON_HOME": "triton",
                 "CUTE_DSL_CACHE_DIR": "cute_dsl", "CUDA_CACHE_PATH": "nv", "XDG_CACHE_HOME": "xdg"}


def protected() -> list[Path]:
    """Folders no worker may write: the repository, the results folder, the Python environment."""
    from ..results import results_dir
    paths = [ROOT, results_dir(), Path(sys.prefix), Path(sys.base_prefix),
             *[Path(p) for p in {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}]]
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user:
        paths.append(Path(user))
    return [p.resolve() for p in paths]


def _holds(folder: Path, paths: list[Path]) -> bool:
    return any(p == folder or folder in p.parents for p in paths)


def build_cache(paths: list) -> Path:
    """The build-cache folder of a set of files: one per set of contents (not names), created here."""
    digest = hashlib.sha256()
    for text in sorted(hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in paths):
        digest.update(text.encode())
    folder = BUILDS / digest.hexdigest()[:24]
    if _holds(folder.resolve(), protected()):
        raise RuntimeError(f"the build cache {folder} would lie inside the repository, results or Python environment")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cache_variables(folder: Path) -> dict:
    """Environment variables that point every build cache of torch, Triton, CUTLASS's DSL and CUDA into one
    build-cache folder."""
    return {variable: str(folder / name) for variable, name in CACHE_FOLDERS.items()}


def build_environment(paths: list) -> dict:
    """The cache variables of the files' own build-cache folder: where their runs build and look for builds."""
    return cache_variables(build_cache(paths))


@dataclass(frozen=True)
class Scratch:
    """The worker's own temporary folder. What the worker left there may refuse removal (modes it set): cleanup()
    then leaves it, and never raises between a run's jobs (TemporaryDirectory's own cleanup did, even when told
    to ignore errors, on Python 3.11.7)."""

    name: str

    def cleanup(self):
        shutil.rmtree(self.name, ignore_errors=True)


def real_folders(base: Path, path: Path) -> None:
    """`path`, inside `base`, made of real folders: a link or a file that a worker left on the way is removed first,
    so that the evaluator never follows a link planted in a build cache (it would make folders where it points)."""
    current = base
    for part in path.relative_to(base).parts:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()
        current.mkdir(exist_ok=True)


def worker_environment(paths: list) -> tuple[dict, list[str], Scratch]:
    scratch = Scratch(tempfile.mkdtemp(prefix="nvfp4-arena-worker-"))
    folder = build_cache(paths)
    caches = cache_variables(folder)
    for cache in caches.values():
        real_folders(folder, Path(cache))
    env = {**os.environ, **caches, "TMPDIR": scratch.name, "PYTHONDONTWRITEBYTECODE": "1"}
    return env, [scratch.name, str(folder)], scratch


def folder_bytes(folder: Path) -> int:
    """The bytes allocated to every file under `folder`, links not followed."""
    total = 0
    for top, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                continue
    return total


def trim_build_cache(folder: Path) -> str:
    """Remove a build cache that holds more than BUILD_CACHE_CAP; what was done, as a sentence ('' where nothing)."""
    held = folder_bytes(folder)
    if held <= BUILD_CACHE_CAP:
        return ""
    shutil.rmtree(folder, ignore_errors=True)
    return (f"removed the file's build cache {folder}: it held {held / (1 << 30):.1f} GiB, over the "
            f"{BUILD_CACHE_CAP >> 30} GiB a file may keep; its next run builds again")


def remove_build_locks(folder: Path, made_after: float = 0.0, made_before: float = float("inf")) -> list[str]:
    """Remove the torch-extension build locks under `folder`'s torch_extensions whose modification time lies in
    [made_after, made_before) (seconds since the epoch); the lock files removed. torch creates the lock when a build
    starts and removes it when the build ends, so one that outlives its worker is stale. The walk holds each folder
    open and follows no link, the top one included: a worker may have put a link anywhere in its cache."""
    removed = []
    try:
        for top, _, names, top_fd in os.fwalk(folder / CACHE_FOLDERS["TORCH_EXTENSIONS_DIR"], follow_symlinks=False):
            if BUILD_LOCK in names and made_after <= os.stat(BUILD_LOCK, dir_fd=top_fd,
                                                            follow_symlinks=False).st_mtime < made_before:
                os.unlink(BUILD_LOCK, dir_fd=top_fd)
                removed.append(os.path.join(top, BUILD_LOCK))
    except OSError:  # no such folder (nothing was built), or one that changed under the walk
        pass
    return removed


def startup_hooks() -> list[str]:
    """Code that Python runs at every start, found on this interpreter's site folders."""
    folders = {Path(p) for p in site.getsitepackages()} if hasattr(site, "getsitepackages") else set()
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user:
        folders.add(Path(user))
    found = []
    for folder in sorted(folders):
        if not folder.is_dir():
            continue
        for pth in sorted(folder.glob("*.pth")):
            try:
                lines = pth.read_text(errors="replace").splitlines()
            except OSError:
                continue
            if any(line.startswith(("import ", "import\t")) for line in lines):
                found.append(str(pth))
        for name in ("sitecustomize.py", "usercustomize.py"):
            if (folder / name).exists():
                found.append(str(folder / name))
    for name in ("sitecustomize", "usercustomize"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None) and module.__file__ not in found:
            found.append(module.__file__)
    return found
