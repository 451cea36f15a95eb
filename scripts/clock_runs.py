"""Per run of scripts/device_clock.sh (its runs.jsonl): each record's status, the evaluator's clock's mean per call,
the worker's events' mean beside it and their ratio, the clock's fixed cost and one sample's uncertainty, and the
verdict's message.   python scripts/clock_runs.py RUNS.jsonl"""
import json
import sys


def main(path: str):
    for line in open(path):
        run = json.loads(line)
        print(f"## {run['label']} (rc {run['rc']}, {run['seconds']} s)")
        for summary in run["out"] or []:
            for r in summary.get("records", []):
                stats, worker, clock = r.get("stats") or {}, r.get("worker_stats") or {}, r.get("clock") or {}
                mean, wmean = stats.get("mean"), worker.get("mean")
                ratio = f"{wmean / mean:.3f}" if mean and wmean else "-"
                print(f"- {r['shape']}: {r['status']} clock {mean and mean / 1e3:.2f} µs, worker {wmean and wmean / 1e3:.2f}"
                      f" µs (worker/clock {ratio}), runs {stats.get('runs')}, fixed "
                      f"{clock.get('fixed_ns') and clock['fixed_ns'] / 1e3:.1f} µs, spread "
                      f"{clock.get('spread_ns') and clock['spread_ns'] / 1e3:.2f} µs, share "
                      f"{clock.get('uncertainty_share')}, preempted {clock.get('preempted')} "
                      f"{r['message'][:300]}")


if __name__ == "__main__":
    main(sys.argv[1])
