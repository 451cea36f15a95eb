"""Compile a CUDA submission's source on a machine without a GPU, as load_inline would on Hopper.

    python scripts/compile_check.py group_gemm v28 [--keep DIR]

It imports the file (no GPU needed), writes its CUDA_SRC to a .cu with torch's includes replaced by a small
stand-in for the few host calls the files use (TORCH_CHECK, the current stream and device), and runs nvcc with
-O3, -gencode=arch=compute_90a,code=sm_90a and ptxas' resource report. The kernels compile exactly as in
load_inline; the host side only has to compile. Printed: the compile time, each kernel's registers, stack
frame and spills, every warning, and ptxas' wgmma and setmaxnreg notes (C75xx), which it prints as info, not
as warnings: serialized wgmmas ("Potential Performance Loss ... serialized", C7510-C7515 and kin), an ignored
setmaxnreg (C7508), an injected warpgroup.arrive (C7519, a fence more per site, not serial). The exit code is
nvcc's, or 1 when a kernel spills, has its wgmmas serialized or its setmaxnreg ignored, so a draft is caught
here before it costs device time. Files that use torch's tensor API in their C++ do not compile against the
stand-in; every wgmma-era file does.

Where a cuobjdump is found (PATH, $CUDA_HOME/bin, or the one in Triton's package), the machine code is also
checked for the fragment hazard: a register that a wgmma still in flight reads as its A fragment, written
before the wgmma.wait_group that retires its group. ptxas does not guard this (wgmma reads those registers
while it runs, and the PTX shows no later use), and such a build computes wrong results; a hazard exits 1.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# ptxas' notes on wgmma and setmaxnreg; after a serialization or an ignored setmaxnreg a kernel is not worth timing.
NOTE = re.compile(r"\(C75\d\d\)")
FATAL = re.compile(r"serialized|\(C7508\)")
TORCH_INCLUDE = re.compile(r'^#include <(torch|ATen|c10)/.*>$', re.M)
TORCH_STAND_IN = r"""#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include <stdexcept>
#include <vector>
#define TORCH_CHECK(cond, ...) do { if (!(cond)) throw std::runtime_error("check failed"); } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() do {} while (0)
namespace at { namespace cuda {
inline cudaStream_t getCurrentCUDAStream() { return nullptr; }
inline int current_device() { return 0; }
} }
"""


def kernel_report(stderr: str) -> list:
    """One row per kernel from ptxas' report: mangled name, registers, stack frame, spill stores and loads."""
    rows, name = [], None
    for line in stderr.splitlines():
        found = re.search(r"Compiling entry function '(\w+)'", line)
        if found:
            name = found.group(1)
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if frame and name:
            rows.append([name, "?", *frame.groups()])
        regs = re.search(r"Used (\d+) registers", line)
        if regs and rows and rows[-1][1] == "?":
            rows[-1][1] = regs.group(1)
    return rows


# Instructions whose first register operand is not written.
NOT_WRITING = ("ST", "BRA", "BAR", "RED", "ATOM", "SYNCS", "WARPGROUP", "EXIT", "RET", "CALL", "UTMA", "UBLKCP",
               "NOP", "ISETP", "FSETP", "PLOP3", "USETP", "HGMMA", "DEPBAR", "MEMBAR", "FENCE", "ERRBAR", "CCTL")


def fragment_hazards(sass: str) -> list:
    """Instructions that write a register an unretired wgmma reads as its A fragment, in program order per function.
    A wgmma group ends at the HGMMA carrying gsb0; WARPGROUP.DEPBAR.LE gsb0, N retires all but the N newest."""
    found, groups, open_group = [], [], set()
    for line in sass.splitlines():
        if "Function :" in line:
            groups, open_group = [], set()
        match = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if not match:
            continue
        address, instruction = match.groups()
        body = re.sub(r"^@!?U?P\w+\s+", "", instruction)
        op = body.split()[0]
        operands = [o.strip() for o in body[len(op):].split(",")]
        if op.startswith("HGMMA"):
            if len(operands) > 1 and re.fullmatch(r"R\d+", operands[1]):
                first = int(operands[1][1:])
                open_group |= set(range(first, first + 4))
            if "gsb0" in body:
                groups.append(open_group)
                open_group = set()
            continue
        retire = re.match(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x([0-9a-f]+)", body)
        if retire:
            keep = int(retire.group(1), 16)
            groups = groups[len(groups) - keep:] if keep else []
            continue
        target = re.fullmatch(r"R(\d+)", operands[0]) if operands else None
        if op.startswith(NOT_WRITING) or not target:
            continue
        width = 2 if re.search(r"\.(64|WIDE)\b", op) else 1
        written = set(range(int(target.group(1)), int(target.group(1)) + width))
        if written & set().union(open_group, *groups):
            found.append(f"{address}: {instruction.strip()}")
    return found


def find_cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    candidates = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "cuobjdump")]
    try:
        import triton
        candidates += glob.glob(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"))
    except ImportError:
        pass
    return next((c for c in candidates if os.path.exists(c)), None)


def readable(mangled: str) -> str:
    """A kernel's name without the anonymous namespace and parameter list, through c++filt where it exists."""
    try:
        name = subprocess.run(["c++filt", mangled], capture_output=True, text=True).stdout.strip() or mangled
    except OSError:
        return mangled
    return name.replace("(anonymous namespace)::", "").split("(")[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("version")
    parser.add_argument("--keep", type=Path, help="write the .cu and .o here instead of a temporary folder")
    args = parser.parse_args()
    from harness.submission import import_submission
    module = import_submission(ROOT / "submissions" / args.task / f"{args.version}.py")
    source_text = getattr(module, "CUDA_SRC", None)
    if source_text is None:
        print(f"{args.task} {args.version} has no CUDA_SRC: nothing to compile here")
        return 2
    folder = args.keep or Path(tempfile.mkdtemp(prefix="compile_check_"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "torch_stand_in.h").write_text(TORCH_STAND_IN)
    source = folder / f"{args.task}_{args.version}.cu"
    source.write_text(TORCH_INCLUDE.sub('#include "torch_stand_in.h"', source_text))
    command = ["nvcc", "-c", str(source), "-o", str(source.with_suffix(".o")), "-O3", "-std=c++17",
               "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v"]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    print(f"{args.task} {args.version}: nvcc exit {done.returncode} in {time.monotonic() - start:.1f} s")
    rows = kernel_report(done.stderr)
    for name, regs, stack, spill_stores, spill_loads in rows:
        print(f"  {readable(name):40s} {regs:>4s} regs  stack {stack}  spills {spill_stores}/{spill_loads}")
    lines = done.stderr.splitlines()
    shown = {}  # a message, with its line number and the mangled kernel name taken out -> how many times
    for line in lines:
        if (("warning" in line.lower() or "error" in line.lower()) and "ptxas info" not in line) or NOTE.search(line):
            text = re.sub(r"( in)? around line \d+", "", re.sub(r"'_Z\w+'", "the kernel", line.strip()))
            shown[text] = shown.get(text, 0) + 1
    for text, times in shown.items():
        print("  " + text + (f" ({times} places)" if times > 1 else ""))
    if done.returncode != 0:
        return done.returncode
    hazards = []
    cuobjdump = find_cuobjdump()
    if cuobjdump is None:
        print("  fragment hazards: not checked (no cuobjdump here; Triton's package carries one)")
    else:
        sass = subprocess.run([cuobjdump, "-sass", str(source.with_suffix(".o"))], capture_output=True, text=True).stdout
        hazards = fragment_hazards(sass)
        wgmmas = len(re.findall(r"HGMMA\.\S+ R\d+, R\d+,", sass))
        print(f"  fragment hazards: {len(hazards)} (wgmmas with A from registers: {wgmmas})")
        for hazard in hazards[:8]:
            print("    " + hazard)
    spilled = any(row[3] != "0" or row[4] != "0" for row in rows)
    return 1 if spilled or hazards or any(FATAL.search(line) for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
