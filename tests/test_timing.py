"""The timed sample loop (harness.timing) against a device that records its operations: what lies
inside the timed region, where the defenses run, and that an honest host-bound kernel is no cheat."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.defenses import ESCAPE_REPEATS, Defense, EscapeWatch
from harness.rules import StopRule, task_rules
from harness.timing import Sample, Verdict, measure

ROOT = Path(__file__).resolve().parent.parent
SUBS = Path(__file__).resolve().parent / "submissions"


class RecordingDevice:
    """Every stream operation the loop issues, in order; a region of `gpu_ns` per call and a
    device that stays busy `pending` ns after the end event."""

    gpu = True

    def __init__(self, gpu_ns=1000.0, pending=0.0, idle_pending=0.0):
        self.ops, self.clock, self.calls = [], 0, 0
        self.gpu_ns, self.pending, self.idle_pending = gpu_ns, pending, idle_pending

    def log(self, op):
        self.ops.append(op)

    def now(self):
        self.clock += 10
        return self.clock

    def synchronize(self):
        self.log("synchronize")

    def flush(self):
        self.log("flush")

    def contest_clear(self):
        self.log("contest_clear")

    def hold(self):
        self.log("hold")

    def release(self):
        self.log("release")

    def hold_timed_out(self):
        return False

    def start(self):
        self.log("start")
        self.calls = 0

    def stop(self):
        self.log("stop")

    def wait_end(self):
        self.log("wait_end")
        return self.now()

    def pending_ns(self, end_reached_ns):
        self.log("synchronize")
        return self.pending

    def idle_pending_ns(self):
        self.log("synchronize")
        return self.idle_pending

    def elapsed_ns(self):
        return self.gpu_ns * self.calls


class Spy(Defense):
    def __init__(self, device):
        self.device = device

    def before_calls(self, sample):
        self.device.log("defense:before_calls")

    def after_calls(self, sample):
        self.device.log("defense:after_calls")

    def after_sample(self, sample):
        self.device.log("defense:after_sample")


def kernel_on(device, host_ns=0):
    def kernel(data):
        device.log("call")
        device.calls += 1
        device.clock += host_ns
        return data
    return kernel


def one_sample_ops(method: str) -> list:
    device = RecordingDevice()
    inputs = [object()] * 3
    measure(kernel_on(device), lambda: (inputs, [False] * 3), device, method, StopRule(max_runs=1), [Spy(device)])
    return device.ops


def region(ops):
    return ops[ops.index("start"):ops.index("stop") + 1]


@pytest.mark.parametrize("method", ["arena", "contest"])
def test_nothing_but_the_calls_inside_the_timed_region(method):
    ops = one_sample_ops(method)
    assert region(ops) == ["start", "call", "call", "call", "stop"]
    clear = "flush" if method == "arena" else "contest_clear"
    between = ops[ops.index(clear):ops.index("start")]
    assert "synchronize" not in between, f"the host waits for the GPU after the clear: {ops}"
    assert ops.index("synchronize") < ops.index(clear)  # the previous sample is done before the clear


def test_arena_holds_the_stream_until_every_call_is_queued():
    ops = one_sample_ops("arena")
    assert ops.index("flush") < ops.index("hold") < ops.index("start")
    assert ops.index("stop") < ops.index("release") < ops.index("wait_end")
    assert "hold" not in one_sample_ops("contest") and "flush" not in one_sample_ops("contest")


def test_defenses_run_outside_the_timed_region():
    ops = one_sample_ops("arena")
    start, stop = ops.index("start"), ops.index("stop")
    hooks = [i for i, op in enumerate(ops) if op.startswith("defense:")]
    assert hooks and all(i < start or i > stop for i in hooks)
    assert ops.index("defense:before_calls") < ops.index("synchronize")
    assert ops.index("defense:after_calls") > ops.index("wait_end")
    after_sample = ops.index("defense:after_sample")
    assert ops[after_sample - 1] == "synchronize"


def test_no_garbage_collection_inside_a_sample():
    import gc
    device = RecordingDevice()
    seen = []

    def kernel(data):
        seen.append(gc.isenabled())
        return data
    inputs = [object()] * 2
    measure(kernel, lambda: (seen.append(gc.isenabled()) or inputs, [False] * 2), device, "arena",
            StopRule(max_runs=2), [])
    assert seen == [True, False, False, True, False, False] and gc.isenabled()  # paused in samples, not between


def test_duration_is_gpu_time_per_call_and_host_time_is_its_own_column():
    device = RecordingDevice(gpu_ns=2000.0)
    inputs = [object()] * 4
    timing = measure(kernel_on(device, host_ns=50_000), lambda: (inputs, [False] * 4), device, "arena",
                     StopRule(max_runs=3), [])
    assert timing.durations == [2000.0] * 3  # the host's 50 µs per call does not leak into the number
    assert all(h >= 50_000 for h in timing.host_ns)


def test_escape_watch_judges_pending_work_against_the_hosts_own_noise():
    watch = EscapeWatch(noise_ns=40_000)  # a slow, noisy host: 160 µs of clock-read noise is tolerated

    def sample(pending, idle=0.0):
        return Sample(1, [], [], pending_ns=pending, region_ns=20_000, idle_pending_ns=idle)
    assert all(watch.after_calls(sample(111_000)) == "" for _ in range(10))  # the H100 gemv case: not a cheat
    assert watch.after_calls(sample(5e6)) == "" and watch.after_calls(sample(10e3)) == ""  # one spike, then quiet
    verdicts = [watch.after_calls(sample(5e6)) for _ in range(ESCAPE_REPEATS)]
    assert verdicts[:-1] == [""] * (ESCAPE_REPEATS - 1) and "escaped the timing events" in verdicts[-1]


def test_escape_watch_compares_each_sample_with_its_idle_control():
    watch = EscapeWatch(noise_ns=5_000)

    def sample(pending, idle):
        return Sample(1, [], [], pending_ns=pending, region_ns=510_000, idle_pending_ns=idle)
    # a synchronize that is slow on this host right after a busy region, with nothing pending (H100, contest clear)
    assert all(watch.after_calls(sample(130_000, 100_000)) == "" for _ in range(10))
    verdicts = [watch.after_calls(sample(10e6, 100_000)) for _ in range(ESCAPE_REPEATS)]  # 10 ms on a side stream
    assert "escaped the timing events" in verdicts[-1]


def test_escape_verdict_stops_the_loop_with_the_sample_number():
    device = RecordingDevice(pending=20e6)
    inputs = [object()]
    with pytest.raises(Verdict, match=f"sample {ESCAPE_REPEATS}: the device was still busy"):
        measure(kernel_on(device), lambda: (inputs, [False]), device, "arena", StopRule(max_runs=50),
                [EscapeWatch(noise_ns=1000)])


def test_contest_rules_per_evaluation_file():
    gemv, gemm, group = task_rules("gemv"), task_rules("gemm"), task_rules("group_gemm")
    assert gemv.eval.name == "eval.py" and gemv.eval.clear_bytes == 4 << 30 and not gemv.eval.leaderboard_warms_every_shape
    assert gemm.eval.clear_bytes == 16000 * (4 << 20) and gemm.eval.benchmark.max_runs == 200
    assert gemm.eval.leaderboard.max_runs == 1000 and gemm.inputs_per_sample == 50
    assert group.eval.benchmark.max_runs == 100 and group.eval.leaderboard_warmup.max_runs == 50
    assert group.input_seeds(1111)[:2] == [1153, 1195] and gemv.input_seeds(1111) == [1111]
    assert (gemv.rtol, gemv.atol) == (1e-3, 1e-3)


def run(*args):
    proc = subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--json"], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    return proc, json.loads(proc.stdout)


def test_host_bound_honest_submission_gets_no_verdict(results_dir):
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
    assert [(r["timing"], r["schema"]) for r in stored] == [(timing, 2)]
