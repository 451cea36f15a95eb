"""The red-team suite: each cheating or broken submission gets its own clear verdict, the run goes
on, and honest files are not flagged. CPU cases run here; GPU-only cases need CUDA."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
REDTEAM = Path(__file__).resolve().parent / "redteam"

CPU_CASES = {  # every one now meets freshly drawn inputs the worker cannot predict, checked by the evaluator
    "cache_by_id": ("fail", "mismatch"),
    "cache_by_data_ptr": ("fail", "mismatch"),
    "cache_by_shape": ("fail", "mismatch"),
    "cache_by_call_count": ("fail", "mismatch"),
    "evaluator_patch": ("fail", "mismatch"),  # the checker it patches is not in its process
    "mutate_inputs": ("fail", "mismatch"),
    "fake_result": ("tampered", "the channel carried something other than the harness's messages"),
    "nan_output": ("fail", "mismatch"),
    "worker_thread": ("fail", "mismatch"),  # its thread finishes after the evaluator has read the outputs
    "return_input": ("fail", "dtype torch.float4_e2m1fn_x2 != expected torch.float16"),
    "wrong_shape": ("fail", "shape (128, 127, 1) != expected (128, 128, 1)"),
    # one per class of the in-process attacks: each meets the evaluator's process boundary
    "frame_walk": ("fail", "mismatch"),  # reading the evaluator's state: no expected output in its process
    "dispatch_mode": ("tampered", "a torch dispatch mode is active"),  # changing what the checker computes
    "trace_hook": ("tampered", "a trace or profile hook is set"),
    "import_time_patch": ("tampered", "worker functions replaced: harness.device._NOW, "
                                      "harness.worker.sample.place_output, harness.worker.sample.sys"),  # the
    # self-check is made before the import
    "forge_report": ("tampered", "the evaluator's clock saw"),  # forging the report: the witness
    "public_seeds": ("fail", "sample 1: input 0: output"),  # stale answers: timed inputs come from keyed seeds
    "swap_words": ("fail", "modified its input tensors"),  # weak input checks: every bit is compared
    "intermittent_forge": ("tampered", "samples flagged"),  # a forgery in every other sample, never in a row
    "selfcheck_not_a_list": ("tampered", "the worker's report was malformed"),  # every field's type is checked
    "host_ns_string": ("tampered", "the worker's report was malformed"),
    "starved_main": ("tampered", "the evaluator's clock saw"),  # the worker's waits for a CPU are not credited
    "tensor_subclass": ("fail", "expected a torch.Tensor, got Deferred"),  # no subclass hook after the region
    "prefork_between": ("tampered", "the evaluator's clock saw"),  # children's CPU and SCHED_IDLE: no credit
}
ON_A_GPU = {  # where a GPU leaves the attack nothing to act on: either verdict of each pair may come first
    # children forked from a CUDA process cannot write the GPU's slots; its inline fallback does the work after the
    # region, which the witness sees once the warm-up's samples are judged
    "prefork_between": (("fail", "mismatch"), ("tampered", "the evaluator's clock saw")),
    # its helpers queue the calls' GPU work after the worker's last synchronize; the evaluator's copies of the
    # outputs, which end its clock, run before that work (stale outputs) or after it (inside the witness)
    "starved_main": (("fail", "mismatch"), ("tampered", "the evaluator's clock saw")),
}
NEEDS_CC = {"starved_main", "prefork_between"}  # build their spin loops with cc
GPU_CASES = [
    pytest.param("side_stream", "fail", "after custom_kernel returned|escaped the timing events|mismatch"),
    # the limit is per CUDA context: only the worker's self-check reads it (a speed bump)
    pytest.param("persisting_l2", "tampered", "the persisting-L2 cache limit changed"),
]


def run(name: str, *extra):
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                           str(REDTEAM / f"{name}.py"), "--mode", "benchmark", "--shapes", "smoke", "--json", *extra],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    return proc, json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CPU_CASES))
def test_cheat_gets_its_verdict(name, results_dir):
    if name in NEEDS_CC and shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc)")
    verdicts = ON_A_GPU[name] if name in ON_A_GPU and torch.cuda.is_available() else (CPU_CASES[name],)
    proc, out = run(name, "--case", "0")
    assert proc.returncode == 1
    record = out[0]["records"][0]
    assert any(record["status"] == status and words in record["message"] for status, words in verdicts), \
        record["message"]
    assert len(pd.read_json(results_dir / "gemm.jsonl", lines=True)) == 1


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name,status,words", GPU_CASES)
def test_gpu_cheat_gets_its_verdict(name, status, words, results_dir):
    proc, out = run(name, "--case", "0")
    record = out[0]["records"][0]
    if record["status"] == "error" and "refused a persisting-L2 limit" in record["message"]:
        pytest.skip(record["message"])  # nothing to catch: the limit never changed
    assert record["status"] == status and any(w in record["message"] for w in words.split("|")), record["message"]


@pytest.mark.slow
def test_run_continues_after_a_verdict_and_the_file_stays_whole(results_dir):
    proc, out = run("superbatch")  # both smoke shapes
    assert [r["status"] for r in out[0]["records"]] == ["fail", "fail"]
    proc, out = run("wrong_dtype")
    df = pd.read_json(results_dir / "gemm.jsonl", lines=True)
    assert len(df) == 4 and list(df["status"]) == ["fail"] * 4


@pytest.mark.slow
def test_honest_v0_is_not_flagged_and_precheck_is_quiet(results_dir):
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission", "v0", "--mode",
                           "leaderboard", "--case", "1", "--json"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out[0]["precheck"] == []
    assert out[0]["records"][0]["status"] == "pass"


def test_precheck_points_at_lines():
    from harness.precheck import scan
    found = {(f.line, f.why) for f in scan(REDTEAM / "cache_by_id.py")}
    assert any("id()" in why for _, why in found) and any("module-level cache" in why for _, why in found)
    assert any("timer patching" in f.why for f in scan(REDTEAM / "timer_patch.py"))
    assert any("threads" in f.why for f in scan(REDTEAM / "worker_thread.py"))
    assert any("reference path" in f.why for f in scan(REDTEAM / "reference_call.py"))
    assert any("stream" in f.why for f in scan(REDTEAM / "side_stream.py"))
    assert any("persisting" in f.why for f in scan(REDTEAM / "persisting_l2.py"))
    assert scan(ROOT / "submissions" / "gemm" / "v0.py") == []
    assert scan(ROOT / "submissions" / "gemm" / "v10.py") == []  # the current stream and a pointer list are honest


def test_precheck_says_when_a_file_does_not_parse(tmp_path):
    from harness.precheck import scan
    bad = tmp_path / "bad.py"
    bad.write_text("def custom_kernel(data):\n    return data[\n")
    assert [f.why.startswith("does not parse") for f in scan(bad)] == [True]


def test_physical_limit_gate_refuses_impossible_times():
    from harness.protocol import Job, Result
    from harness.evaluator.session import make_record
    from harness.submission import Submission
    sub = Submission(ROOT / "x.py", "gemm", "vX", "0" * 64, "0" * 64)
    job = Job("benchmark", "benchmarks", 0, "", "", {"m": 128, "n": 7168, "k": 16384, "l": 1, "seed": 1}, seeds=[1])
    fast = Result("pass", stats={"mean": 1000.0})
    record = make_record(sub, "benchmark", job, fast, {"name": "NVIDIA H200"}, "r", {})
    assert record.status == "impossible" and "speed of light" in record.message
    slow = Result("pass", stats={"mean": 40_000.0})
    assert make_record(sub, "benchmark", job, slow, {"name": "NVIDIA H200"}, "r", {}).status == "pass"
