"""Compile a CUDA submission's source on a machine without a GPU, as load_inline would on Hopper.

    python scripts/compile_check.py group_gemm v28 [--keep DIR]
    python scripts/compile_check.py gemm scratch/draft.py

It imports the file (no GPU needed), writes its CUDA_SRC to a .cu with torch's includes replaced by a small
stand-in for the few host calls the files use (TORCH_CHECK, the current stream and device), and runs nvcc with
the flags torch's extension builder gives CUDA sources (its common nvcc flags, its C++ standard) plus the -O3
and -gencode=arch=compute_90a,code=sm_90a that the lineage files pass, and ptxas' resource report. The host side
only has to compile. Printed: the compile time, each kernel's registers, stack
frame and spills, every warning, and ptxas' wgmma and setmaxnreg notes (C75xx), which it prints as info, not
as warnings: serialized wgmmas ("Potential Performance Loss ... serialized", C7510-C7515 and kin), an ignored
setmaxnreg (C7508), an injected warpgroup.arrive (C7519, a fence more per site, not serial). The exit code is
nvcc's, or 1 when a kernel spills, has its wgmmas serialized or its setmaxnreg ignored, so a draft is caught
here before it costs device time. Files that use torch's tensor API in their C++ do not compile against the
stand-in; every wgmma-era file does.

The machine code is then checked for the fragment hazard (cuobjdump from PATH, $CUDA_HOME/bin or Triton's
package; without one the check exits 3 unless --no-sass is given): a register that a register-A wgmma still in
flight reads, its A fragment or its accumulators, written before the wgmma.wait_group that retires its group.
ptxas does not guard the fragments (the wgmma reads them while it runs, and the PTX shows no later use), and a
build with such a write computed wrong results; a hazard exits 1.
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


# Instructions whose first register operand, if any, is read, not written.
NOT_WRITING = ("ST", "BRA", "BRX", "BAR", "RED", "EXIT", "RET", "CALL", "WARPGROUP", "WARPSYNC", "BSSY", "BSYNC",
               "UTMA", "UBLKCP", "NOP", "ISETP", "FSETP", "DSETP", "HSETP", "PLOP3", "USETP", "HGMMA", "DEPBAR",
               "MEMBAR", "FENCE", "ERRBAR", "CCTL")


def registers_written(op: str, operands: list) -> set:
    """The general registers an instruction writes: its first register operand (after a predicate output for SHFL
    and LOP3), as wide as the instruction's data."""
    if op.startswith(NOT_WRITING) or not operands:
        return set()
    first = operands[1] if op.startswith(("SHFL", "LOP3")) and re.fullmatch(r"!?U?P(T|\d+)", operands[0]) else operands[0]
    target = re.fullmatch(r"R(\d+)", first.split(".")[0])
    if not target:
        return set()
    if re.search(r"\.128\b|LDSM.*\.x4|^HMMA", op):
        width = 4
    elif re.search(r"\.(64|WIDE|F64|S64|U64)\b|LDSM.*\.x2|^D(ADD|MUL|FMA|MNMX)", op):
        width = 2
    else:
        width = 1
    return set(range(int(target.group(1)), int(target.group(1)) + width))


def wgmma_registers(body: str) -> set:
    """The registers a register-A HGMMA reads while it runs: its A fragment and its accumulators."""
    shape = re.search(r"HGMMA\.64x(\d+)x\d+\.(F32|F16)", body)
    operands = [o.strip() for o in body.split(None, 1)[1].split(",")]
    busy = set()
    if len(operands) > 1 and re.fullmatch(r"R\d+", operands[1]):
        busy |= set(range(int(operands[1][1:]), int(operands[1][1:]) + 4))
    if shape and re.fullmatch(r"R\d+", operands[0]):
        n = int(shape.group(1)) // (2 if shape.group(2) == "F32" else 4)
        busy |= set(range(int(operands[0][1:]), int(operands[0][1:]) + n))
    return busy


def fragment_hazards(sass: str) -> list:
    """Instructions that write a register an unretired register-A wgmma reads (its A fragment or accumulators), per
    function. A wgmma group ends at the HGMMA carrying gsb0; WARPGROUP.DEPBAR.LE gsb0, N retires all but the N newest.
    Code is read in address order, and a backward branch carries its state to its target, again until nothing new
    arrives: a loop whose last block's group is still running at the top is seen as such."""
    found = []
    for function in re.split(r"\n\s*Function : ", sass):
        code = []
        for line in function.splitlines():
            match = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
            if match:
                address, instruction = match.groups()
                body = re.sub(r"^@!?U?P\w+\s+", "", instruction)
                code.append((int(address, 16), instruction.strip(), body))
        at = {address: i for i, (address, _, _) in enumerate(code)}
        entry = {}  # instruction index -> (groups, open group) carried in by a backward branch
        hazards, pending = set(), [0]
        while pending:
            start = pending.pop()
            groups, busy = entry.get(start, ([], set()))
            groups = [set(g) for g in groups]
            for i in range(start, len(code)):
                if i in entry and i != start:
                    carried, carried_busy = entry[i]
                    groups = merge(groups, carried)
                    busy = busy | carried_busy
                address, instruction, body = code[i]
                op = body.split()[0]
                operands = [o.strip() for o in body[len(op):].split(",")] if body[len(op):].strip() else []
                if op.startswith("HGMMA"):
                    busy = busy | wgmma_registers(body)
                    if "gsb0" in body:
                        groups.append(busy)
                        busy = set()
                    continue
                retire = re.match(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x([0-9a-f]+)", body)
                if retire:
                    keep = int(retire.group(1), 16)
                    groups = groups[len(groups) - keep:] if keep else []
                    continue
                if registers_written(op, operands) & set().union(busy, *groups):
                    hazards.add((address, instruction))
                branch = re.match(r"BRA (?:`\(\.L_x_\d+\)|0x([0-9a-f]+))", body)
                target = at.get(int(branch.group(1), 16)) if branch and branch.group(1) else None
                if target is not None and target <= i:
                    old_groups, old_busy = entry.get(target, ([], set()))
                    new = (merge(old_groups, groups), old_busy | busy)
                    if new != (old_groups, old_busy):
                        entry[target] = new
                        pending.append(target)
        found += [f"{address:04x}: {instruction}" for address, instruction in sorted(hazards)]
    return found


def merge(a: list, b: list) -> list:
    """Two lists of running wgmma groups, newest last, as one that holds whatever either holds, group by group."""
    a, b = [set()] * (len(b) - len(a)) + list(a), [set()] * (len(a) - len(b)) + list(b)
    return [x | y for x, y in zip(a, b)]


def torch_cuda_flags() -> list:
    """The flags torch's extension builder gives every CUDA source: its common nvcc flags and its C++ standard."""
    import inspect

    from torch.utils import cpp_extension
    standard = re.search(r"-std=c\+\+\d+", inspect.getsource(cpp_extension))
    return list(cpp_extension.COMMON_NVCC_FLAGS) + ([standard.group(0)] if standard else [])


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
    parser.add_argument("version", help="a version of the task's lineage (v22), or the path of a draft file (.py)")
    parser.add_argument("--keep", type=Path, help="write the .cu and .o here instead of a temporary folder")
    parser.add_argument("--no-sass", action="store_true", help="skip the machine-code check (no cuobjdump here)")
    args = parser.parse_args()
    from harness.submission import SubmissionError, import_submission, resolve
    from reference.cases import leaderboards
    try:
        submission = resolve(args.version, args.task, leaderboards())
    except SubmissionError as error:
        print(error)
        return 2
    module = import_submission(submission.path)
    args.version = submission.version
    source_text = getattr(module, "CUDA_SRC", None)
    if source_text is None:
        print(f"{args.task} {args.version} has no CUDA_SRC: nothing to compile here")
        return 2
    folder = args.keep or Path(tempfile.mkdtemp(prefix="compile_check_"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "torch_stand_in.h").write_text(TORCH_STAND_IN)
    source = folder / f"{args.task}_{args.version}.cu"
    source.write_text(TORCH_INCLUDE.sub('#include "torch_stand_in.h"', source_text))
    command = ["nvcc", "-c", str(source), "-o", str(source.with_suffix(".o")), *torch_cuda_flags(), "-O3",
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
    cuobjdump = None if args.no_sass else find_cuobjdump()
    if args.no_sass:
        print("  fragment hazards: not checked (--no-sass)")
    elif cuobjdump is None:
        print("  fragment hazards: not checked: no cuobjdump here (Triton's package carries one); --no-sass to skip")
        return 3
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
