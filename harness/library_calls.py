"""One clear line for a submission whose FP4 library GEMM cannot run on this device.

The contest's starting files compute the answer with `torch._scaled_mm` on NVFP4 operands
(float4_e2m1fn_x2 data, float8_e4m3fn scales in the blocked layout). A call into a public library
is the submission's own work; it only needs hardware that can run it. torch hands this case
(BlockWise1x16 scaling) to cuBLASLt with CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 scales
(CUDA 12.8 or later). Its own device gate (`_scaled_mm_allowed_device`) lets any capability
>= 8.9 through, but cuBLASLt's block-scaled FP4 kernels exist only for Blackwell-class FP4 tensor
cores: sm_100 and sm_103 (B200, B300), sm_110 (Thor; sm_101 before CUDA 13), sm_120 and sm_121
(RTX 50xx, RTX PRO 6000 Blackwell, DGX Spark), and torch's own tests gate the FP4 GEMM on
capability >= (10, 0). So a major of 10 or more counts as having FP4 tensor cores here; on
Hopper (sm_90), Ada (sm_89) and older, or on a CPU, the call fails with a library error that
does not say why (an H100 with torch 2.11 and CUDA 13.0 raises CUBLAS_STATUS_NOT_SUPPORTED from
cublasLtMatmulAlgoGetHeuristic; a CPU, "Invalid scaling configuration"). `fp4_library_message`
turns such a failure into one line; on a GPU with FP4 tensor cores it returns None, the file
being expected to run there as in the contest.
"""
import ast
import linecache
import re
import traceback
import types

SCALED_MM_CALL = re.compile(r"^\s*[\w.]*\b_scaled_mm\s*\(")  # the failing call is a _scaled_mm call
FP4_DTYPE = re.compile(r"float4_e2m1fn_x2", re.IGNORECASE)
FIRST_FP4_MAJOR = 10  # sm_100/103 (10.x), sm_110 (11.0), sm_120/121 (12.x)


def current_capability() -> tuple[int, int] | None:
    """The current CUDA device's (major, minor), or None where torch sees no CUDA device."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        major, minor = torch.cuda.get_device_capability()
        return int(major), int(minor)
    except Exception:  # no torch, a broken driver: either way no usable GPU to name
        return None


def has_fp4_tensor_cores(capability: tuple[int, int] | None) -> bool:
    return capability is not None and capability[0] >= FIRST_FP4_MAJOR


def _chain(exc: BaseException):
    """The exception and those it was raised from or while handling, each once."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _failing_expression(summary: traceback.FrameSummary) -> str:
    """The source of the expression the frame was running when the exception passed through it
    (the whole call where it spans several lines); the whole statement's lines where Python
    keeps no columns."""
    start = summary.lineno
    end = getattr(summary, "end_lineno", None) or start
    lines = [linecache.getline(summary.filename, n) for n in range(start, end + 1)]
    if not any(lines):
        return summary.line or ""
    col, end_col = getattr(summary, "colno", None), getattr(summary, "end_colno", None)
    if col is not None and end_col is not None:
        lines[-1] = lines[-1][:_char_col(lines[-1], end_col)]
        lines[0] = lines[0][_char_col(lines[0], col):]
    return "".join(lines)


_UNKNOWN = object()
_SAME_DTYPE_ATTRS = {"T", "mT", "H", "mH", "data"}
_SAME_DTYPE_METHODS = {"t", "transpose", "permute", "contiguous", "reshape", "view", "squeeze", "unsqueeze",
                       "flatten", "select", "narrow", "expand", "movedim", "swapaxes", "clone", "detach",
                       "cuda", "cpu", "to"}


class _Named:
    """An operand whose dtype the expression itself sets, e.g. x.view(torch.float8_e4m3fn)."""

    def __init__(self, text: str):
        self.dtype = text


def _static(node: ast.AST, frame):
    """A name's value, or a module's attribute (torch.float16), read from the frame; else _UNKNOWN."""
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if node.id in scope:
                return scope[node.id]
        return _UNKNOWN
    if isinstance(node, ast.Attribute):
        base = _static(node.value, frame)
        if isinstance(base, types.ModuleType):
            return getattr(base, node.attr, _UNKNOWN)
    return _UNKNOWN


def _operand(node: ast.AST, frame, depth: int = 0):
    """The value an operand expression stands for, as far as it can be read from the frame
    without running anything: names, constant indexing of the input tuple, tensor slicing and
    the methods that keep a tensor's dtype. _UNKNOWN otherwise."""
    if depth > 16:
        return _UNKNOWN
    if isinstance(node, ast.Name):
        return _static(node, frame)
    if isinstance(node, ast.Attribute) and node.attr in _SAME_DTYPE_ATTRS:
        base = _operand(node.value, frame, depth + 1)
        return base if hasattr(base, "dtype") else _UNKNOWN
    if isinstance(node, ast.Subscript):
        base = _operand(node.value, frame, depth + 1)
        if hasattr(base, "dtype"):
            return base  # a slice keeps the dtype
        index = node.slice
        if isinstance(base, (tuple, list)) and isinstance(index, ast.Constant) and isinstance(index.value, int):
            return base[index.value] if -len(base) <= index.value < len(base) else _UNKNOWN
        return _UNKNOWN
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr not in _SAME_DTYPE_METHODS:
            return _UNKNOWN
        for arg in node.args:  # x.view(torch.float8_e4m3fn), x.to(dt): the dtype is the argument's
            value = _static(arg, frame)
            if type(value).__name__ == "dtype":
                return _Named(str(value))
        for k in node.keywords:
            if k.arg == "dtype":
                value = _static(k.value, frame)
                return _Named(str(value) if type(value).__name__ == "dtype" else ast.unparse(k.value))
        return _operand(node.func.value, frame, depth + 1)
    return _UNKNOWN


def _is_fp4(value) -> bool:
    return "float4_e2m1fn_x2" in str(getattr(value, "dtype", ""))


def _scaled_mm_call(expression: str) -> ast.Call | None:
    """The parsed _scaled_mm call that an expression's source starts with."""
    try:
        node = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return None
    while isinstance(node, ast.Call):  # torch._scaled_mm(...) or torch._scaled_mm(...).something(...)
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "_scaled_mm":
            return node
        node = func.value if isinstance(func, ast.Attribute) else None
    return None


def _scaled_mm_frames(exc: BaseException):
    """(frame, expression) for each traceback frame that was running a _scaled_mm call."""
    tb = exc.__traceback__
    if tb is None:
        return
    for (frame, _), summary in zip(traceback.walk_tb(tb), traceback.extract_tb(tb)):
        expression = _failing_expression(summary)
        if SCALED_MM_CALL.search(expression):
            yield frame, expression


def _operands_fp4(frame, expression: str) -> bool:
    """Whether the call's two matrices (its first two arguments) are, by what the frame shows, FP4."""
    call = _scaled_mm_call(expression)
    if call is None:
        return False
    keywords = {k.arg: k.value for k in call.keywords}
    nodes = [*call.args[:2], *(keywords[k] for k in ("self", "mat2") if k in keywords)]
    return any(_is_fp4(_operand(node, frame)) for node in nodes)


def from_fp4_scaled_mm(exc: BaseException) -> bool:
    """Whether exc came out of a torch._scaled_mm call on FP4 operands.

    The call: a traceback frame whose failing expression is a `..._scaled_mm(...)` call (an error
    while computing its arguments does not count), or torch's message naming _scaled_mm. FP4:
    torch's message naming float4_e2m1fn_x2, or a matrix operand that reads as an FP4 tensor in
    the calling frame (a name, a slice of one, a constant index into the input tuple, .T and the
    like). Operands it cannot read without running code count as not FP4: the error then stays
    the library's own.
    """
    for e in _chain(exc):
        text = f"{type(e).__name__}: {e}"
        frames = list(_scaled_mm_frames(e))
        if not frames and "_scaled_mm" not in text:
            continue
        if FP4_DTYPE.search(text):
            return True
        if any(_operands_fp4(frame, expression) for frame, expression in frames):
            return True
    return False


def fp4_library_message(exc: BaseException, capability: tuple[int, int] | None) -> str | None:
    """One line for a torch._scaled_mm FP4 call that this device cannot run, else None.

    capability is the CUDA device's (major, minor), None on a machine without a GPU (see
    `current_capability`). None comes back when the exception did not come from such a call,
    or when the device has FP4 tensor cores (major >= 10): there the error is the file's own.
    Pass the exception as caught, with its traceback: the calling frame is read, never run.
    """
    if has_fp4_tensor_cores(capability):
        return None
    try:
        if not from_fp4_scaled_mm(exc):
            return None
    except Exception:  # reading frames must never hide the submission's own error
        return None
    where = "this machine has no GPU" if capability is None else f"this GPU is sm_{capability[0]}{capability[1]}"
    return ("this file calls torch._scaled_mm with FP4 operands, which needs FP4 tensor cores "
            f"(sm_100/sm_120); {where}")
