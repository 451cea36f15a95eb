"""run.py list / diff on synthetic result records: incomplete and failed runs, two GPU types."""
import json
import pytest
import subprocess
import sys
from pathlib import Path

import pandas as pd

from harness import results
from harness.protocol import timing_of
from harness.views.lineage import lineage_table, per_shape_table, versions

ROOT = Path(__file__).resolve().parent.parent


def record(version, run_id, index, mean_us, gpu="NVIDIA H200", status="pass", ts="2026-11-22T08:00:00"):
    return {"version": version, "run_id": run_id, "timestamp": ts, "index": index, "shape": f"shape{index}",
            "mode": "benchmark", "kind": "benchmarks", "status": status, "sol_ns": 10_000.0,
            "stats": {"mean": mean_us * 1e3}, "gpu": {"name": gpu}}


def write(results_dir, records):
    for r in records:
        results.append(results_dir / "gemv.jsonl", r)


def test_versions_read_parent_and_idea_from_docstrings():
    vs = {v.name: v for v in versions("gemv")}
    assert vs["v0"].parent is None and vs["v1"].parent == "v0"
    assert "Triton" in vs["v1"].idea


def test_lineage_and_diff_use_complete_runs_on_one_gpu(results_dir):
    write(results_dir, [record("v0", "a", i, 400.0) for i in range(3)]
          + [record("v1", "b", i, 100.0) for i in range(3)]
          + [record("v1", "c", i, 50.0, ts="2026-11-22T09:00:00") for i in range(2)]  # incomplete: ignored
          + [record("v1", "d", i, 1.0, status="fail", ts="2026-11-22T10:00:00") for i in range(3)]  # failed
          + [record("v1", "e", i, 25.0, gpu="NVIDIA H100 80GB HBM3") for i in range(3)])  # other GPU
    table = lineage_table("gemv", timing="legacy").table.set_index("version")
    assert round(table.loc["v1", "geomean µs"], 6) == 100.0 and round(table.loc["v1", "×parent"], 6) == 4.0
    assert round(table.loc["v1", "×SOL"], 6) == 10.0
    other = lineage_table("gemv", gpu="NVIDIA H100 80GB HBM3", timing="legacy").table.set_index("version")
    assert other.loc["v1", "geomean µs"] == 25.0 and pd.isna(other.loc["v0", "geomean µs"])  # no H100 run of v0
    diff = per_shape_table("gemv", ["v0", "v1"], timing="legacy").table
    assert list(diff["v1 ×v0"].round(6)) == [4.0] * 4  # three shapes and the geomean row
    assert diff["shape"].iloc[-1] == "geomean"


@pytest.mark.slow
def test_cli_list_and_diff(results_dir):
    write(results_dir, [record("v0", "a", i, 400.0) for i in range(3)] + [record("v1", "b", i, 80.0) for i in range(3)])
    run = lambda *a: subprocess.run([sys.executable, str(ROOT / "run.py"), *a], capture_output=True, text=True,  # noqa: E731
                                    cwd=ROOT, timeout=120)
    out = run("list", "--task", "gemv", "--timing", "legacy")
    assert out.returncode == 0 and "v1" in out.stdout and "5.00" in out.stdout
    out = run("diff", "--task", "gemv", "v0", "v1", "--timing", "legacy")
    assert out.returncode == 0 and "geomean" in out.stdout and "5.00" in out.stdout
    out = run("diff", "--task", "gemv")
    assert out.returncode == 2 and "--all" in out.stderr


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


@pytest.mark.slow
def test_submit_best_then_leaderboard_on_cpu(results_dir):
    assert cli("--task", "gemv", "--submission", "v0", "--mode", "benchmark").returncode == 0
    timing = timing_of(results.read(results_dir / "gemv.jsonl")[0])
    out = cli("submit", "--task", "gemv", "--best", "--timing", timing)
    assert out.returncode == 0, out.stderr
    assert "fastest stored tries of gemv on cpu" in out.stderr and ": v0" in out.stderr
    assert "popcorn-cli submit --gpu B200 --leaderboard nvfp4_gemv --mode leaderboard" in out.stdout
    entry = results.read(results_dir / "leaderboard.jsonl")[0]
    source = (ROOT / "submissions" / "gemv" / "v0.py").read_text()
    assert entry["version"] == "v0" and entry["source"] == source and entry["geomean_ns"] > 0
    assert len(entry["means_ns"]) == 2 and entry["gpu"] == "cpu"
    contest = (results_dir / "submit" / "gemv_v0.py").read_text().splitlines()
    assert contest[:2] == ["#!POPCORN leaderboard nvfp4_gemv", "#!POPCORN gpu B200"]
    board = cli("leaderboard", "--task", "gemv", "--timing", timing)
    assert board.returncode == 0 and "v0" in board.stdout and "smoke" in board.stdout
    assert cli("submit", "--task", "gemv").returncode == 2  # neither a version nor --best


def test_leaderboard_ranks_and_tracks_best_so_far(results_dir):
    from harness.views.standings import leaderboard_path, standings
    for version, geo, when in [("v0", 900.0, "2026-11-01"), ("v1", 300.0, "2026-11-02"), ("v2", 450.0, "2026-11-03")]:
        results.append(leaderboard_path(), {"task": "gemv", "gpu": "NVIDIA H200", "shapes": "contest", "version": version,
                                            "geomean_ns": geo * 1e3, "when": when, "sha256": "ab" * 32})
    results.append(leaderboard_path(), {"task": "gemv", "gpu": "NVIDIA H100", "shapes": "contest", "version": "v0",
                                        "geomean_ns": 1e6, "when": "2026-11-04", "sha256": "cd" * 32})
    df = standings("gemv", timing="legacy").table
    h200 = df[df["gpu"] == "NVIDIA H200"].set_index("try")
    assert list(h200.sort_values("rank").index) == ["v1@abababa", "v2@abababa", "v0@abababa"]  # no longer the files
    assert list(h200.sort_values("when")["best so far µs"]) == [900.0, 300.0, 300.0]
    assert df[df["gpu"] == "NVIDIA H100"]["rank"].tolist() == [1]


@pytest.mark.slow
def test_plot_writes_pngs(results_dir):
    write(results_dir, [record("v0", "a", i, 400.0 * (i + 1)) | {"flops": 2e9, "bytes": 1e8} for i in range(3)]
          + [record("v1", "b", i, 90.0 * (i + 1)) | {"flops": 2e9, "bytes": 1e8} for i in range(3)]
          + [record("tex$\\bogus{$", "c", i, 95.0 * (i + 1)) | {"flops": 2e9, "bytes": 1e8} for i in range(3)])
    out = cli("plot", "--task", "gemv", "--timing", "legacy")  # a "$" in a file's name is text, not TeX
    assert out.returncode == 0, out.stderr
    for name in ("gemv_h200_legacy_benchmarks_lineage.png", "gemv_h200_legacy_benchmarks_roofline.png"):
        data = (results_dir / "local" / "plots" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_paired_interval_shrinks_with_more_rounds():
    import random

    from harness.views.compare import ratio_ci, verdict
    rng = random.Random(1)
    widths = []
    for n in (5, 50, 500):
        a = [100 + rng.gauss(0, 10) for _ in range(n)]
        b = [80 + rng.gauss(0, 10) for _ in range(n)]
        point, low, high = ratio_ci(a, b)
        assert low <= point <= high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    assert verdict(*ratio_ci(a, b)).endswith("faster")


def test_paired_interval_of_one_distribution_spans_one():
    import random

    from harness.views.compare import ratio_ci, verdict
    rng = random.Random(2)
    a = [100 + rng.gauss(0, 10) for _ in range(50)]
    b = [100 + rng.gauss(0, 10) for _ in range(50)]
    assert verdict(*ratio_ci(a, b)) == "no significant difference"


@pytest.mark.slow
def test_measured_diff_sets_a_copy_against_the_first_with_its_interval(results_dir, tmp_path):
    """The same file under two names is measured in interleaved rounds and set against the first, with its interval
    around the ratio. How close the ratio comes to one is left out: on a shared CPU a round of one file can meet
    load the other's did not (whether the 95% interval spans one, likewise: by design it misses one run in twenty;
    the synthetic interval tests above cover both)."""
    copy = tmp_path / "v0copy.py"
    copy.write_text((ROOT / "submissions" / "gemv" / "v0.py").read_text())
    out = cli("diff", "--task", "gemv", "--measure", "--rounds", "4", "--json", "v0", str(copy))
    assert out.returncode == 0, out.stderr
    measured = json.loads(out.stdout)
    base, copied = measured["geomean"]
    assert measured["base"] == base["version"] == "v0" and "v0copy" in copied["version"] and measured["rounds"] == 4
    assert base["speedup_vs_base"] is None and base["mean_ns"] > 0 and copied["mean_ns"] > 0
    assert 0 < copied["speedup_low"] <= copied["speedup_vs_base"] <= copied["speedup_high"]


@pytest.mark.slow
def test_measure_interleaves_versions_each_in_a_worker_of_its_own(tmp_path, monkeypatch):
    """diff --measure: every version runs each round, every shape, in a worker process of its own that imports it
    once (one file cannot reach another's kernel), stopped while another version is timed (so that threads a file
    started cannot slow the others down while it waits for its turn). Each file logs its imports into its
    own build cache, one of the two folders its sandbox may write."""
    from harness.evaluator.sandbox import build_environment
    from harness.evaluator.session import measure_interleaved
    from harness.submission import resolve
    from reference.cases import leaderboards
    source = (ROOT / "submissions" / "gemv" / "v0.py").read_text()
    # a process is named by its pid namespace and its pid in it: each worker may be pid 2 in a namespace of its own
    stamp = ('import os\nopen(os.path.join(os.environ["XDG_CACHE_HOME"], "imports.log"), "a")'
             '.write(f"{os.readlink(\'/proc/self/ns/pid\')}:{os.getpid()}\\n")\n')
    subs, logs = [], []
    for name in ("first", "second"):
        path = tmp_path / f"{name}.py"
        path.write_text(source + f"\n# {name}\n" + stamp)
        subs.append(resolve(str(path), "gemv", leaderboards()))
        logs.append(Path(build_environment([path])["XDG_CACHE_HOME"]) / "imports.log")
        logs[-1].unlink(missing_ok=True)
    from harness.evaluator import session, supervisor
    states = []
    run_job = session.run_job

    def watched(evaluation, job):  # every other version's worker is stopped while this one is timed
        others = [w.process.pid for w in supervisor._LIVE if w is not evaluation.worker]
        states.extend(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] for pid in others)
        return run_job(evaluation, job)
    monkeypatch.setattr(session, "run_job", watched)
    pooled = measure_interleaved(subs, "smoke", rounds=2)
    assert states and set(states) == {"T"}, states
    imports = [log.read_text().split() for log in logs]
    assert [len(i) for i in imports] == [1, 1] and imports[0] != imports[1], imports  # once each, in two processes
    assert set(pooled) == {"first", "second"}
    for per_shape in pooled.values():
        assert per_shape and all(len(means) == 2 for means in per_shape.values())


@pytest.mark.slow
def test_measure_goes_on_without_a_version_that_fails_when_told_to():
    """With on_fail, a version that fails a round is left out and the others finish their rounds; without it, the
    failure stops the measurement."""
    from harness.evaluator.session import measure_interleaved
    from harness.submission import resolve
    from reference.cases import leaderboards
    subs = [resolve(name, "gemm", leaderboards()) for name in ("v0", str(ROOT / "tests" / "submissions" / "wrong.py"))]
    failed = {}
    pooled = measure_interleaved(subs, "smoke", rounds=2, on_fail=lambda v, why: failed.update({v: why}))
    assert list(pooled) == ["v0"] and all(len(means) == 2 for means in pooled["v0"].values())
    assert list(failed) == ["wrong"] and "round 1" in failed["wrong"] and "fail" in failed["wrong"]
    with pytest.raises(RuntimeError, match="wrong did not pass benchmark mode in round 1"):
        measure_interleaved(subs, "smoke", rounds=2)


def test_every_lineage_file_names_an_earlier_parent_an_idea_and_a_measurement():
    """Each vN (N > 0) docstring: 'task vN — idea', a parent that exists and comes earlier, and H200 numbers."""
    from reference import TASKS
    from harness.views.lineage import version_key
    from harness.submission import docstring
    for task in TASKS:
        found = {v.name: v for v in versions(task)}
        assert "v0" in found and found["v0"].parent is None
        for name, v in found.items():
            doc = docstring(v.path)
            assert doc.startswith(f"{task} {name} — "), (task, name)
            assert v.idea, (task, name)
            if name == "v0":
                continue
            assert v.parent in found and version_key(v.parent) < version_key(name), (task, name, v.parent)
            assert "Measured" in doc and "µs" in doc, (task, name)


@pytest.mark.slow
def test_merge_adds_each_device_record_once(results_dir, tmp_path):
    import tarfile
    write(results_dir, [record("v0", "a", i, 400.0) for i in range(3)])
    device = tmp_path / "device" / "results"  # a device run's copy: the old records plus new ones
    device.mkdir(parents=True)
    for r in [record("v0", "a", i, 400.0) for i in range(3)] + [record("v1", "b", i, 80.0) for i in range(3)]:
        results.append(device / "gemv.jsonl", r)
    results.append(device / "leaderboard.jsonl", {"task": "gemv", "version": "v1", "geomean_ns": 80_000.0})
    assert added(results.merge(device, results_dir)) == {"gemv.jsonl": 3, "leaderboard.jsonl": 1}
    assert added(results.merge(device, results_dir)) == {"gemv.jsonl": 0, "leaderboard.jsonl": 0}
    assert [r["run_id"] for r in results.read(results_dir / "gemv.jsonl")] == ["a"] * 3 + ["b"] * 3
    results.append(device / "gemv.jsonl", record("v2", "c", 0, 70.0))
    archive = tmp_path / "results.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(device, arcname="results")
    out = cli("merge", str(archive), timeout=120)
    assert out.returncode == 0 and "results/gemv.jsonl: 7 records; 1 new record into" in out.stdout, out.stderr
    assert len(results.read(results_dir / "gemv.jsonl")) == 7
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("merge", str(empty), timeout=120).returncode == 1


def test_merge_keeps_cpu_records_out_of_the_tracked_history(results_dir, tmp_path):
    cpu_run = {**record("v0", "c", 0, 900.0), "gpu": {"name": "cpu"}}
    source = tmp_path / "elsewhere"
    results.append(source / "gemv.jsonl", cpu_run)
    results.append(source / "gemv.jsonl", record("v1", "d", 0, 80.0))
    assert added(results.merge(source, results_dir)) == {"gemv.jsonl": 2}
    assert [r["run_id"] for r in results.read(results_dir / "local" / "gemv.jsonl")] == ["c"]
    assert [r["run_id"] for r in results.read(results_dir / "gemv.jsonl")] == ["d"]
    assert added(results.merge(results_dir / "local", results_dir)) == {"gemv.jsonl": 0}  # its own local folder


def added(merge) -> dict:
    """{source file: records appended} of a results.Merge."""
    return {m.source: sum(m.added.values()) for m in merge.files}


def test_long_lineages_are_labelled_by_name_only():
    from types import SimpleNamespace

    from harness.views.plots import IDEA_LABELS_UP_TO, tick_labels
    short = [SimpleNamespace(name=f"v{i}", idea=f"idea {i}") for i in range(3)]
    assert tick_labels(short)[0][2] == "v2\nidea 2"
    long = [SimpleNamespace(name=f"v{i}", idea=f"idea {i}") for i in range(IDEA_LABELS_UP_TO + 1)]
    assert tick_labels(long)[0] == [f"v{i}" for i in range(IDEA_LABELS_UP_TO + 1)]


def test_the_contest_file_is_the_measured_file_below_its_headers(tmp_path, results_dir):
    """Only header lines among the opening comments are replaced: a line that only looks like a break (a form
    feed) or like a header, further down, stays as it was measured."""
    from harness.submission import resolve
    from harness.views.standings import contest_file
    from reference.cases import leaderboards
    body = ('"""k."""\nimport torch\n#!POPCORN gpu H100\ns = """\n#!POPCORN gpu A100\n"""\n'
            'def custom_kernel(data):\n    return data[-1]  # \x0ccustom_kernel = lambda data: data[-1]\n')
    path = tmp_path / "k.py"
    path.write_text("#!POPCORN leaderboard nvfp4_gemv\n# mine\n" + body)
    out = contest_file(resolve(str(path), "gemv", leaderboards()), "nvfp4_gemv").read_text()
    assert out == "#!POPCORN leaderboard nvfp4_gemv\n#!POPCORN gpu B200\n# mine\n" + body


@pytest.mark.slow
def test_the_worker_runs_and_submit_carries_the_hashed_content_never_the_file_as_it_reads_afterwards(tmp_path,
                                                                                                     results_dir):
    """The file is read once, when the run starts: its worker imports that content (not what a later edit, or
    another run's worker, left at the path), and the contest-ready file and the entry carry it (a file that
    rewrites itself after its import was once submitted as other code)."""
    import shutil
    from harness.evaluator import runner
    from harness.submission import resolve
    from harness.views.standings import contest_file
    from reference.cases import leaderboards
    shutil.copy(ROOT / "tests" / "redteam" / "_honest.py", tmp_path / "_honest.py")
    path = tmp_path / "k.py"
    honest = "from _honest import honest\n\n\ndef custom_kernel(data):\n    return honest(data)\n"
    path.write_text(honest)
    sub = resolve(str(path), "gemm", leaderboards())
    path.write_text("def custom_kernel(data):\n    raise RuntimeError('edited after the run started')\n")
    [summary] = runner.run(runner.RunOptions(sub, "test", "smoke", only=frozenset({0}), record=False))
    assert summary.passed, [r["message"] for r in summary.records]
    assert contest_file(sub, "nvfp4_gemm").read_text().endswith(honest)
