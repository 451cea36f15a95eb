"""gemv's floor under v11's structure: v11 timed beside two timing-only probes made from it, calls back to back.

    python scripts/gemv_floor_probe.py              # on a GPU: median µs per benchmark shape
    python scripts/gemv_floor_probe.py --write DIR  # only write the probe files (e.g. for scripts/device_ncu.sh)

The probes compute wrong results on purpose; never submit them.
- nodec: v11 with each chunk's two block dot products and its scale conversion replaced by an XOR of the words it
  loaded (A, its scales) and two words of the decoded vector. Same loads, same vector decode into shared memory and
  the same barrier; A is not decoded.
- stream: one kernel that reads A's and its scales' bytes front to back, 64 bytes per thread, and nothing else.
Timing (not the arena's): 10 inputs cycled, 50 calls between two CUDA events after one flush (a zero_() of 256 MiB),
6 rounds with the order reversed every other round, median per file. The arena's flush before every call adds the
write-back of its dirty lines (3-4 µs on shape 0, results/h200/gemv_l2_hint_probe_2026-11-24.txt) to every file alike.
"""
import os
import statistics
import sys
import tempfile
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
V11 = ROOT / "submissions" / "gemv" / "v11.py"

V11_DOT = """                const float2 sa = e4m3x2(s[u][r]);
                acc[r] = fmaf(float(block_idot(x[u][r].x, x[u][r].y, B0)), sa.x * t.x, acc[r]);
                acc[r] = fmaf(float(block_idot(x[u][r].z, x[u][r].w, B1)), sa.y * t.y, acc[r]);"""
NODEC_DOT = ("                acc[r] += float((x[u][r].x ^ x[u][r].y ^ x[u][r].z ^ x[u][r].w ^ s[u][r] ^ B0.x ^ B1.y)"
             " & 0xff) * t.x;")

STREAM = r'''"""Timing-only probe (wrong results): reads A's and its scales' bytes front to back and nothing else."""
import torch
from torch.utils.cpp_extension import load_inline
from task import input_t, output_t

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

// Blocks [0, blocks of A) read A, the rest read the scales; 4 x 16 bytes per thread, 256 threads per block.
__global__ void stream(const uint4* pa, long long na, const uint4* ps, long long ns, unsigned* sink) {
    const long long blocks_a = (na + 1023) / 1024;
    const bool on_a = blockIdx.x < blocks_a;
    const uint4* p = on_a ? pa : ps;
    const long long n16 = on_a ? na : ns;
    const long long base = (long long)(on_a ? blockIdx.x : blockIdx.x - blocks_a) * blockDim.x * 4 + threadIdx.x;
    uint4 x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const long long i = base + u * blockDim.x;
        if (i < n16)
            asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                         : "=r"(x[u].x), "=r"(x[u].y), "=r"(x[u].z), "=r"(x[u].w) : "l"(p + i));
        else
            x[u] = make_uint4(0, 0, 0, 0);
    }
    unsigned v = 0;
#pragma unroll
    for (int u = 0; u < 4; ++u) v ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
    if (v == 0x9E3779B9u) sink[0] = v;  // keeps the loads; practically never taken
}

void run(torch::Tensor a, torch::Tensor sfa, torch::Tensor c) {
    const long long na = a.numel() * a.element_size() / 16, ns = sfa.numel() * sfa.element_size() / 16;
    stream<<<(na + 1023) / 1024 + (ns + 1023) / 1024, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        reinterpret_cast<const uint4*>(a.data_ptr()), na, reinterpret_cast<const uint4*>(sfa.data_ptr()), ns,
        reinterpret_cast<unsigned*>(c.data_ptr()));
}
"""
CPP_SRC = "void run(torch::Tensor a, torch::Tensor sfa, torch::Tensor c);"
_module = None


def custom_kernel(data: input_t) -> output_t:
    global _module
    if _module is None:
        _module = load_inline("nvfp4_gemv_probe_stream", CPP_SRC, cuda_sources=CUDA_SRC, functions=["run"],
                              extra_cuda_cflags=["-O3"], verbose=False)
    a, b, sfa, sfb, _, _, c = data
    _module.run(a, sfa, c)
    return c
'''


def nodec_source() -> str:
    """v11's source with A's decode and dot products taken out of the loop (the loads stay)."""
    src = V11.read_text()
    if src.count(V11_DOT) != 1 or src.count('"nvfp4_gemv_v11"') != 1:
        raise SystemExit(f"{V11} no longer has the lines this probe replaces")
    doc = '"""Timing-only probe (wrong results): gemv v11 without A\'s decode (scripts/gemv_floor_probe.py)."""\n'
    body = src[src.index("import torch"):]
    return doc + body.replace(V11_DOT, NODEC_DOT).replace('"nvfp4_gemv_v11"', '"nvfp4_gemv_probe_nodec"')


def write_probes(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / "probe_nodec.py", directory / "probe_stream.py"]
    paths[0].write_text(nodec_source())
    paths[1].write_text(STREAM)
    return paths


def time_back_to_back(files: list[Path]) -> None:
    import torch
    sys.path.insert(0, str(ROOT))
    from harness.device import describe
    from harness.submission import import_submission
    from reference import get_task
    from reference.cases import cases

    d = describe()
    click.echo(f"# {d['name']}, driver {d['driver']}, torch {d['torch']}, SM clock {d['clocks'].get('sm_mhz')} "
               f"(max {d['clocks'].get('max_sm_mhz')}), tree {os.environ.get('NVFP4_ARENA_COMMIT', 'unknown')}; "
               "back-to-back timing (this script's docstring)")
    gemv = get_task("gemv")
    flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")
    kernels = [(f.stem, import_submission(f).custom_kernel) for f in files]
    for index, case in enumerate(cases("gemv", "benchmarks")):
        inputs = [gemv.generate_input(**{**case.args, "seed": case.args["seed"] + 42 * i}) for i in range(10)]
        for _, kernel in kernels:
            for x in inputs:
                kernel(x)
        times = {name: [] for name, _ in kernels}
        for r in range(6):
            for name, kernel in (kernels if r % 2 == 0 else kernels[::-1]):
                flush.zero_()
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(5):
                    for x in inputs:
                        kernel(x)
                end.record()
                end.synchronize()
                times[name].append(start.elapsed_time(end) * 1000 / 50)
        for name, ts in times.items():
            click.echo(f"gemv shape {index} {name:12s} median {statistics.median(ts):6.2f} µs  min {min(ts):6.2f}")


@click.command()
@click.option("--write", "write_dir", type=click.Path(path_type=Path), default=None,
              help="Only write probe_nodec.py and probe_stream.py into this directory.")
def main(write_dir):
    if write_dir is not None:
        for path in write_probes(write_dir):
            click.echo(path)
        return
    with tempfile.TemporaryDirectory() as tmp:
        time_back_to_back([V11, *write_probes(Path(tmp))])


if __name__ == "__main__":
    main()
