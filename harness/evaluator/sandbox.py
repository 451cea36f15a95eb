"""What the evaluator grants a worker, and what it reports about the environment a run trusts.

- `worker_environment()`: the worker's environment and the folders it may write (its own temporary folder,
  which becomes TMPDIR, and the build caches of torch extensions, Triton and CUDA). A cache folder that holds
  the repository, the results folder or the Python environment is left out, so nothing a worker writes can
  reach them. The worker applies the rule itself before importing torch (harness.worker.confine).
- `startup_hooks()`: `.pth` files with code and sitecustomize/usercustomize modules on this interpreter's
  path: each runs in every Python process, the evaluator's included, so a run names them.
"""
import os
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
CACHE_VARIABLES = ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "CUTE_DSL_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME")
HOME_CACHES = (".cache", ".triton", ".nv")


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


def worker_environment() -> tuple[dict, list[str], tempfile.TemporaryDirectory]:
    scratch = tempfile.TemporaryDirectory(prefix="nvfp4-arena-worker-")
    home = Path.home()
    candidates = [Path(os.environ[v]) for v in CACHE_VARIABLES if os.environ.get(v)]
    candidates += [home / name for name in HOME_CACHES]
    guarded = protected()
    writable = [scratch.name]
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        folder = folder.resolve()
        if not _holds(folder, guarded) and str(folder) not in writable:
            writable.append(str(folder))
    env = {**os.environ, "TMPDIR": scratch.name, "PYTHONDONTWRITEBYTECODE": "1"}
    return env, writable, scratch


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
