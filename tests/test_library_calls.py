"""Library calls are the submission's own work: the pre-check reads code, not prose, and does not
flag torch._scaled_mm; a _scaled_mm FP4 call on a device without FP4 tensor cores fails with one
clear line. The sm_90 and sm_100 cases fake the capability; the end-to-end run expects the line for the
machine it runs on (no GPU, or an sm_90 GPU), and is skipped where FP4 tensor cores would run the file."""
from pathlib import Path

import pytest
import torch

from harness.library_calls import current_capability, fp4_library_message, has_fp4_tensor_cores
from harness.precheck import scan
from harness.submission import docstring, import_submission, popcorn_headers
from reference.gemm import generate_input

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tests" / "submissions" / "template_scaled_mm.py"
SM90 = "this file calls torch._scaled_mm with FP4 operands, which needs FP4 tensor cores (sm_100/sm_120); this GPU is sm_90"
NO_GPU = ("this file calls torch._scaled_mm with FP4 operands, which needs FP4 tensor cores (sm_100/sm_120); "
          "this machine has no GPU")
CUBLAS_NOT_SUPPORTED = ("CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasLtMatmulAlgoGetHeuristic( ltHandle, "
                        "computeDesc.descriptor(), Adesc.descriptor(), ...)`")  # what an H100 says (torch 2.11, CUDA 13.0)

PROSE_ONLY = '''\
#!POPCORN leaderboard nvfp4_gemm
"""Mentions torch._scaled_mm, ref_kernel, threading and torch.cuda.Stream in prose only.

import threading  # not code: inside the module docstring
"""
import torch  # torch._scaled_mm would be the library path; threading.Thread( is not used


class Plan:
    """Unlike ref_kernel, this caches nothing: no functools.lru_cache, no CUDAGraph."""

    def run(self, data):
        \'\'\'Calls neither check_implementation nor sys._getframe().\'\'\'
        return data[-1]  # from reference import ref_kernel would be a cheat


async def later(data):
    "One-line docstring naming torch.compile and os.fork."
    return data


def custom_kernel(data):
    """Returns c; see torch._scaled_mm for the library route."""
    # import threading
    return Plan().run(data)
'''

SAME_NAMES_IN_CODE = '''\
"""A file whose code, not its prose, uses the names."""
import threading
import torch
from reference import get_task


def custom_kernel(data):
    out = torch._scaled_mm(data[0], data[1].T, data[2], data[3], out_dtype=torch.float16)
    worker = threading.Thread(target=print)
    note = "#"; ref = get_task("gemm").ref_kernel
    return out
'''


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_precheck_ignores_docstrings_and_comments(tmp_path):
    assert scan(write(tmp_path, "prose.py", PROSE_ONLY)) == []


def test_precheck_still_reads_code_with_the_right_lines(tmp_path):
    found = {(f.line, f.why) for f in scan(write(tmp_path, "code.py", SAME_NAMES_IN_CODE))}
    assert (2, "threads or processes") in found
    assert (4, "calls into the reference path") in found
    assert (9, "threads or processes") in found
    assert (10, "calls into the reference path") in found  # after a '#' inside a string
    assert not any(line == 8 for line, _ in found)  # torch._scaled_mm is a library call
    texts = {f.line: f.text for f in scan(write(tmp_path, "code.py", SAME_NAMES_IN_CODE))}
    assert texts[9] == "worker = threading.Thread(target=print)"


def test_precheck_keeps_line_numbers_after_blanked_multiline_prose(tmp_path):
    text = PROSE_ONLY + "\n\nimport threading\n"
    found = scan(write(tmp_path, "tail.py", text))
    assert [(f.line, f.why) for f in found] == [(len(PROSE_ONLY.splitlines()) + 3, "threads or processes")]
    # a form feed is no line break for Python; ast's columns count UTF-8 bytes, not characters
    odd = 'def f():\n    """\x0c' + "é" * 12 + '""";import threading\n'
    assert [(f.line, f.why) for f in scan(write(tmp_path, "odd.py", odd))] == [(2, "threads or processes")]


def test_template_file_is_quiet_and_well_formed():
    assert scan(TEMPLATE) == []
    assert popcorn_headers(TEMPLATE.read_text()) == {"leaderboard": "nvfp4_gemm"}
    assert "torch._scaled_mm" in docstring(TEMPLATE)


def fp4_operands():
    a, b, sfa, sfb, _, _, c = generate_input(m=128, n=128, k=256, l=1, seed=7, device="cpu")
    return a[:, :, 0], b[:, :, 0], sfa[:, :, 0].flatten(), sfb[:, :, 0].flatten()


def raised(fn, *args):
    with pytest.raises(BaseException) as info:
        fn(*args)
    return info.value


@pytest.fixture
def cublas_refuses(monkeypatch):
    """torch._scaled_mm failing as cuBLASLt does on an sm_90 card, whatever the operands."""
    def refuse(*args, **kwargs):
        raise RuntimeError(CUBLAS_NOT_SUPPORTED)
    monkeypatch.setattr(torch, "_scaled_mm", refuse)


def call_fp4(a, b, sa, sb):
    return torch._scaled_mm(a, b.T, sa, sb, out_dtype=torch.float16)


def call_fp4_split(data):
    return torch._scaled_mm(
        data[0][:, :, 0],
        data[1][:, :, 0].transpose(0, 1),
        data[2],
        data[3],
        out_dtype=torch.float16,
    )


def call_fp8(a, b, sa, sb):
    x, y = a.view(torch.uint8).view(torch.float8_e4m3fn), b.view(torch.uint8).view(torch.float8_e4m3fn)
    return torch._scaled_mm(x, y.T, sa, sb, out_dtype=torch.float16)


def call_fp8_inline(data):
    return torch._scaled_mm(data[0][:, :, 0].view(torch.float8_e4m3fn), data[1][:, :, 0].view(torch.float8_e4m3fn).T,
                            data[2], data[3])


def args_fail(a, b, sa, sb):
    return torch._scaled_mm(a, b.T, sa, sb.cuda_only_method(), out_dtype=torch.float16)


def test_message_names_the_gpu_on_sm90(cublas_refuses):
    exc = raised(call_fp4, *fp4_operands())
    assert fp4_library_message(exc, (9, 0)) == SM90
    assert fp4_library_message(exc, (8, 9)).endswith("; this GPU is sm_89")
    assert fp4_library_message(exc, None) == NO_GPU


def test_a_call_split_over_lines_reading_the_input_tuple(cublas_refuses):
    a, b, sfa, sfb, *_ = generate_input(m=128, n=128, k=256, l=1, seed=7, device="cpu")
    exc = raised(call_fp4_split, (a, b, sfa, sfb))
    assert fp4_library_message(exc, (9, 0)) == SM90


def test_no_message_on_a_gpu_with_fp4_tensor_cores(cublas_refuses):
    exc = raised(call_fp4, *fp4_operands())
    for capability in [(10, 0), (10, 3), (11, 0), (12, 0), (12, 1)]:
        assert has_fp4_tensor_cores(capability)
        assert fp4_library_message(exc, capability) is None  # the B200 path: the file is expected to run


def test_no_message_for_unrelated_errors_or_other_operands(cublas_refuses):
    assert fp4_library_message(raised(lambda: [][1]), (9, 0)) is None
    assert fp4_library_message(raised(lambda: torch.ones(2) @ torch.ones(3)), None) is None
    assert fp4_library_message(RuntimeError("no traceback"), (9, 0)) is None
    # fp8 operands: an fp8 _scaled_mm runs on sm_89/sm_90, so its failure is not about FP4
    assert fp4_library_message(raised(call_fp8, *fp4_operands()), (9, 0)) is None
    a, b, sfa, sfb, *_ = generate_input(m=128, n=128, k=256, l=1, seed=7, device="cpu")
    assert fp4_library_message(raised(call_fp8_inline, (a, b, sfa, sfb)), (9, 0)) is None
    # a failure while computing the arguments is not the library call's
    assert fp4_library_message(raised(args_fail, *fp4_operands()), (9, 0)) is None


def test_raised_from_wraps_are_followed(cublas_refuses):
    def wrapped():
        try:
            call_fp4(*fp4_operands())
        except RuntimeError as exc:
            raise ValueError("the kernel failed") from exc
    assert fp4_library_message(raised(wrapped), (9, 0)) == SM90


def test_template_file_on_this_cpu_gives_the_no_gpu_line():
    module = import_submission(TEMPLATE)
    data = generate_input(m=128, n=128, k=256, l=1, seed=7, device="cpu")
    exc = raised(module.custom_kernel, data)
    assert fp4_library_message(exc, None) == NO_GPU
    assert fp4_library_message(exc, (10, 0)) is None


def test_current_capability_is_the_devices_pair_or_none(monkeypatch):
    """The current device's (major, minor) as ints; None where CUDA has no device or its driver fails."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert current_capability() == (9, 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (torch.tensor(12), 0))
    assert current_capability() == (12, 0) and type(current_capability()[0]) is int

    def broken(device=None):
        raise RuntimeError("CUDA driver initialization failed")
    monkeypatch.setattr(torch.cuda, "get_device_capability", broken)
    assert current_capability() is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert current_capability() is None


@pytest.mark.slow
@pytest.mark.skipif(has_fp4_tensor_cores(current_capability()), reason="this GPU runs FP4 _scaled_mm")
def test_the_template_file_gets_its_one_line_and_no_cheating_verdict(results_dir):
    import json
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, str(root / "run.py"), str(TEMPLATE), "--mode", "test", "--case", "0",
                           "--json", "--no-record"], capture_output=True, text=True, timeout=300, cwd=root)
    records = json.loads(proc.stdout)[0]["records"]
    assert {r["status"] for r in records} == {"error"}, records
    first = records[0]["message"].split("\n")[0]
    capability = current_capability()
    line = NO_GPU if capability is None else SM90.replace("sm_90", f"sm_{capability[0]}{capability[1]}")
    assert first.startswith(line + " (at template_scaled_mm.py:"), first
