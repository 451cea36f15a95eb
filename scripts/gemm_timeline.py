"""Per-CTA timeline of a gemm v22-family main kernel (globaltimer stamps), on the contest's inputs back to back.

    python scripts/gemm_timeline.py VERSION|FILE.py SHAPE_INDEX...   (on a GPU; a gemm version or draft with v22's loops)

It writes an instrumented copy to scratch/NAME_timeline.py and imports that. Stamps per CTA: 0 entry,
1 first stage arrived (consumer thread 0), 2-5 main loop of the CTA's 1st-4th segment done, 6 parts added
(stream-K heads), 7 end. Printed per call: the median and max over CTAs of each stamp minus the call's first
entry, then the span of a call and the gap between calls. The stamps go to the fp32 workspace, so shapes that add
into it are refused. gemm_v15_timeline.py stamps v15's kernel with the same helpers and report.
"""
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.rules import task_rules  # noqa: E402
from harness.submission import import_submission, resolve  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases, leaderboards  # noqa: E402

SLOTS = ["entry", "stage0", "loop1", "loop2", "loop3", "loop4", "added", "end"]
STAMP = ('{ uint64_t t_; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_)); '
         'reinterpret_cast<unsigned long long*>(p.ws)[16 + seq * STRIDE + (SLOT)] = t_; }')


def stamp(slot, stride: int = len(SLOTS)) -> str:
    """C++ that stores the global timer in this CTA's slot SLOT (STRIDE slots per CTA, after the ws header)."""
    return STAMP.replace("STRIDE", str(stride)).replace("SLOT", str(slot))


def put(s: str, anchor: str, code: str, after: bool = True) -> str:
    assert s.count(anchor) == 1, (anchor, s.count(anchor))
    return s.replace(anchor, anchor + code if after else code + anchor)


def write_copy(src: str, stem: str) -> Path:
    """The instrumented source as scratch/STEM_timeline.py, its extension renamed so the original's cache stays."""
    src = src.replace('load_inline("nvfp4_gemm_', 'load_inline("timeline_nvfp4_gemm_')
    out = ROOT / "scratch" / f"{stem}_timeline.py"
    out.parent.mkdir(exist_ok=True)
    out.write_text(src)
    return out


def instrument(path: Path) -> Path:
    src = path.read_text()
    src = put(src, "    const int tid = threadIdx.x;\n",
              "    __shared__ unsigned seq_s;\n    if (tid == 0) seq_s = atomicAdd(reinterpret_cast<unsigned*>(p.ws), 1u);\n"
              "    __syncthreads();\n    const unsigned seq = seq_s;\n    if (tid == 0) " + stamp(0) + "\n")
    src = put(src, "    int chunk_count = 0;", " int seg_ = 0;")
    src = put(src, "            bar_wait(full + 8 * stage, (j / STAGES) & 1);\n", "            if (tid == 0 && j == 0) " + stamp(1) + "\n")
    src = put(src, '        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");\n',
              "        if (tid == 0) " + stamp("2 + min(seg_, 3)") + "\n        ++seg_;\n")
    if "add_parts(d, p, t, tid);\n" in src:
        src = put(src, "add_parts(d, p, t, tid);\n", "        if (STREAM && steps < p.steps && tid == 0) " + stamp(6) + "\n")
    src = put(src, '    if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // before shared memory goes\n',
              "    if (tid == 0) " + stamp(7) + "\n", after=False)
    return write_copy(src, path.stem)


def report(mod, label: str, index: int, slots: list[str], stride: int) -> None:
    """Run benchmark shape INDEX's contest inputs back to back through the instrumented module and print, per call,
    the median and max over CTAs of each stamp (the last slot is the CTA's end), the call's span and the gap between
    calls. Slots a CTA never stamps show as nan."""
    rules = task_rules("gemm")
    case = cases("gemm", "benchmarks")[index]
    gen = get_task("gemm").generate_input
    inputs = [gen(**{**case.args, "seed": s}) for s in rules.input_seeds(case.args["seed"])]
    mod.custom_kernel(inputs[0])
    torch.cuda.synchronize()
    key = next(k for k in mod._scratch if k[1:] == (case.args["m"], case.args["n"], case.args["k"] // 2))
    ws = mod._scratch[key][1]
    ws.zero_()
    torch.cuda.synchronize()
    torch.cuda._sleep(20_000_000)
    for data in inputs:
        mod.custom_kernel(data)
    torch.cuda.synchronize()
    flat = ws.view(-1)
    raw = flat.view(torch.int64).cpu().numpy()
    ctas = int(flat.view(torch.int32)[0].item())
    t = raw[16: 16 + ctas * stride].reshape(ctas, stride)[:, :len(slots)].astype(np.float64)
    per_call = ctas // len(inputs)
    print(f"{label} #{index} {case.spec}: {len(inputs)} calls, {per_call} CTAs per call; µs from the call's first entry")
    print("  " + " ".join(f"{s:>7s}" for s in slots))
    ends = []
    for c in range(len(inputs)):
        block = t[c * per_call:(c + 1) * per_call]
        t0 = block[:, 0].min()
        rel = np.where(block > 0, (block - t0) / 1e3, np.nan)
        ends.append((t0, block[:, -1].max()))
        if c in (1, 2, len(inputs) - 2):
            print(f"  call {c} median " + " ".join(f"{v:7.2f}" for v in np.nanmedian(rel, axis=0)))
            print(f"  call {c} max    " + " ".join(f"{v:7.2f}" for v in np.nanmax(rel, axis=0)))
    spans = [(e - s) / 1e3 for s, e in ends]
    gaps = [(ends[i + 1][0] - ends[i][1]) / 1e3 for i in range(len(ends) - 1)]
    print(f"  span per call median {np.median(spans):.2f} µs, gap between calls median {np.median(gaps):.2f} µs "
          f"(min {min(gaps):.2f}, max {max(gaps):.2f})")


def main() -> None:
    path = resolve(sys.argv[1], "gemm", leaderboards()).path
    mod = import_submission(instrument(path))
    for index in [int(a) for a in sys.argv[2:]]:
        report(mod, path.stem, index, SLOTS, len(SLOTS))


if __name__ == "__main__":
    main()
