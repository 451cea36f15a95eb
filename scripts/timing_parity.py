"""Per benchmark shape: the default (arena) timing's mean against --timing contest on the same file,
from the newest complete benchmark run of each method per version and GPU. Prints a markdown table.

    python scripts/timing_parity.py [--results DIR] [--gpu H200] gemv:v0 gemm:v10 ...
"""
import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.protocol import timing_of  # noqa: E402
from reference.cases import cases  # noqa: E402


def newest_run(records, task, version, timing, gpu):
    runs = {}
    for r in records:
        if (r.get("mode") == "benchmark" and r.get("kind") == "benchmarks" and r.get("version") == version
                and timing_of(r) == timing and gpu in (r.get("gpu") or {}).get("name", "")):
            runs.setdefault(r["run_id"], []).append(r)
    complete = [rs for rs in runs.values() if len({r["index"] for r in rs}) == len(cases(task, "benchmarks"))]
    return max(complete, key=lambda rs: rs[0]["timestamp"]) if complete else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--results", type=Path, default=ROOT / "results")
    parser.add_argument("--gpu", default="H200")
    args = parser.parse_args()
    print("| task | version | shape | arena µs | contest µs | arena / contest | host µs/call | host-bound | "
          "statuses |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for spec in args.specs:
        task, version = spec.split(":")
        path = args.results / f"{task}.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
        arena, contest = (newest_run(records, task, version, t, args.gpu) for t in ("arena", "contest"))
        if not arena or not contest:
            print(f"| {task} | {version} | - | missing: {'arena' if not arena else 'contest'} run | | | | | |")
            continue
        by_index = {r["index"]: r for r in contest}
        for a in sorted(arena, key=lambda r: r["index"]):
            c = by_index[a["index"]]
            if not a.get("stats") or not c.get("stats"):
                print(f"| {task} | {version} | {a['index']} | - | - | - | - | - | {a['status']} / {c['status']} |")
                continue
            am, cm = a["stats"]["mean"], c["stats"]["mean"]
            worst = max(worst, abs(am / cm - 1))
            host = a.get("host_ns")
            print(f"| {task} | {version} | {a['index']} | {am / 1e3:.2f} | {cm / 1e3:.2f} | {am / cm:.4f} | "
                  f"{host / 1e3:.2f} | {'yes' if a.get('host_bound') else 'no'} | {a['status']} / {c['status']} |"
                  if host is not None else f"| {task} | {version} | {a['index']} | {am / 1e3:.2f} | {cm / 1e3:.2f} | "
                  f"{am / cm:.4f} | - | - | {a['status']} / {c['status']} |")
    print(f"\nlargest |arena / contest - 1|: {100 * worst:.2f}%")


if __name__ == "__main__":
    main()
