"""Synthetic benchmark records and leaderboard entries for the view tests (no timing runs needed)."""
from harness import results
from harness.protocol import SCHEMA
from reference.cases import cases

H200 = "NVIDIA H200"


def record(task, version, run_id, index, mean_us, *, gpu=H200, timing="arena", kind="benchmarks", median_us=None,
           host_us=None, host_bound=None, ts="2026-11-22T08:00:00", sha256=None):
    rec = {"task": task, "version": version, "run_id": run_id, "timestamp": ts, "index": index,
           "shape": cases(task, kind)[index].label, "mode": "benchmark", "kind": kind, "status": "pass",
           "sol_ns": 10_000.0, "flops": 2e9 * (index + 1), "bytes": 1e8,
           "stats": {"mean": mean_us * 1e3, "median": (median_us or mean_us) * 1e3}, "gpu": {"name": gpu}}
    if timing != "legacy":
        rec |= {"timing": timing, "schema": SCHEMA}
    if host_us is not None:
        rec["stats"]["host_ns"] = host_us * 1e3
    if host_bound is not None:
        rec["host_bound"] = host_bound
    if sha256 is not None:
        rec["sha256"] = sha256
    return rec


def run(task, version, run_id, means_us, **kw):
    """One complete run: a record per shape, means_us[i] for shape i."""
    return [record(task, version, run_id, i, mean, **kw) for i, mean in enumerate(means_us)]


def store(results_dir, records):
    for r in records:
        results.append(results_dir / f"{r['task']}.jsonl", r)


def entry(task, version, geomean_us, *, gpu=H200, timing="arena", when="2026-11-22T10:00:00", schema=SCHEMA):
    rec = {"task": task, "version": version, "gpu": gpu, "shapes": "contest", "geomean_ns": geomean_us * 1e3,
           "when": when, "sha256": "ab" * 32, "run_id": f"{task}-{version}-{when}"}
    if timing != "legacy":
        rec |= {"timing": timing, "schema": schema}
    return rec
