"""What makes gemv's arena timing 2-4% faster than the contest's loop? On an H100 the arena stayed 2.0-3.6% faster
with the contest's own 4 GiB randn as its flush (results/h100/cheap_answers_2026-11-26/NOTES.md), and in one process
neither an idle gap, an SM-filling spin, the arena's flush in place of the clear, nor the inputs' pages touched
after the clear moved gemv v12 by more than 0.9% (results/h100/gemv_gap_2026-11-26/NOTES.md). What is left is
where the clear runs and what it leaves in the L2.

This times one gemv version's custom_kernel in this process (a lineage file, trusted: no worker, no sandbox) on one
contest input per benchmark shape, one call per sample between CUDA events, as eval.py does, in the ways below,
interleaved sample by sample, and prints each way's median per shape and its ratio to the contest's way. "Held"
is the arena's hold (harness/hold.py): queued before the start event, released through a host flag.

    contest               4 GiB randn, start event, call, end event
    clear, held           the randn, the hold, start event, call, end event; released at once
    flush, held           a zero write of 4x the L2 in this process, then as "clear, held"
    clear, clean L2       the randn, then a read of 4x the L2 (the L2 left holding clean lines), then as contest
    held, flush elsewhere the hold, start event, call, end event; a second process writes 4x the L2 in its own
                          CUDA context and synchronizes, then the hold is released: the arena's arrangement
    held, clear elsewhere as above with the 4 GiB randn in the second process

Needs a CUDA GPU.   python scripts/gemv_stream_probe.py [--version v12] [--samples 100]
"""
import argparse
import importlib.util
import multiprocessing
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402

from harness.device import flush_bytes  # noqa: E402
from harness.hold import StreamHold  # noqa: E402
from harness.rules import task_rules  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases  # noqa: E402

WAYS = ("contest", "clear, held", "flush, held", "clear, clean L2", "held, flush elsewhere", "held, clear elsewhere")


def elsewhere(conn, clear_bytes: int, flush_size: int):
    """The second process: a clear or a flush in its own CUDA context whenever asked, synchronized, answered."""
    clear = torch.empty(clear_bytes // 4, dtype=torch.float32, device="cuda")
    flush = torch.empty(flush_size // 4, dtype=torch.int32, device="cuda")
    conn.send("ready")
    while (what := conn.recv()) is not None:
        clear.normal_() if what == "clear" else flush.zero_()
        torch.cuda.synchronize()
        conn.send(what)


def load(version: str):
    path = ROOT / "submissions" / "gemv" / f"{version}.py"
    spec = importlib.util.spec_from_file_location(f"gemv_{version}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--version", default="v12")
    parser.add_argument("--samples", type=int, default=100)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    kernel = load(args.version)
    props = torch.cuda.get_device_properties(0)
    clear_bytes = task_rules("gemv").eval.clear_bytes
    flush_size = flush_bytes()
    clear = torch.empty(clear_bytes // 4, dtype=torch.float32, device="cuda")
    flush = torch.empty(flush_size // 4, dtype=torch.int32, device="cuda")
    flag = torch.zeros(1024, dtype=torch.int32).pin_memory()
    hold = StreamHold(flag)
    conn, theirs = multiprocessing.get_context("spawn").Pipe()
    other = multiprocessing.get_context("spawn").Process(target=elsewhere, args=(theirs, clear_bytes, flush_size),
                                                          daemon=True)
    other.start()
    conn.recv()

    def before(way: str):
        if way.startswith("clear"):
            clear.normal_()
        elif way.startswith("flush"):
            flush.zero_()
        if way == "clear, clean L2":
            flush.sum()
        if "held" in way:
            flag[0] = 0
            hold.engage()

    def after(way: str):
        if way.endswith("elsewhere"):
            conn.send(way.split()[1])
            conn.recv()
        if "held" in way:
            flag[0] = 1

    gemv = get_task("gemv")
    print(f"gemv {args.version} on {props.name}, {args.samples} samples a way")
    print("| shape | " + " | ".join(f"{w} µs" for w in WAYS) + " | " + " | ".join(f"{w} / contest" for w in WAYS[1:])
          + " |")
    print("| --- |" + " --- |" * (2 * len(WAYS) - 1))
    for case in cases("gemv", "benchmarks"):
        data = gemv.generate_input(**case.args)
        seen = {way: [] for way in WAYS}
        for n in range(args.samples + 1):  # the first round warms every path, the hold's build included
            for way in WAYS:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                before(way)
                start.record()
                kernel(data)
                end.record()
                after(way)
                torch.cuda.synchronize()
                if n:
                    seen[way].append(start.elapsed_time(end) * 1e3)
        mid = {way: statistics.median(seen[way]) for way in WAYS}
        print(f"| {case.label} | " + " | ".join(f"{mid[w]:.2f}" for w in WAYS) + " | "
              + " | ".join(f"{mid[w] / mid['contest']:.4f}" for w in WAYS[1:]) + " |", flush=True)
    conn.send(None)
    other.join(timeout=30)


if __name__ == "__main__":
    main()
