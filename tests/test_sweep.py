"""Sweeps: the version parser, lanes, the queue and its retries, records appended once each by the
driver, exit codes, and the Ray backend on a local Ray instance with fake GPUs (CPU jobs, smoke
shapes, test mode: the fastest mode that writes records)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sweep import lanes as sw

ROOT = Path(__file__).resolve().parent.parent
SUBS = Path(__file__).resolve().parent / "submissions"
DIES = str(SUBS / "dies_on_lane.py")  # passes, except on the lane $SWEEP_TEST_DIE_ON names
EXITS = str(SUBS / "exits.py")  # its worker dies on every lane
TEST_MODE = sw.Options(mode="test", shapes="smoke", job_timeout_s=300)


def lines(results_dir: Path, task: str = "gemm") -> list[dict]:
    """Every line of a results file, each of which must be one whole JSON record."""
    path = results_dir / f"{task}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_versions_all_range_list_and_mix():
    every = sw.parse_versions("gemm", "all")
    files = len(list((ROOT / "submissions" / "gemm").glob("v*.py")))
    assert every[:3] == ["v0", "v1", "v2"] and every[-1] == f"v{files - 1}" and len(every) == files
    assert sw.parse_versions("gemm", "v8..v11") == ["v8", "v9", "v10", "v11"]
    assert sw.parse_versions("gemm", "v9,v3,v9") == ["v9", "v3"]
    assert sw.parse_versions("gemm", "v0..v2, v7,v1") == ["v0", "v1", "v2", "v7"]
    mine = str(SUBS / "wrong.py")
    assert sw.parse_versions("gemm", f"v0,{mine}") == ["v0", mine]  # a path names a file as run.py takes it


@pytest.mark.parametrize("spec, said", [("v0..v999", "gemm has no version v999; its versions: v0, v1"),
                                        ("v5..v2", "v5 comes after v2"), ("v3,x", "no version x"),
                                        (",", "no versions"), ("v0,missing.py", "missing.py: no such file")])
def test_versions_errors_name_the_known_ones(spec, said):
    with pytest.raises(sw.SweepError, match=said):
        sw.parse_versions("gemm", spec)


def test_lanes_pin_one_gpu_each():
    lanes = sw.make_lanes(None, None, 2, None)
    assert [(l.name, l.env["CUDA_VISIBLE_DEVICES"], l.env[sw.LANE_ENV]) for l in lanes] == [
        ("gpu0", "0", "gpu0"), ("gpu1", "1", "gpu1")]
    # The driver's own CUDA_VISIBLE_DEVICES is what lane numbers index.
    assert [l.env["CUDA_VISIBLE_DEVICES"] for l in sw.make_lanes("1", None, 2, "4,5")] == ["5"]
    assert [l.name for l in sw.make_lanes(None, 3, 0, None)] == ["cpu0", "cpu1", "cpu2"]
    assert [l.name for l in sw.make_lanes(None, None, 0, None)] == ["cpu0"]
    assert all("CUDA_VISIBLE_DEVICES" not in l.env for l in sw.make_lanes(None, 2, 0, None))


@pytest.mark.parametrize("gpus, lanes, count, said", [("2", None, 2, "numbered 0..1"), ("a", None, 2, "GPU numbers"),
                                                      ("0", None, 0, "no GPU here"), ("0", 2, 2, "not both")])
def test_lane_errors(gpus, lanes, count, said):
    with pytest.raises(sw.SweepError, match=said):
        sw.make_lanes(gpus, lanes, count, None)


def test_command_is_runpy_json_without_records():
    job = sw.SweepJob("gemm", "v3")
    argv = sw.Options(mode="benchmark", timing="contest", case_timeout_s=9).command(job, "py")
    assert argv[:2] == ["py", str(ROOT / "run.py")]
    assert " ".join(argv[2:]) == ("--task gemm --submission v3 --shapes auto --timing contest --json --no-record "
                                  "--mode benchmark --timeout 9")
    assert "--mode" not in sw.Options(mode="auto").command(job, "py")


def summary(status="pass", passed=True, geomean=5000.0):
    return [{"mode": "benchmark", "passed": passed, "geomean_ns": geomean,
             "records": [{"status": status, "message": "boom" if status != "pass" else "", "task": "gemm"}]}]


def test_judge_pass_fail_and_lost():
    job = sw.SweepJob("gemm", "v3", attempts=1)
    noise = "a submission printed this\n[not json\n"
    ok = sw.judge(job, "gpu0", 0, noise + json.dumps(summary(), indent=2), "", 1.0)
    assert (ok.status, ok.geomean_ns, len(ok.records)) == ("pass", 5000.0, 1)
    bad = sw.judge(job, "gpu0", 1, json.dumps(summary("fail", False, None), indent=2), "", 1.0)
    assert bad.status == "fail" and bad.message == "fail: boom" and not bad.lost
    crashed = sw.judge(job, "gpu0", 1, json.dumps(summary("crash", False, None), indent=2), "", 1.0)
    assert crashed.lost and "worker crashed: boom" in crashed.message and len(crashed.records) == 1
    killed = sw.judge(job, "gpu0", -9, "", "", 1.0)
    assert killed.lost and killed.message == "killed by SIGKILL" and not killed.records
    silent = sw.judge(job, "gpu0", 2, "", "error: something\n", 1.0)
    assert silent.lost and silent.message == "exit code 2 without a result: error: something"



def test_a_gpu_only_file_on_a_cpu_is_skipped_not_failed():
    from harness.protocol import NEEDS_GPU
    job = sw.SweepJob("gemv", "v1", attempts=1)
    runs = summary("error", False, None)
    runs[0]["records"][0]["message"] = f"submission failed to load: {NEEDS_GPU} (its kernels are built for one) ..."
    skipped = sw.judge(job, "cpu0", 1, json.dumps(runs, indent=2), "", 1.0)
    assert (skipped.status, skipped.message) == ("skipped", "skipped: needs a GPU")
    assert sw.SweepResult([skipped], 1, [], 1.0).passed
    runs[0]["records"][0]["gpu"] = {"name": "NVIDIA H200", "cc": "9.0"}  # said on a GPU: the file's words, not a fact
    assert sw.judge(job, "gpu0", 1, json.dumps(runs, indent=2), "", 1.0).status == "fail"


def attempt(job, lane, status):
    return sw.Attempt(job, lane, status, number=job.attempts)


def test_queue_order_and_a_lost_job_goes_to_another_lane_first():
    a, b, c = sw.make_jobs([("gemm", "v1"), ("gemm", "v2"), ("gemm", "v3")])
    q = sw.JobQueue([a, b, c], ["x", "y"])
    assert q.take("x") is a and q.take("y") is b
    lost = attempt(a, "x", "lost")
    q.settle(lost)
    assert not lost.final and a.lost_on == ["x"]
    assert q.take("x") is c  # a was lost on x: x takes the next one
    q.settle(attempt(b, "y", "pass"))
    assert q.take("y") is a and a.attempts == 2  # retried first, elsewhere
    again = attempt(a, "y", "lost")
    q.settle(again)
    assert again.final  # MAX_ATTEMPTS spent: a is reported lost
    q.settle(attempt(c, "x", "pass"))
    assert q.take("x") is None and q.take("y") is None


def test_queue_retries_on_the_same_lane_when_it_is_the_only_one_and_keeps_the_last_lane():
    [a] = sw.make_jobs([("gemm", "v1")])
    q = sw.JobQueue([a], ["x", "y"])
    assert q.take("x") is a
    assert q.retire("y") and not q.retire("x")  # the last lane working is never retired
    q.settle(attempt(a, "x", "lost"))
    assert q.take("x") is a  # nobody else left to try it


def test_a_sweep_stopped_midway_keeps_the_jobs_that_ended(results_dir):
    a, b = sw.make_jobs([("gemm", "v1"), ("gemm", "v2")])
    closed = []

    def events():  # a backend stopped by SIGTERM (run.py's handler raises SystemExit) after its first job
        try:
            yield sw.Finished(sw.Attempt(a, "cpu0", "pass", geomean_ns=5.0, wall_s=2.0))
            raise SystemExit(143)
        finally:
            closed.append(True)
    result = sw.SweepResult()
    with pytest.raises(SystemExit):
        sw.drive(events(), "cpu", into=result)
    result.stopped = True
    assert closed and [o.job for o in result.outcomes] == [a] and result.attempts == 1 and result.wall_s > 0
    summary = result.as_json()
    assert summary["stopped"] and not summary["passed"] and [j["version"] for j in summary["jobs"]] == ["v1"]


@pytest.mark.slow
def test_sweep_retries_lost_jobs_elsewhere_retires_the_failing_lane_and_records_once(results_dir, monkeypatch):
    monkeypatch.setenv("SWEEP_TEST_DIE_ON", "cpu0")  # lane cpu0 "fails": every job's worker dies there
    jobs = sw.make_jobs([("gemm", DIES)] * 4)
    lanes = sw.make_lanes(None, 2, 0, None)
    seen = []
    result = sw.drive(sw.local_events(jobs, lanes, TEST_MODE), "cpu", seen.append)
    assert result.passed and len(result.outcomes) == 4
    assert all(a.lane == "cpu1" for a in result.outcomes)
    assert sorted(a.number for a in result.outcomes) == [1, 1, 2, 2]  # cpu0 lost two, retried on cpu1
    assert [(r.lane, r.why) for r in result.retired] == [("cpu0", "lost 2 jobs in a row")]
    lost = [e.attempt for e in seen if isinstance(e, sw.Finished) and e.attempt.lost]
    assert [(a.lane, a.final) for a in lost] == [("cpu0", False), ("cpu0", False)]
    recs = lines(results_dir)
    run_ids = {a.records[0]["run_id"] for a in result.outcomes}
    assert len(recs) == 16 and {r["run_id"] for r in recs} == run_ids  # 4 jobs x 4 test cases, lost tries none
    assert all(r["status"] == "pass" for r in recs)
    assert [row["version"] for row in result.rows()] == ["dies_on_lane"] * 4


@pytest.mark.slow
def test_a_job_lost_on_every_try_is_reported_with_its_last_records(results_dir):
    jobs = sw.make_jobs([("gemm", EXITS), ("gemm", DIES)])
    result = sw.drive(sw.local_events(jobs, sw.make_lanes(None, 2, 0, None), TEST_MODE), "cpu")
    rows = {row["version"]: row for row in result.rows()}
    assert rows["exits"]["status"] == "lost" and rows["exits"]["attempts"] == sw.MAX_ATTEMPTS
    assert "worker crashed" in rows["exits"]["message"] and rows["dies_on_lane"]["status"] == "pass"
    assert not result.passed and result.attempts == 3
    recs = lines(results_dir)
    assert sorted(r["status"] for r in recs) == sorted(["crash"] + ["skipped"] * 3 + ["pass"] * 4)  # one try's each


@pytest.mark.slow
def test_a_job_past_its_time_limit_is_killed_and_lost(results_dir):
    [job] = sw.make_jobs([("gemv", str(SUBS / "hangs.py"))])
    options = sw.Options(mode="test", shapes="smoke", job_timeout_s=8)
    result = sw.drive(sw.local_events([job], sw.make_lanes(None, 1, 0, None), options), "cpu")
    [outcome] = result.outcomes
    assert outcome.lost and outcome.number == 2 and "no result after 8 s: killed" in outcome.message
    assert lines(results_dir, "gemv") == []


def sweep_cli(*args, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "sweep", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.slow
def test_cli_sweep_exit_codes_summary_and_records(results_dir):
    proc = sweep_cli("--task", "gemv", "--versions", "v0,v1", "--lanes", "2", "--json")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr  # v1 needs triton (a GPU): skipped here, which fails nothing
    rows = {row["version"]: row for row in out["jobs"]}
    assert rows["v0"]["status"] == "pass" and rows["v0"]["geomean_ns"] > 0 and rows["v0"]["attempts"] == 1
    assert rows["v1"]["status"] == "skipped" and rows["v1"]["attempts"] == 1  # a verdict is not retried
    assert {rows["v0"]["lane"], rows["v1"]["lane"]} <= {"cpu0", "cpu1"}
    recs = lines(results_dir, "gemv")
    assert len(recs) == rows["v0"]["records"] + rows["v1"]["records"] and {r["mode"] for r in recs} == {"benchmark"}
    ok = sweep_cli("--task", "gemv", "--versions", "v0", "--mode", "test")
    assert ok.returncode == 0 and "1 pass" in ok.stdout and "gemv" in ok.stdout


@pytest.mark.parametrize("args, said", [(["--task", "gemv", "--versions", "v0..v99"], "gemv has no version v99"),
                                        (["--task", "gemv", "--gpus", "0"], "no GPU here"),
                                        (["--task", "gemv", "--ray", "auto", "--lanes", "2"], "drop --gpus")])
@pytest.mark.slow
def test_cli_sweep_usage_errors_exit_2(results_dir, args, said):
    proc = sweep_cli(*args)
    assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr


def test_ray_missing_is_a_clear_error(monkeypatch):
    from harness.sweep import ray_backend
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(sw.SweepError, match=r"pip install -e \.\[ray\]"):
        ray_backend.import_ray()


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="the Ray backend's tests need pip install -e .[ray]")
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, object_store_memory=100 << 20, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_cli_refuses_a_cluster_without_gpus(results_dir):
    pytest.importorskip("ray", reason="the Ray backend's tests need pip install -e .[ray]")
    proc = sweep_cli("--task", "gemv", "--versions", "v0", "--ray", "local", "--mode", "test")
    assert proc.returncode == 2 and "has no GPU" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_ray_tasks_take_one_gpu_each_and_the_driver_records_once(local_ray, results_dir):
    from harness.sweep.ray_backend import ray_events
    jobs = sw.make_jobs([("gemm", DIES), ("gemm", DIES), ("gemm", DIES), ("gemm", EXITS)])
    seen = []
    result = sw.drive(ray_events(jobs, "local", TEST_MODE), "cpu", seen.append)
    by_version = {}
    for a in result.outcomes:
        by_version.setdefault(Path(a.job.version).stem, []).append(a)
    assert [a.status for a in by_version["dies_on_lane"]] == ["pass"] * 3
    assert all(a.lane.split(":")[1] in ("gpu0", "gpu1") for a in by_version["dies_on_lane"])  # one fake GPU each
    [crashed] = by_version["exits"]
    assert crashed.status == "lost" and crashed.number == sw.MAX_ATTEMPTS  # resubmitted, then reported
    assert sum(isinstance(e, sw.Started) for e in seen) == 5 and not result.passed
    recs = lines(results_dir)
    assert sorted(r["status"] for r in recs) == sorted(["crash"] + ["skipped"] * 3 + ["pass"] * 12)  # last try's, once
    assert {r["run_id"] for r in recs} == {a.records[0]["run_id"] for a in result.outcomes}


def test_missing_picks_the_versions_without_a_complete_run_in_the_scope(results_dir):
    from fixtures_views import H200, run, store

    from harness.views.lineage import versions
    every = [v.name for v in versions("gemv")]
    scope = (H200, "arena", "benchmarks")
    assert sw.parse_versions("gemv", "missing", scope) == every  # nothing stored: every version
    store(results_dir, run("gemv", "v0", "a", [400] * 3) + run("gemv", "v2", "b", [90] * 3)
          + run("gemv", "v1", "c", [100] * 3, timing="legacy") + run("gemv", "v3", "d", [80] * 2))  # v3 incomplete
    missing = sw.parse_versions("gemv", "missing", scope)
    assert missing == [v for v in every if v not in ("v0", "v2")]
    assert sw.parse_versions("gemv", "v0,missing", scope)[:2] == ["v0", "v1"]
    with pytest.raises(sw.SweepError, match="needs --mode benchmark"):
        sw.parse_versions("gemv", "missing")
