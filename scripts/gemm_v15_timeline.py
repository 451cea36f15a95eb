"""Per-CTA timeline of gemm v15's main kernel (globaltimer stamps), on the contest's distinct inputs back to back.

python scripts/gemm_v15_timeline.py [shape indices...]  (on a GPU; carry nothing: it writes the instrumented copy to
scratch/v15_timeline.py and imports that)
Stamps per CTA: 0 entry, 1 A decoded (after __syncthreads), 2 producer past the grid barrier, 3 first stage
arrived (consumer thread 0), 4 main loop done, 5 past the first cluster barrier, 6 past the second (parts
arrived), 7 parts added, 8 last store issued, 9 end. Printed as gemm_timeline.py prints its own stamps.
The stamps go to the fp32 workspace, which the cluster shapes (indices 0 and 2) leave unused; index 1 adds into
it, so it is not offered.
"""
import sys

from gemm_timeline import ROOT, put, report, stamp, write_copy  # also puts the repository on sys.path
from harness.submission import import_submission  # noqa: E402

SLOTS = ["entry", "decoded", "barrier", "stage0", "loop", "cluster1", "cluster2", "added", "stored", "end"]
STRIDE = 16  # slots per CTA in the workspace


def instrument() -> str:
    src = (ROOT / "submissions/gemm/v15.py").read_text()
    src = put(src, "    const int tid = threadIdx.x;\n",
              "    __shared__ unsigned seq_s;\n    if (tid == 0) seq_s = atomicAdd(reinterpret_cast<unsigned*>(p.ws), 1u);\n"
              "    __syncthreads();\n    const unsigned seq = seq_s;\n    if (tid == 0) " + stamp(0, STRIDE) + "\n")
    src = src.replace("    asm volatile(\"fence.proxy.async.global;\" ::: \"memory\");\n    __syncthreads();\n",
                      "    asm volatile(\"fence.proxy.async.global;\" ::: \"memory\");\n    __syncthreads();\n    if (tid == 0) "
                      + stamp(1, STRIDE) + "\n", 1)
    src = put(src, "                    grid_wait(p.sync, gen);\n", "                    " + stamp(2, STRIDE) + "\n")
    src = put(src, "            bar_wait(full + 8 * stage, (j / STAGES) & 1);\n",
              "            if (tid == 0 && i == 0) " + stamp(3, STRIDE) + "\n")
    src = put(src, '        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");\n',
              "        if (tid == 0) " + stamp(4, STRIDE) + "\n")
    src = put(src, "            cluster_sync();  // every slice is past its main loop: all rings are free\n",
              "            if (tid == 0) " + stamp(5, STRIDE) + "\n")
    src = put(src, "            cluster_sync();  // every part has arrived\n", "            if (tid == 0) " + stamp(6, STRIDE) + "\n")
    src = put(src, "        // Each warpgroup stages its 64 columns", "        if (tid == 0) " + stamp(7, STRIDE) + "\n", after=False)
    src = put(src, '    if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // before shared memory goes\n',
              "    if (tid == 0) " + stamp(9, STRIDE) + "\n")
    src = put(src, '    if (tid % 128 == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // before shared memory goes\n',
              "    if (tid == 0) " + stamp(8, STRIDE) + "\n", after=False)
    return src


if __name__ == "__main__":
    mod = import_submission(write_copy(instrument(), "v15"))
    for index in [int(a) for a in sys.argv[1:]] or [2, 0]:
        report(mod, "gemm v15", index, SLOTS, STRIDE)
