"""Per-CTA timeline of gemm v15's main kernel (globaltimer stamps), on the contest's distinct inputs back to back.

python scripts/gemm_v15_timeline.py [shape indices...]  (on a GPU; carry nothing: it writes the instrumented copy to
scratch/gemm_v15_timeline.py and imports that)
Stamps per CTA: 0 entry, 1 A decoded (after __syncthreads), 2 producer past the grid barrier, 3 first stage
arrived (consumer thread 0), 4 main loop done, 5 past the first cluster barrier, 6 past the second (parts
arrived), 7 parts added, 8 last store issued, 9 end. Printed: per call, the median
and max over CTAs of each stamp minus the call's first entry, the call's span, and the gap to the next call.
The stamps go to the fp32 workspace, which the cluster shapes (indices 0 and 2) leave unused; index 1 adds into
it, so it is not offered.
"""
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from harness.rules import task_rules  # noqa: E402
from harness.submission import import_submission  # noqa: E402
from reference import get_task  # noqa: E402
from reference.cases import cases  # noqa: E402

src = (ROOT / "submissions/gemm/v15.py").read_text()
STAMP = ('{ uint64_t t_; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_)); '
         'reinterpret_cast<unsigned long long*>(p.ws)[16 + seq * 16 + SLOT] = t_; }')
def stamp(slot):
    return STAMP.replace("SLOT", str(slot))
def put(s, anchor, code, after=True, count=1):
    assert s.count(anchor) == count, (anchor, s.count(anchor))
    return s.replace(anchor, anchor + code if after else code + anchor)
src = put(src, "    const int tid = threadIdx.x;\n",
          "    __shared__ unsigned seq_s;\n    if (tid == 0) seq_s = atomicAdd(reinterpret_cast<unsigned*>(p.ws), 1u);\n"
          "    __syncthreads();\n    const unsigned seq = seq_s;\n    if (tid == 0) " + stamp(0) + "\n")
src = src.replace("    asm volatile(\"fence.proxy.async.global;\" ::: \"memory\");\n    __syncthreads();\n",
                  "    asm volatile(\"fence.proxy.async.global;\" ::: \"memory\");\n    __syncthreads();\n    if (tid == 0) " + stamp(1) + "\n", 1)
src = put(src, "                    grid_wait(p.sync, gen);\n", "                    " + stamp(2) + "\n")
src = put(src, "            bar_wait(full + 8 * stage, (j / STAGES) & 1);\n", "            if (tid == 0 && i == 0) " + stamp(3) + "\n")
src = put(src, '        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");\n', "        if (tid == 0) " + stamp(4) + "\n")
src = put(src, "            cluster_sync();  // every slice is past its main loop: all rings are free\n", "            if (tid == 0) " + stamp(5) + "\n")
src = put(src, "            cluster_sync();  // every part has arrived\n", "            if (tid == 0) " + stamp(6) + "\n")
src = put(src, "        // Each warpgroup stages its 64 columns", "        if (tid == 0) " + stamp(7) + "\n", after=False)
src = put(src, '    if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // before shared memory goes\n',
          "    if (tid == 0) " + stamp(9) + "\n")
src = put(src, '    if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // before shared memory goes\n',
          "    if (tid == 0) " + stamp(8) + "\n", after=False)
src = src.replace("nvfp4_gemm_v15", "nvfp4_gemm_v15_timeline")
path = ROOT / "scratch" / "gemm_v15_timeline.py"
path.parent.mkdir(exist_ok=True)
path.write_text(src)

mod = import_submission(path)
rules = task_rules("gemm")
for index in [int(a) for a in sys.argv[1:]] or [2, 0]:
    case = cases("gemm", "benchmarks")[index]
    gen = get_task("gemm").generate_input
    inputs = [gen(**{**case.args, "seed": s}) for s in rules.input_seeds(case.args["seed"])]
    mod.custom_kernel(inputs[0])
    torch.cuda.synchronize()
    key = next(iter(k for k in mod._scratch if k[1:] == (case.args["m"], case.args["n"], case.args["k"] // 2)))
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
    t = raw[16: 16 + ctas * 16].reshape(ctas, 16)
    per_call = ctas // len(inputs)
    print(f"gemm v15 #{index} {case.spec}: {len(inputs)} calls, {per_call} CTAs per call (stamps in µs from the call's first entry)")
    ends = []
    for c in range(len(inputs)):
        block = t[c * per_call:(c + 1) * per_call]
        t0 = block[:, 0].min()
        rel = (block - t0) / 1e3
        ends.append((t0, block[:, 9].max()))
        if c in (1, 2, len(inputs) - 2):
            med = np.median(rel, axis=0)
            mx = rel.max(axis=0)
            print(f"  call {c}: median " + " ".join(f"{v:6.2f}" for v in med[:10]) + " | max " + " ".join(f"{v:6.2f}" for v in mx[:10]))
    spans = [(e - s) / 1e3 for s, e in ends]
    gaps = [(ends[i + 1][0] - ends[i][1]) / 1e3 for i in range(len(ends) - 1)]
    print(f"  span per call median {np.median(spans):.2f} µs, gap between calls median {np.median(gaps):.2f} µs "
          f"(min {min(gaps):.2f}, max {max(gaps):.2f})")
