"""The attacks on the evaluator's clock, end to end: a shaded report, "done" before the calls, no wait for "go", a
side-stream tail, work inside the evaluator's writes, a cheaper end of the sample than the calibrated one. Each file says on stderr that it acted; each test checks that it did, then its verdict. On a CPU
the witness judges a shaded report; the others act only on a GPU, where the evaluator's clock is the number."""
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
REDTEAM = ROOT / "tests" / "redteam"
ON_A_GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="the evaluator's clock needs a CUDA GPU")


def attack(name: str, **env) -> tuple[dict, str]:
    """One benchmark run of a red-team file on gemm's first smoke shape: its record and its stderr."""
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), "--task", "gemm", "--submission",
                           str(REDTEAM / f"{name}.py"), "--mode", "benchmark", "--shapes", "smoke", "--case", "0",
                           "--json"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, **env})
    return json.loads(proc.stdout)[0]["records"][0], proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the evaluator's clock judges (the GPU test below)")
def test_a_shaded_report_meets_the_witness_on_a_cpu(results_dir):
    record, stderr = attack("shade_report", NVFP4_ARENA_SHADE="0.3")
    assert "[shade_report] real" in stderr  # it reported less than it ran
    assert record["status"] == "tampered" and "the evaluator's clock saw" in record["message"], record["message"]


@pytest.mark.slow
@ON_A_GPU
@pytest.mark.parametrize("shade", ["0.7", "0.5", "0.3"])
def test_a_shaded_report_is_recorded_at_the_real_time_on_a_gpu(results_dir, shade):
    record, stderr = attack("shade_report", NVFP4_ARENA_SHADE=shade)
    assert "[shade_report] real" in stderr
    assert record["status"] == "pass", record["message"]
    real, reported = record["stats"]["mean"], record["worker_stats"]["mean"]
    assert reported / real == pytest.approx(float(shade), rel=0.05)  # the number is the clock's, not the report's


@pytest.mark.slow
@ON_A_GPU
@pytest.mark.parametrize("name,marker", [("early_done", "[early_done] done queued before the calls"),
                                         ("side_stream_tail", "[side_stream_tail] sample")])
def test_work_after_done_is_counted_or_caught(results_dir, name, marker):
    honest, _ = attack("shade_report", NVFP4_ARENA_SHADE="1.0")
    record, stderr = attack(name)
    assert marker in stderr
    if record["status"] == "tampered":
        assert "said \"done\" before its outputs were written" in record["message"]
    else:
        assert record["status"] == "pass", record["message"]
        assert record["stats"]["mean"] > 0.9 * honest["stats"]["mean"]  # the calls after "done" are in the number


@pytest.mark.slow
@ON_A_GPU
def test_calls_that_do_not_wait_for_go_meet_no_inputs(results_dir):
    record, stderr = attack("skip_go")
    assert "[skip_go] sample" in stderr
    assert record["status"] == "fail" and "mismatch" in record["message"], record["message"]


@pytest.mark.slow
def test_a_super_batch_is_priced_at_its_real_cost(results_dir):
    """Every call of a sample computed in its first, through the slots the worker maps: all of the work stays inside
    the sample, under the witness on a CPU as under the evaluator's clock on a GPU, so the file passes at its cost."""
    honest, _ = attack("shade_report", NVFP4_ARENA_SHADE="1.0")
    record, stderr = attack("superbatch_slots")
    assert "[superbatch_slots] the first call computed" in stderr
    assert record["status"] == "pass", record["message"]
    assert record["stats"]["median"] > 0.6 * honest["stats"]["median"]  # the same work, at about the same time


@pytest.mark.slow
@ON_A_GPU
def test_work_done_inside_the_evaluators_writes_is_priced(results_dir):
    """Products queued to run in turns the worker's context might take inside the evaluator's writes, before "go":
    behind the clock's gate the writes run back to back, so the products run inside the window, which holds their
    whole GPU time, and the file is recorded at its honest twin's time (the same products after "go")."""
    twin, _ = attack("write_gaps", NVFP4_ARENA_WRITE_GAPS="honest")
    record, stderr = attack("write_gaps")
    ran = [float(us) for us in re.findall(r"\[write_gaps\] sample \d+: products ran (\d+) µs", stderr)]
    assert ran, stderr[-2000:]
    assert record["status"] == "pass", record["message"]
    window_us = record["stats"]["median"] * record["n_inputs"] / 1e3  # a sample's window less the fixed cost
    assert window_us > 0.9 * statistics.median(ran), (window_us, statistics.median(ran), record["clock"])
    assert record["stats"]["mean"] > 0.9 * twin["stats"]["mean"], (record["clock"], twin["clock"])


@pytest.mark.slow
@ON_A_GPU
def test_a_quieter_end_of_the_sample_gains_no_more_than_the_clocks_uncertainty(results_dir):
    """A spin that touches no memory after the last call: the clock, less the fixed cost calibrated with the
    harness's own end of a sample, still holds the worker's own events."""
    record, stderr = attack("quiet_end")
    assert "[quiet_end] a spin that touches no memory" in stderr
    assert record["status"] == "pass", record["message"]
    floor = record["worker_stats"]["mean"] - 3 * record["clock"]["uncertainty_ns"]  # both per call
    assert record["stats"]["mean"] > floor, (record["stats"], record["worker_stats"], record["clock"])
