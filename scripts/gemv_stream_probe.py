"""What makes gemv's arena timing 2-4% faster than the contest's loop, if not the kind of clear? On an H100 at
adbc974 the arena stayed 2.0-3.6% faster with the contest's own 4 GiB randn as its flush
(results/h100/cheap_answers_2026-11-26/NOTES.md). What still differs is what the GPU does between the clear and the
start event: under contest timing the clear runs in the same stream right before it; under the arena the flush
runs in the evaluator's process, which synchronizes and then releases a hold kernel that fills every SM.

This times one gemv version's custom_kernel in this process (a lineage file, trusted: no worker, no sandbox) on one
contest input per benchmark shape, one call per sample between CUDA events, as eval.py does, in five ways
interleaved sample by sample, and prints each way's median per shape and its ratio to the contest's way:

    contest              4 GiB randn, start event, call, end event
    clear, idle          the randn, then the stream idles (torch.cuda._sleep) for --gap-us, then as above
    clear, SMs held      the randn, then a kernel that fills every SM spins for --gap-us, then as above
    flush                a zero write of 4x the L2, then as above
    flush, SMs held      the zero write, then the spinning kernel, then as above

Needs a CUDA GPU.   python scripts/gemv_stream_probe.py [--version v12] [--samples 100] [--gap-us 100]
"""
import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402

try:
    import triton
    import triton.language as tl
except ImportError:
    sys.exit("needs a CUDA GPU and Triton")

from harness.device import FLUSH_L2_MULTIPLE  # noqa: E402
from harness.rules import task_rules  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases  # noqa: E402

WAYS = ("contest", "clear, idle", "clear, SMs held", "flush", "flush, SMs held")


@triton.jit
def _spin(ns):
    start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
    now = start
    while now - start < ns:
        now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


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
    parser.add_argument("--gap-us", type=float, default=100.0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    kernel = load(args.version)
    props = torch.cuda.get_device_properties(0)
    clear = torch.empty(task_rules("gemv").eval.clear_bytes // 4, dtype=torch.float32, device="cuda")
    flush = torch.empty(FLUSH_L2_MULTIPLE * props.L2_cache_size // 4, dtype=torch.int32, device="cuda")
    programs = props.multi_processor_count * 2
    gap_ns = int(args.gap_us * 1e3)
    gap_cycles = int(args.gap_us * props.clock_rate / 1e3)  # clock_rate is in kHz

    def before(way: str):
        if way.startswith("flush"):
            flush.zero_()
        else:
            clear.normal_()
        if way.endswith("idle"):
            torch.cuda._sleep(gap_cycles)
        elif way.endswith("held"):
            _spin[(programs,)](gap_ns, num_warps=32)

    gemv = get_task("gemv")
    print(f"gemv {args.version} on {props.name}, {args.samples} samples a way, gap {args.gap_us:g} µs")
    print("| shape | " + " | ".join(f"{w} µs" for w in WAYS) + " | " + " | ".join(f"{w} / contest" for w in WAYS[1:])
          + " |")
    print("| --- |" + " --- |" * (2 * len(WAYS) - 1))
    for case in cases("gemv", "benchmarks"):
        data = gemv.generate_input(**case.args)
        for way in WAYS:  # warm every path, the spin kernel's build included
            before(way)
            kernel(data)
        torch.cuda.synchronize()
        seen = {way: [] for way in WAYS}
        for _ in range(args.samples):
            for way in WAYS:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                before(way)
                start.record()
                kernel(data)
                end.record()
                torch.cuda.synchronize()
                seen[way].append(start.elapsed_time(end) * 1e3)
        mid = {way: statistics.median(seen[way]) for way in WAYS}
        print(f"| {case.label} | " + " | ".join(f"{mid[w]:.2f}" for w in WAYS) + " | "
              + " | ".join(f"{mid[w] / mid['contest']:.4f}" for w in WAYS[1:]) + " |", flush=True)


if __name__ == "__main__":
    main()
