"""The red-team suite: each cheating or broken submission gets its own clear verdict, the run goes
on, and honest files are not flagged. CPU cases run here; GPU-only cases need CUDA. An attack whose verdict alone
does not show that it acted says what it did on its stderr (tests/redteam/_honest.py acted), and its test reads it:
a verdict that an attack doing nothing would also get proves nothing."""
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
sys.path.append(str(REDTEAM))
from _honest import acted_line  # noqa: E402 - the line by which an attack says what it did

MISMATCH = " elements mismatch"
CPU_CASES = {  # every one now meets freshly drawn inputs the worker cannot predict, checked by the evaluator; a tuple
    # of words: each of them is in the message
    # the correctness pass's 50 inputs each have a slot (a tuple, an address) of their own, all of one shape: the
    # remembered output is returned for the next input in a slot (the general values') or of that shape (input 1)
    "cache_by_id": ("fail", ("general-value input: output: ", MISMATCH)),
    "cache_by_data_ptr": ("fail", ("general-value input: output: ", MISMATCH)),
    "cache_by_shape": ("fail", ("input 1: output: ", MISMATCH)),
    "cache_by_call_count": ("fail", ("general-value input: output: ", MISMATCH)),  # call 51 returns call 1's
    "evaluator_patch": ("fail", ("input 0: output: ", "got 0.0, expected")),  # the checker it patched in its own
    # process is not the one that judges
    "mutate_inputs": ("fail", ("input 0: output: ", "got 0.0, expected")),  # the reference is of the evaluator's
    # copy of the inputs, made before the call
    "fake_result": ("tampered", "the channel carried something other than the harness's messages"),
    "nan_output": ("fail", ("input 0: output: 1 of ", "at (0, 0, 0): got nan")),
    "worker_thread": ("fail", ("input 49: output: ", MISMATCH)),  # the last of the 50: read before its thread wrote
    "return_input": ("fail", "dtype torch.float4_e2m1fn_x2 != expected torch.float16"),
    "wrong_shape": ("fail", "shape (128, 127, 1) != expected (128, 128, 1)"),
    # one per class of the in-process attacks: each meets the evaluator's process boundary
    "frame_walk": ("fail", ("input 0: output: ", MISMATCH)),  # reading the evaluator's state: no expected output in
    # its process
    "dispatch_mode": ("tampered", "a torch dispatch mode is active"),  # changing what the checker computes
    "trace_hook": ("tampered", "a trace or profile hook is set"),
    "import_time_patch": ("tampered", "worker functions replaced: harness.device._NOW, "
                                      "harness.worker.sample.place_output, harness.worker.sample.sys"),  # the
    # self-check is made before the import
    "forge_report": ("tampered", "the evaluator's clock saw"),  # forging the report: the witness
    "public_seeds": ("fail", "sample 1: input 0: output"),  # stale answers: timed inputs come from keyed seeds
    "swap_words": ("fail", "modified its input tensors"),  # weak input checks: every bit is compared
    "intermittent_forge": ("tampered", "the evaluator's clock saw"),  # a forgery in every other sample, never in a
    # row: which of the witness's rules ends the job first depends on the honest samples' noise
    "selfcheck_not_a_list": ("tampered", "the worker's report was malformed"),  # every field's type is checked
    "host_ns_string": ("tampered", "the worker's report was malformed"),
    "starved_main": ("tampered", "the evaluator's clock saw"),  # the worker's waits for a CPU are not credited
    "tensor_subclass": ("fail", "expected a torch.Tensor, got Deferred"),  # no subclass hook after the region
    "prefork_between": ("tampered", "the evaluator's clock saw"),  # children's CPU and SCHED_IDLE: no credit
    "lazy_subclass": ("fail", "expected a torch.Tensor, got Lazy"),
}
ACTED = {  # how the line starts by which an attack whose verdict could come without it says what it did (_honest.acted)
    "cache_by_id": "answered a call from the cache: the output remembered for this input tuple",
    "cache_by_data_ptr": "copied the output remembered for this b's address",
    "cache_by_shape": "copied the output remembered for this shape",
    "cache_by_call_count": "returned the output of the call 50 calls earlier",
    "evaluator_patch": "reference.checker.compare and every task's check now pass a wrong output in this process",
    "mutate_inputs": "zeroed the scale factors in its input tensors",
    "worker_thread": "a thread wrote c after its custom_kernel had returned",
    "frame_walk": "copied into c a tensor shaped like it, found in",
    "forge_report": "reported a tenth of a sample's region",
    "intermittent_forge": "reported a twentieth of a sample's region",
    "public_seeds": "answered",  # how many calls its table answered before the first it could not
    "starved_main": "computed a sample's calls after the timed region",
    "prefork_between": "computed a sample's calls after the timed region",
    "superbatch": "returned an output computed at its sample's first call",
    "timer_patch": "time.perf_counter_ns reads a thousandth of the time in this process",
    "reference_call": "computed its output with the reference's ref_kernel",
}
ON_A_GPU = {  # where a GPU leaves the attack nothing to act on: either verdict of each pair may come first
    # children forked from a CUDA process cannot write the GPU's slots; its inline fallback does the work after the
    # region, which the witness sees once the warm-up's samples are judged
    "prefork_between": (("fail", "mismatch"), ("tampered", "the evaluator's clock saw")),
    # its helpers queue the calls' GPU work after the worker's last synchronize; the evaluator's copies of the
    # outputs, which end its clock, run before that work (stale outputs) or after it (inside the witness)
    "starved_main": (("fail", "mismatch"), ("tampered", "the evaluator's clock saw")),
}
ON_A_CPU = {  # where the moment of the attack's own step against the evaluator's decides which check sees it first
    # its children are forked in the gap after a sample's check for stray processes, by its estimate of that gap: on
    # a loaded machine a fork can land before the check, which then finds them
    "prefork_between": (CPU_CASES["prefork_between"], ("fail", "process(es) running after its calls")),
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
    if name in ACTED:
        assert acted_line(name, ACTED[name]) in proc.stderr, f"{name} did not act:\n{proc.stderr[-3000:]}"
    return proc, json.loads(proc.stdout)


def said(message: str, words) -> bool:
    return all(w in message for w in ((words,) if isinstance(words, str) else words))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CPU_CASES))
def test_cheat_gets_its_verdict(name, results_dir):
    if name in NEEDS_CC and shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc)")
    verdicts = ON_A_GPU[name] if name in ON_A_GPU and torch.cuda.is_available() else \
        ON_A_CPU.get(name, (CPU_CASES[name],))
    proc, out = run(name, "--case", "0")
    assert proc.returncode == 1
    record = out[0]["records"][0]
    assert any(record["status"] == status and said(record["message"], words) for status, words in verdicts), \
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
def test_honest_v0_is_not_flagged_and_precheck_is_quiet(results_dir, busy_machine):
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


@pytest.mark.slow
@pytest.mark.parametrize("name", ["timer_patch", "reference_call"])
def test_an_attack_that_gains_nothing_passes_with_true_times(name, results_dir):
    """timer_patch makes the clocks in its process read a thousandth of the time, but the worker took its own clock
    before the file was imported: the times it reports are real, where a thousandth would be the witness's verdict.
    reference_call computes with the reference, which the worker may import: that is the file's own work, checked
    and timed as any other."""
    proc, out = run(name, "--case", "0")
    assert proc.returncode == 0 and [r["status"] for r in out[0]["records"]] == ["pass"], proc.stdout
