"""The worker's timed sample against a device that records its operations (what lies inside the timed region,
and what its stream waits for), the judges' and the witness's arithmetic, and that an honest host-bound kernel is
no cheat."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from harness.evaluator.witness import DISCARDED, IN_A_ROW, KEPT, MIN_JUDGED, WARM_UP, Calibration, Witness
from harness.protocol import SCHEMA
from harness.rules import task_rules
from harness.submission import code_sha256
from harness.worker.sample import timed_sample

ROOT = Path(__file__).resolve().parent.parent
SUBS = Path(__file__).resolve().parent / "submissions"


class RecordingDevice:
    """Every stream operation the sample issues, in order; a region of `gpu_ns` per call."""

    def __init__(self, gpu=True, gpu_ns=1000.0):
        self.ops, self.clock, self.calls, self.gpu, self.gpu_ns = [], 0, 0, gpu, gpu_ns

    def log(self, op):
        self.ops.append(op)

    def synchronize(self):
        self.log("synchronize")

    def contest_clear(self):
        self.log("contest_clear")

    def wait_go(self, sequence):
        self.log(f"wait_go {sequence}")

    def signal_done(self, sequence):
        self.log(f"done {sequence}")

    def touch(self):
        self.log("touch")

    def start(self):
        self.log("start")
        self.calls = 0

    def stop(self):
        self.log("stop")

    def wait_end(self):
        self.log("wait_end")
        return 0

    def pending_ns(self, end):
        return 0.0

    def elapsed_ns(self):
        return self.gpu_ns * self.calls


def one_sample_ops(method, gpu=True, calls=3, returned=None):
    device = RecordingDevice(gpu)
    c = torch.zeros(2, dtype=torch.float16)

    def kernel(data):
        device.log("call")
        device.calls += 1
        return data[-1] if returned is None else returned
    report = timed_sample(kernel, [(c,)] * calls, device, method, lambda kind, **_: device.log(kind),
                          lambda: device.log("go"), sequence=7)
    device.ops.append(report)
    return device.ops


def region(ops):
    return ops[ops.index("start"):ops.index("stop") + 1]


@pytest.mark.parametrize("method", ["arena", "contest"])
def test_nothing_but_the_calls_inside_the_timed_region(method):
    assert region(one_sample_ops(method)) == ["start", "call", "call", "call", "stop"]
    assert region(one_sample_ops(method, gpu=False)) == ["start", "call", "call", "call", "stop"]


def test_the_calls_wait_for_the_evaluators_go_and_done_follows_them_on_the_stream():
    ops = one_sample_ops("arena")
    assert ops[:2] == ["synchronize", "wait_go 7"]  # the sample's number, as the evaluator armed it
    assert ops.index("stop") < ops.index("done 7") < ops.index("queued") < ops.index("wait_end")
    contest = one_sample_ops("contest")  # the contest's loop: its clear, no evaluator's clock
    assert not [op for op in contest if str(op).startswith(("wait_go", "done"))]
    assert contest.index("contest_clear") < contest.index("start")
    cpu = one_sample_ops("arena", gpu=False)  # on a CPU the calls run only once the evaluator has written
    assert cpu.index("queued") < cpu.index("go") < cpu.index("call")
    assert not [op for op in cpu if str(op).startswith(("wait_go", "done"))]


def test_a_returned_output_is_in_its_slot_before_done():
    """The evaluator's spot check reads the outputs right after "done": a kernel that returns another tensor has it
    copied into c on the stream before "done"."""
    device = RecordingDevice()
    c = torch.zeros(2, dtype=torch.float16)
    seen_at_done = []
    device.signal_done = lambda sequence: seen_at_done.append(c.tolist())
    report = timed_sample(lambda data: torch.full((2,), 3.0, dtype=torch.float16), [(c,)], device, "arena",
                          lambda kind, **_: None, lambda: None, sequence=1)
    assert seen_at_done == [[3.0, 3.0]] and report["problems"] == [""]
    wrong = one_sample_ops("arena", calls=1, returned=torch.zeros(3, dtype=torch.float16))
    assert "shape (3,)" in wrong[-1]["problems"][0]


def test_a_null_sample_touches_memory_inside_its_region():
    """The calibration's null sample stands a read of memory in for the calls (the clock's hand-over after a
    footprint)."""
    assert region(one_sample_ops("arena", calls=0)) == ["start", "touch", "stop"]


def calibrated() -> Witness:
    """A witness past its first sample (which is neither judged nor kept)."""
    w = Witness(Calibration([1000.0, 1100.0, 1050.0, 1200.0, 30_000.0, 1150.0]))
    assert w.judge(*honest_sample(w, 10 * w.margin_ns())) == "" and not w.excess_ns and w.last == WARM_UP
    return w


def honest_sample(w: Witness, extra: float = 0.0) -> tuple:
    """(witness, waited, region, own, copies) of a sample whose only unexplained time is `extra`."""
    region, own, copies = 500_000.0, 200_000.0, 10_000.0
    return region + own + copies + w.remainder_ns + extra, 0.0, region, own, copies


def margin(w: Witness) -> float:
    return w.margin_ns(*honest_sample(w)[3:])


def test_witness_fit_and_margin():
    """Null samples 1000, 1050, 1100, 1150, 1200 and 30000 ns: median 1125 ns, largest deviation 28875 ns. The margin's
    floor is four of those, 115500 ns (over the GPU's 100 µs), plus a quarter of a sample's 210 µs of the evaluator's
    own work and copies: 168000 ns."""
    w = calibrated()
    assert w.remainder_ns == 1125.0 and w.spread_ns == 28_875.0
    assert w.margin_ns() == 115_500.0
    assert margin(w) == 168_000.0


def test_witness_flags_a_forged_time_samples_in_a_row_and_passes_an_honest_one():
    w = calibrated()
    assert all(w.judge(*honest_sample(w, 50_000.0)) == "" for _ in range(10)) and w.judge_all() == ""
    summary = w.summary()
    assert summary["witness_excess_median_ns"] <= summary["witness_excess_max_ns"] < summary["witness_margin_ns"]
    forged = calibrated()
    verdicts = [forged.judge(*honest_sample(forged, 2 * margin(forged))) for _ in range(IN_A_ROW)]
    assert verdicts[:-1] == [""] * (IN_A_ROW - 1) and f"{IN_A_ROW} samples in a row" in verdicts[-1]
    assert "inside a sample" in calibrated().judge(10_000.0, 0.0, 50_000.0, 0.0, 0.0)


def test_witness_discards_flagged_samples_and_outlasts_a_burst_of_stalls():
    """Each flagged sample is thrown away with its time. A burst of three stalls far over the margin in a short job
    (an H100 saw 2-5 ms, three in a row) is no verdict: the job takes more samples, until the burst is no more than
    a quarter of them (or MIN_JUDGED are judged)."""
    burst = calibrated()
    assert burst.judge(*honest_sample(burst)) == "" and burst.last == KEPT
    for _ in range(3):
        assert burst.judge(*honest_sample(burst, 5 * margin(burst))) == "" and burst.last == DISCARDED
    assert burst.judge(*honest_sample(burst)) == "" and burst.last == KEPT
    assert "median over the samples" in burst.judge_all() and not burst.settled()  # a verdict if the job ended here
    while not burst.settled():
        assert burst.judge(*honest_sample(burst)) == ""
    assert len(burst.excess_ns) == 12 and burst.judge_all() == ""  # three of twelve flagged: a quarter, no more
    assert burst.summary()["witness_discarded"] == 3


def test_witness_catches_forgeries_spread_over_a_few_samples():
    """Flagged samples beyond a quarter of them are a verdict, never in a row."""
    spread = calibrated()
    for n in range(30):  # every third sample two margins over: never three in a row, a third of them flagged
        assert spread.judge(*honest_sample(spread, 2 * margin(spread) if n % 3 == 0 else 0.0)) == ""
    assert "10 of 30 samples flagged" in spread.judge_all()
    halves = calibrated()  # every other sample flagged: the job goes on to MIN_JUDGED samples, then the verdict
    for n in range(MIN_JUDGED - 1):
        assert halves.judge(*honest_sample(halves, 2 * margin(halves) if n % 2 else 0.0)) == ""
        assert not halves.settled() or n == 0
    assert halves.judge(*honest_sample(halves, 2 * margin(halves))) == ""
    assert halves.settled() and f"{MIN_JUDGED // 2} of {MIN_JUDGED} samples flagged" in halves.judge_all()


def test_witness_leaves_out_time_spent_waiting_for_a_cpu():
    """A sample stretched by 2 ms of another process's load passes; the same 2 ms not spent waiting is flagged."""
    loaded, busy = calibrated(), calibrated()
    witness, _, region, own, copies = honest_sample(loaded, 2_000_000.0)
    assert all(loaded.judge(witness, 2_000_000.0, region, own, copies) == "" for _ in range(IN_A_ROW))
    verdicts = [busy.judge(witness, 0.0, region, own, copies) for _ in range(IN_A_ROW)]
    assert verdicts[0] == "" and busy.last == DISCARDED and "clock saw" in verdicts[-1]


def test_contest_rules_per_evaluation_file():
    gemv, gemm, group = task_rules("gemv"), task_rules("gemm"), task_rules("group_gemm")
    assert gemv.eval.name == "eval.py" and gemv.eval.clear_bytes == 4 << 30 and not gemv.eval.leaderboard_warms_every_shape
    assert gemm.eval.clear_bytes == 16000 * (4 << 20) and gemm.eval.benchmark.max_runs == 200
    assert gemm.eval.leaderboard.max_runs == 1000 and gemm.inputs_per_sample == 50
    assert group.eval.benchmark.max_runs == 100 and group.eval.leaderboard_warmup.max_runs == 50
    assert group.input_seeds(1111)[:2] == [1153, 1195] and gemv.input_seeds(1111) == [1111]


def run(*args):
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--json"], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    return proc, json.loads(proc.stdout)


@pytest.mark.slow
def test_host_bound_honest_submission_gets_no_verdict(results_dir, busy_machine):
    """A kernel that spends 2 ms of host time a call, on a machine with two busy processes beside the run: the
    witness gives the waits for a CPU back, and the host time is the file's own honest cost."""
    proc, out = run("--task", "gemm", "--submission", str(SUBS / "host_bound.py"), "--mode", "benchmark",
                    "--case", "0")
    assert proc.returncode == 0, proc.stderr
    assert out[0]["records"][0]["status"] == "pass"


@pytest.mark.parametrize("timing", ["arena", "contest"])
def test_records_say_which_timing_and_schema_produced_them(results_dir, timing):
    proc, out = run("--task", "gemv", "--submission", "v0", "--mode", "benchmark", "--case", "1", "--timing", timing)
    assert proc.returncode == 0, proc.stderr
    assert out[0]["timing"] == timing
    stored = [json.loads(line) for line in (results_dir / "gemv.jsonl").read_text().splitlines()]
    assert [(r["timing"], r["schema"]) for r in stored] == [(timing, SCHEMA)]
    assert stored[0]["code_sha256"] == code_sha256((ROOT / "submissions" / "gemv" / "v0.py").read_text())
    phases = stored[0]["phases_ns"]
    assert {"start", "ready", "calibrate", "load", "draw", "reference", "calls", "sample", "check"} <= set(phases)
    assert sum(phases.values()) > stored[0]["job_ns"]  # the worker's start-up and the warm-up came before the job


def test_a_witness_verdict_names_a_crowded_machine():
    from harness.evaluator.evaluation import CROWDED_NS, Sample, crowded
    calm = Sample(5e6, 0.0, 1e6, 0.0, {}, [], False)
    assert crowded(calm) == ""
    assert crowded(Sample(5e6, 2.5e6, 1e6, 0.0, {}, [], False, 0.0)) == ""  # only the worker's main thread waited
    busy = Sample(5e6, 2.5e6, 1e6, 0.0, {}, [], False, 2.5e6)
    assert CROWDED_NS < 2.5e6 and "the evaluator itself waited 2.5 ms for a CPU" in crowded(busy)


def test_the_worker_main_threads_wait_is_credited_less_what_its_own_threads_ran():
    from harness.evaluator.witness import TICK_NS, WorkerCpu
    before = WorkerCpu(main_wait_ns=1_000_000, main_run_ns=0, others_ns={7: 2_000_000}, ticks=100)
    waited = WorkerCpu(main_wait_ns=6_000_000, main_run_ns=1_000_000, others_ns={7: 2_000_000}, ticks=100)
    assert waited.credit_ns(before) == 5_000_000  # a crowded machine: nothing of the worker's own ran
    helped = WorkerCpu(main_wait_ns=6_000_000, main_run_ns=1_000_000, others_ns={7: 5_000_000, 9: 1_000_000},
                       ticks=100)
    assert helped.credit_ns(before) == 1_000_000  # threads 7 (3 ms more) and 9 (new, 1 ms) explain 4 ms of it
    ended = WorkerCpu(main_wait_ns=6_000_000, main_run_ns=1_000_000, others_ns={7: 2_000_000},
                      ticks=100 + 2 + round(5_000_000 / TICK_NS) + 1)
    assert ended.credit_ns(before) == 0  # more ticks than the live threads ran: threads that ended did the rest
    idle = WorkerCpu(main_wait_ns=6_000_000, main_run_ns=1_000_000, others_ns={7: 2_000_000}, ticks=100,
                     default_priority=False)
    assert idle.credit_ns(before) == 0  # a main thread put to SCHED_IDLE or a positive nice waits by its own choice
    assert WorkerCpu.read(os.getpid()).main_run_ns > 0


def test_a_warm_up_times_one_draw_throughout_and_no_two_timed_draws_share_a_seed():
    from dataclasses import replace

    from harness.evaluator.evaluation import Evaluation
    from harness.evaluator.session import build_jobs
    from harness.rules import StopRule
    warm, timed = build_jobs("gemm", "benchmark", "smoke")[:2]
    evaluation = Evaluation("gemm", str(ROOT / "submissions" / "gemm" / "v0.py"), 120, confined=False)
    drawn, sampled, timed_seeds = [], [], []
    generate, draw_timed = evaluation.generate, evaluation.draw_timed
    evaluation.generate = lambda job, seed, *args, **kw: drawn.append(seed) or generate(job, seed, *args, **kw)
    evaluation.draw_timed = lambda job, seed, count: sampled.append((seed, count)) or draw_timed(job, seed, count)
    try:
        for job in (warm, timed, timed):  # the shape's warm-up, its recorded job, and that job again
            drawn.clear()
            sampled.clear()
            result = evaluation.benchmark(replace(job, stop=StopRule(max_runs=4, min_runs=4)))
            assert result.status == "pass" and len(result.samples_ns) == 4
            n = len(job.seeds)
            assert drawn == [*job.seeds, job.seeds[0]]  # the correctness pass and the general values: public seeds
            # one draw of n inputs per sample; a job's first sample warms the slots and is not kept
            assert [count for _, count in sampled] == [n] * (5 if job.record else 1)
            timed_seeds += [seed for seed, _ in sampled]
        assert len(set(timed_seeds)) == len(timed_seeds)  # no timed input is drawn twice, within a job or across
    finally:
        evaluation.close()


def test_one_nvidia_smi_call_gives_the_driver_and_the_clocks(monkeypatch):
    """describe()'s driver and clocks come from one query; no nvidia-smi, no driver and no clocks."""
    from harness import device
    asked = []

    def smi(query):
        asked.append(query)
        return ["580.159.04", "1980", "3201", "1980", "38", "127.95"]
    monkeypatch.setattr(device, "nvidia_smi", smi)
    driver, clocks = device.driver_and_clocks()
    assert len(asked) == 1 and asked[0].startswith("driver_version,")
    assert driver == "580.159.04" and clocks == {"sm_mhz": "1980", "mem_mhz": "3201", "max_sm_mhz": "1980",
                                                 "temp_c": "38", "power_w": "127.95"}
    monkeypatch.setattr(device, "nvidia_smi", lambda query: [])
    assert device.driver_and_clocks() == (None, {})
    assert device.package_version("torch") == torch.__version__
    assert device.package_version("no-such-distribution-here") is None


def test_a_discarded_sample_counts_as_the_slowest_kept_and_its_wall_time_not_at_all(monkeypatch):
    """The witness discards samples 2 and 4 (as it would a stall or a forged time; sample 4 reports 1 ns and takes
    0.3 s more): sample 2, before any sample is kept, counts for nothing; sample 4 counts as the slowest kept so
    far, and its wall time is left off the stop rule's clock; the first sample warms the slots up."""
    from dataclasses import replace

    from harness.evaluator import evaluation as ev
    from harness.evaluator.session import build_jobs
    from harness.rules import StopRule
    judge = Witness.judge

    def judged(self, *args):
        verdict = judge(self, *args)
        if self.seen in (2, 4):
            self.last = DISCARDED
        if self.seen == 4:
            time.sleep(0.3)
        return verdict
    monkeypatch.setattr(ev.Witness, "judge", judged)
    regions = []
    number = ev.number

    def reported(message, key):
        value = number(message, key)
        if key == "region_ns":
            regions.append(value)
            return 1.0 if len(regions) == 4 else value
        return value
    monkeypatch.setattr(ev, "number", reported)
    timed = build_jobs("gemm", "benchmark", "smoke")[1]
    evaluation = ev.Evaluation("gemm", str(ROOT / "submissions" / "gemm" / "v0.py"), 120, confined=False)
    kept = []
    done = StopRule.done
    monkeypatch.setattr(StopRule, "done", lambda self, durations, wall_ns: kept.append(
        (list(durations), wall_ns, time.perf_counter_ns())) or done(self, durations, wall_ns))
    try:
        result = evaluation.benchmark(replace(timed, stop=StopRule(max_runs=4, min_runs=4)))
    finally:
        evaluation.close()
    assert result.status == "pass" and len(result.samples_ns) == 4
    durations, clock, now = zip(*kept)
    assert [len(d) for d in durations] == [1, 2, 3, 4]  # samples 3, 4 (as the slowest), 5, 6; never 1 nor 2
    assert durations[1][1] == max(durations[0])  # not 1 ns / n
    assert now[1] - now[0] > 0.3e9 and clock[1] - clock[0] < now[1] - now[0] - 0.25e9


def test_a_job_the_witness_has_not_settled_takes_more_samples(monkeypatch):
    """With the stop rule met after 2 kept samples, a witness that is not settled for its first 3 answers keeps the job
    sampling: 3 more samples before it stops."""
    from dataclasses import replace

    from harness.evaluator import evaluation as ev
    from harness.evaluator.session import build_jobs
    from harness.rules import StopRule
    answers = iter([False, False, False])
    monkeypatch.setattr(ev.Witness, "settled", lambda self: next(answers, True))
    timed = build_jobs("gemm", "benchmark", "smoke")[1]
    evaluation = ev.Evaluation("gemm", str(ROOT / "submissions" / "gemm" / "v0.py"), 120, confined=False)
    try:
        result = evaluation.benchmark(replace(timed, stop=StopRule(max_runs=2, min_runs=2)))
    finally:
        evaluation.close()
    assert result.status == "pass" and len(result.samples_ns) == 2 + 3
