"""Fault: a first call that builds an extension and never finishes, as a slow build on a busy machine is killed by
the case's timeout. It takes torch's build lock in its own build cache the way load_inline does, then sleeps; a
call that finds the lock already taken says so (load_inline would wait there for ever)."""
import os
import time

from torch.utils.file_baton import FileBaton


def custom_kernel(data):
    folder = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "dies_building")
    os.makedirs(folder, exist_ok=True)
    if not FileBaton(os.path.join(folder, "lock")).try_acquire():
        raise RuntimeError("dies_building.py: the build lock is taken; load_inline would wait for it for ever")
    time.sleep(3600)
