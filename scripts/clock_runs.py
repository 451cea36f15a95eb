"""Per run of scripts/device_clock.sh (its runs.jsonl): each record's status, the evaluator's clock's mean per call,
the worker's events' mean beside it and their ratio, the clock's fixed cost and one sample's uncertainty, and the
verdict's message.   python scripts/clock_runs.py RUNS.jsonl"""
import json
import sys


def us(ns, digits=2) -> str:
    return "-" if ns is None else f"{ns / 1e3:.{digits}f}"


def main(path: str):
    for line in open(path):
        run = json.loads(line)
        print(f"## {run['label']} (rc {run['rc']}, {run['seconds']} s)")
        for summary in run["out"] or []:
            for r in summary.get("records", []):
                stats, worker, clock = r.get("stats") or {}, r.get("worker_stats") or {}, r.get("clock") or {}
                mean, wmean = stats.get("mean"), worker.get("mean")
                ratio = f"{wmean / mean:.3f}" if mean and wmean else "-"
                print(f"- {r['shape']}: {r['status']} clock {us(mean)} µs, worker {us(wmean)} µs (worker/clock "
                      f"{ratio}), runs {stats.get('runs')}, fixed {us(clock.get('fixed_ns'), 1)} µs, spread "
                      f"{us(clock.get('spread_ns'))} µs, share {clock.get('uncertainty_share')}, preempted "
                      f"{clock.get('preempted')} {r['message'][:300]}")


if __name__ == "__main__":
    main(sys.argv[1])
