"""Static pre-check: known cheat patterns in a submission's source, shown with line numbers.

It only warns: honest files use some of these for good reasons (a compile cache keyed by shape,
a stream for overlap), and a determined cheat can hide from any pattern. The run-time defenses
in harness.guard decide verdicts; this tells a reviewer where to look.
"""
import ast
import re
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
    (r"_scaled_mm|\bref_kernel\b|from\s+reference\b|import\s+reference\b|check_implementation", "calls into the reference path"),
    (r"torch\.compile\b", "torch.compile (its caches are not your kernel)"),
    (r"\bEvent\.(record|elapsed_time|synchronize)\s*=|elapsed_time\s*=|perf_counter(_ns)?\s*=|synchronize\s*=",
     "timer patching"),
    (r"\bharness\b|clone_data|GpuDevice|HostDevice|StreamHold|contest_clear", "touches the evaluator"),
    (r"\bthreading\b|\bThread\s*\(|concurrent\.futures|\bmultiprocessing\b|\bos\.fork\b", "threads or processes"),
    (r"\bgc\.get_objects|sys\._getframe|inspect\.(stack|currentframe)|\bf_back\b|f_locals", "introspects the caller"),
    (r"PersistingL2|accessPolicyWindow|cudaLimitPersisting|persisting", "persisting-L2 cache control"),
    (r"os\.(write|dup2?)\s*\(|POPCORN_FD|/proc/self/fd", "writes to file descriptors it did not open"),
    (r"__class__\s*=|_make_subclass|__torch_function__|__torch_dispatch__", "tensor subclass or lazy tensor"),
]
COMPILED = [(re.compile(p), why) for p, why in PATTERNS]


@dataclass
class Finding:
    line: int
    text: str
    why: str


def scan(path: Path) -> list[Finding]:
    text = path.read_text()
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return [Finding(exc.lineno or 0, (exc.text or "").strip(), f"does not parse ({exc.msg})")]
    findings = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#!") else ""
        for pattern, why in COMPILED:
            if pattern.search(code):
                findings.append(Finding(number, line.strip(), why))
    return findings
