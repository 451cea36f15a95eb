"""Does the contest's clear explain gemv's gap between the two timings? On the H100 at 330f881, gemv v12's default
(arena) timing came out 2.4-3.7% faster than `--timing contest` on every shape, with the SM clock at 1980 MHz
throughout (results/h100/evaluator_2026-11-26/NOTES.md). The arena's flush writes zeros over 4x the L2; the
contest's clear is a 4 GiB float32 randn. This runs benchmark mode of one gemv version three ways in one process,
one after the other for --rounds rounds: arena as is, arena with the evaluator's flush replaced by the contest's
own clear, and contest timing. Records are not written. Prints per shape each way's mean µs (median over rounds)
and its ratio to contest timing. Needs a CUDA GPU.

    python scripts/gemv_gap_probe.py [--version v12] [--rounds 2]
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import torch  # noqa: E402

from harness import device  # noqa: E402
from harness.evaluator import evaluation, session  # noqa: E402
from harness.rules import task_rules  # noqa: E402
from harness.submission import resolve  # noqa: E402
from reference.cases import leaderboards  # noqa: E402

WAYS = ("arena", "arena with the contest's clear", "contest")
ARENA_FLUSH = evaluation.L2Flush


def contest_clear_flush():
    """The evaluator's flush as the contest's clear, the one the worker runs under contest timing
    (harness.device.GpuDevice.contest_clear over gemv's clear size)."""
    return device.GpuDevice(task_rules("gemv").eval.clear_bytes).contest_clear


def means(sub, way: str, shapes: str = "contest") -> dict:
    """{shape: mean ns} of one benchmark-mode run."""
    evaluation.L2Flush = contest_clear_flush if way == WAYS[1] else ARENA_FLUSH
    timing = "contest" if way == "contest" else "arena"
    summary = session.execute(sub, "benchmark", shapes, timing=timing)
    bad = [r["message"] for r in summary.records if r["status"] != "pass"]
    if bad:
        sys.exit(f"{way}: {bad[0]}")
    return {r["shape"]: r["stats"]["mean"] for r in summary.records}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="v12")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    sub = resolve(args.version, "gemv", leaderboards())
    seen = {way: {} for way in WAYS}
    for n in range(args.rounds):
        for way in WAYS:
            for shape, ns in means(sub, way).items():
                seen[way].setdefault(shape, []).append(ns)
            print(f"round {n + 1}: {way} done", file=sys.stderr, flush=True)
    print("| shape | " + " | ".join(f"{w} µs" for w in WAYS) + " | arena / contest | arena with clear / contest |")
    print("| --- |" + " --- |" * (len(WAYS) + 2))
    for shape in seen["contest"]:
        mid = {w: statistics.median(seen[w][shape]) / 1e3 for w in WAYS}
        print(f"| {shape} | " + " | ".join(f"{mid[w]:.2f}" for w in WAYS)
              + f" | {mid[WAYS[0]] / mid['contest']:.4f} | {mid[WAYS[1]] / mid['contest']:.4f} |")


if __name__ == "__main__":
    main()
