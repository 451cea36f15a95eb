"""Per run of scripts/device_clock.sh (its runs.jsonl): each record's status, the evaluator's clock's mean per call,
the worker's events' mean beside it and their ratio, the clock's fixed cost and one sample's uncertainty, the samples
the judge set apart (preempted, interrupted writes, slow hand-overs, discarded; the overrun charged), and the
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
                share = clock.get("uncertainty_share")
                apart = ", ".join(f"{key} {clock[key]}" for key in ("preempted", "interrupted", "slow_handovers",
                                                                     "discarded") if clock.get(key))
                charged = f", charged {us(clock['charged_ns'], 1)} µs" if clock.get("charged_ns") else ""
                print(f"- {r['shape']}: {r['status']} clock {us(mean)} µs, worker {us(wmean)} µs (worker/clock "
                      f"{ratio}), runs {stats.get('runs')}, fixed {us(clock.get('fixed_ns'), 1)} µs, spread "
                      f"{us(clock.get('spread_ns'))} µs, share {'-' if share is None else f'{share:.2%}'}"
                      f"{'; ' + apart if apart else ''}{charged} {r['message'][:300]}")


if __name__ == "__main__":
    main(sys.argv[1])
