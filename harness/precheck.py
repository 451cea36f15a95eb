"""Static pre-check: known cheat patterns in a submission's source, shown with line numbers.

It only warns: honest files use some of these for good reasons (a compile cache keyed by shape,
a stream for overlap), and a determined cheat can hide from any pattern. The run-time defenses
in harness.evaluator decide verdicts; this tells a reviewer where to look.

Comments and docstrings (module, class and function) are blanked before the patterns run, so
prose that names an API is not a finding; string literals used as values are still scanned.
Calls into public libraries (torch._scaled_mm, cuBLAS, CUTLASS, Triton) are the submission's
own work and are not patterns here.
"""
import ast
import io
import re
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path

PATTERNS = [
    (r"\bid\s*\(\s*data\b|\w\s*\[[^\]]*(data_ptr\(\)|\bid\()[^\]]*\]|\bkey\w*\s*=.*(data_ptr\(\)|\bid\()",
     "output cache keyed on id() or data_ptr()"),
    (r"^_?\w*(cache|memo|seen|calls)\w*\s*(:\s*\w+(\[.*\])?)?\s*=\s*(\{\}|\[\]|dict\(\)|\{\s*\})",
     "module-level cache or call record: fine for compiled kernels, a cheat for outputs"),
    (r"functools\.(lru_)?cache|@(lru_)?cache\b", "memoised function (output cache?)"),
    (r"torch\.cuda\.(Stream|stream|ExternalStream)\b|cudaStreamCreate|getStreamFromPool",
     "CUDA stream other than the current one"),
    (r"CUDAGraph|cuda\.graph\b|\.replay\s*\(|make_graphed_callables", "CUDA graph capture / replay"),
    (r"\bref_kernel\b|from\s+reference\b|import\s+reference\b|check_implementation", "calls into the reference path"),
    (r"torch\.compile\b", "torch.compile (its caches are not your kernel)"),
    (r"\bEvent\.(record|elapsed_time|synchronize)\s*=|elapsed_time\s*=|perf_counter(_ns)?\s*=|synchronize\s*=",
     "timer patching"),
    (r"\bharness\b|clone_data|GpuDevice|HostDevice|StreamWords|contest_clear", "touches the evaluator"),
    (r"\bthreading\b|\bThread\s*\(|concurrent\.futures|\bmultiprocessing\b|\bos\.fork\b", "threads or processes"),
    (r"\bgc\.get_objects|sys\._getframe|inspect\.(stack|currentframe)|\bf_back\b|f_locals", "introspects the caller"),
    (r"PersistingL2|accessPolicyWindow|cudaLimitPersisting|persisting"
     r"|(cudaDeviceSetLimit|cuCtxSetLimit)\s*\(\s*(0x0*6|6)\s*,",  # limit 6: the persisting-L2 size
     "persisting-L2 cache control"),
    (r"os\.(write|dup2?)\s*\(|POPCORN_FD|/proc/self/fd", "writes to file descriptors it did not open"),
    (r"__class__\s*=|_make_subclass|__torch_function__|__torch_dispatch__|\.as_subclass\s*\("
     r"|class\s+\w+\s*\(\s*(torch\.)?Tensor\s*\)", "tensor subclass or lazy tensor"),
]
COMPILED = [(re.compile(p), why) for p, why in PATTERNS]


@dataclass
class Finding:
    line: int
    text: str
    why: str


def _docstring_spans(tree: ast.AST) -> list[tuple[int, int, int, int]]:
    """(line, col, end_line, end_col) of each module, class and function docstring; cols in UTF-8 bytes."""
    spans = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = getattr(node, "body", None)
        if not body:
            continue
        first = body[0]
        if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            v = first.value
            spans.append((v.lineno, v.col_offset, v.end_lineno, v.end_col_offset))
    return spans


def _comment_spans(text: str) -> list[tuple[int, int, int, int]]:
    """(line, col, line, end_col) of each comment; cols in characters."""
    spans = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                spans.append((tok.start[0], tok.start[1], tok.end[0], tok.end[1]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return spans


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


def _blank(lines: list[str], start: int, col: int, end: int, end_col: int) -> None:
    """Replace lines[start-1][col:] .. lines[end-1][:end_col] (1-based lines) with spaces."""
    for n in range(start, end + 1):
        line = lines[n - 1]
        lo = col if n == start else 0
        hi = end_col if n == end else len(line)
        lines[n - 1] = line[:lo] + " " * (hi - lo) + line[hi:]


def _lines(text: str) -> list[str]:
    """Lines numbered as ast and tokenize number them (str.splitlines also breaks at form feeds)."""
    lines = re.split(r"\r\n|\r|\n", text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def code_only(text: str, tree: ast.AST | None = None) -> list[str]:
    """The source's lines with comments and docstrings blanked; line numbers and columns unchanged."""
    tree = tree if tree is not None else ast.parse(text)
    lines = _lines(text)
    for start, col, end, end_col in _docstring_spans(tree):
        col, end_col = _char_col(lines[start - 1], col), _char_col(lines[end - 1], end_col)
        _blank(lines, start, col, end, end_col)
    for start, col, end, end_col in _comment_spans(text):
        _blank(lines, start, col, end, end_col)
    return lines


def syntax_error(path: Path) -> Finding | None:
    """Why Python would refuse to compile the file, as a finding (the parser's errors and the compiler's, such as
    'return' outside a function; the file's own coding line honoured); None where it compiles. Nothing of the file
    runs, and its warnings (an invalid escape sequence, say) are left to the run."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(Path(path).read_bytes(), str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return Finding(exc.lineno or 0, (exc.text or "").strip(), f"does not parse ({exc.msg})")
    except ValueError as exc:  # null bytes in the source
        return Finding(0, "", f"does not parse ({exc})")
    return None


def scan(path: Path) -> list[Finding]:
    broken = syntax_error(path)
    if broken:
        return [broken]
    with tokenize.open(path) as f:  # in the encoding its coding line names, as Python reads it
        text = f.read()
    tree = ast.parse(text)
    original = _lines(text)
    findings = []
    for number, code in enumerate(code_only(text, tree), 1):
        for pattern, why in COMPILED:
            if pattern.search(code):
                findings.append(Finding(number, original[number - 1].strip(), why))
    return findings
