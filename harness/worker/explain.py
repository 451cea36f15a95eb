"""A submission's exception as one paragraph for its author: what went wrong, at the last line of the user's own
file it passed through, with a plain reason where the file needs hardware this machine lacks. Runs in the worker
(it reads the exception and its frames); the evaluator only passes the text on."""
import traceback
from pathlib import Path

from harness.library_calls import current_capability, fp4_library_message
from harness.protocol import NEEDS_GPU, TRACEBACK_MARK

CUDA_MISSING = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "Found no NVIDIA driver",
                "no CUDA-capable device", "CUDA_HOME environment variable is not set", "0 active drivers")
GPU_ONLY_MODULES = ("triton", "cutlass", "cuda", "cupy", "tvm_ffi")  # missing on a CPU machine: the file needs a GPU


def needs_gpu(exc: BaseException) -> bool:
    """The error says the file needs a CUDA GPU this machine does not have."""
    if any(words in str(exc) for words in CUDA_MISSING):
        return True
    import torch
    module = (getattr(exc, "name", None) or "") if isinstance(exc, ModuleNotFoundError) else ""
    return module.split(".")[0] in GPU_ONLY_MODULES and not torch.cuda.is_available()


def explain(exc: BaseException, paths: list) -> str:
    """One paragraph: the exception, at the last line of the user's own file it passed through (the
    whole traceback follows, for run.py --traceback, after a line of its own)."""
    text = f"{type(exc).__name__}: {exc}".strip()
    library = fp4_library_message(exc, current_capability())
    if library:
        text = library
    elif needs_gpu(exc):
        text = f"{NEEDS_GPU} (its kernels are built for one) and this machine has none: {text}"
    own = {str(Path(p).resolve()) for p in paths}
    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename and str(Path(exc.filename).resolve()) in own:
        where = f" (at {Path(exc.filename).name}:{exc.lineno})"
    else:
        frame = next((f for f in reversed(frames) if str(Path(f.filename).resolve()) in own), None)
        where = f" (at {Path(frame.filename).name}:{frame.lineno}: {frame.line})" if frame else ""
    full = "".join(traceback.format_exception(exc))
    text = text.replace(TRACEBACK_MARK, TRACEBACK_MARK.replace("-", "="))  # the first mark is this one
    return f"{text}{where}\n{TRACEBACK_MARK}\n{full}"
