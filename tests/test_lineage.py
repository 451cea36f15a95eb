"""run.py list / diff on synthetic result records: incomplete and failed runs, two GPU types."""
import subprocess
import sys
from pathlib import Path

import pandas as pd

from harness import results
from harness.lineage import lineage_table, per_shape_table, versions

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


def test_lineage_and_diff_use_latest_complete_run_on_one_gpu(results_dir):
    write(results_dir, [record("v0", "a", i, 400.0) for i in range(3)]
          + [record("v1", "b", i, 100.0) for i in range(3)]
          + [record("v1", "c", i, 50.0, ts="2026-11-22T09:00:00") for i in range(2)]  # incomplete: ignored
          + [record("v1", "d", i, 1.0, status="fail", ts="2026-11-22T10:00:00") for i in range(3)]  # failed
          + [record("v1", "e", i, 25.0, gpu="NVIDIA H100 80GB HBM3") for i in range(3)])  # other GPU
    table = lineage_table("gemv", 3).set_index("version")
    assert round(table.loc["v1", "geomean µs"], 6) == 100.0 and round(table.loc["v1", "×parent"], 6) == 4.0
    assert round(table.loc["v1", "×SOL"], 6) == 10.0
    other = lineage_table("gemv", 3, gpu="NVIDIA H100 80GB HBM3").set_index("version")
    assert other.loc["v1", "geomean µs"] == 25.0 and pd.isna(other.loc["v0", "geomean µs"])  # no H100 run of v0
    diff = per_shape_table("gemv", ["v0", "v1"], 3)
    assert list(diff["v1 ×v0"].round(6)) == [4.0] * 4  # three shapes and the geomean row
    assert diff.index[-1][1] == "geomean"


def test_cli_list_and_diff(results_dir):
    write(results_dir, [record("v0", "a", i, 400.0) for i in range(3)] + [record("v1", "b", i, 80.0) for i in range(3)])
    run = lambda *a: subprocess.run([sys.executable, str(ROOT / "run.py"), *a], capture_output=True, text=True,  # noqa: E731
                                    cwd=ROOT, timeout=120)
    out = run("list", "--task", "gemv")
    assert out.returncode == 0 and "v1" in out.stdout and "5.00" in out.stdout
    out = run("diff", "--task", "gemv", "v0", "v1")
    assert out.returncode == 0 and "geomean" in out.stdout and "5.00" in out.stdout
    out = run("diff", "--task", "gemv")
    assert out.returncode == 2 and "--all" in out.stderr
