"""Attack (a module planted where the harness imports from, gpu-mode/pygpubench exploits/submission_replace_torch.py):
write a torch.py into the folders Python searches first, so that the next process started there (the evaluator of
the next run, or this checkout's tests) imports it instead of torch. The worker runs in the repository's root,
whose folder is first on its sys.path, and the evaluator shares that path. This file tries to create torch.py and
sitecustomize.py (run by every Python process at start) in its working folder and in every folder on sys.path.
Each creation is exclusive, and one that succeeds is removed at once and makes the import fail, naming the folder
(a hole); each refusal is counted on stderr, and the file computes honestly."""
import os
import sys
from pathlib import Path

from _honest import honest, refuse

NAMES = ("torch.py", "sitecustomize.py")
_folders = list(dict.fromkeys(Path(p or ".").resolve() for p in [os.getcwd(), *sys.path] if Path(p or ".").is_dir()))
_planted, _refused = [], {}
for _folder in _folders:
    for _name in NAMES:
        try:
            fd = os.open(_folder / _name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        except OSError as exc:
            _refused[exc.strerror] = _refused.get(exc.strerror, 0) + 1
            continue
        os.close(fd)
        os.unlink(_folder / _name)
        _planted.append(str(_folder / _name))
print(f"[shadow_module] tried {len(NAMES)} names in {len(_folders)} folders (the working folder "
      f"{Path.cwd()} first): refused {_refused}", file=sys.stderr, flush=True)
refuse(_planted, "plant a module")


def custom_kernel(data):
    return honest(data)
