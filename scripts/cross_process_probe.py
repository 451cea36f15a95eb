"""Measures the facts the evaluator/worker split rests on, on this machine's GPU (or CPU):

1. Landlock: the kernel's ABI, and whether a process restricted before importing torch can still
   use CUDA (the driver's device files and ioctls) while writes outside its allowed folders fail.
2. CUDA IPC: a tensor allocated inside a private torch.cuda.MemPool, sent to another process
   through torch's own reduction (ForkingPickler), is mapped there; the segment the receiver maps
   holds that allocation alone.
3. Two contexts on one GPU: while the worker's hold kernel fills every SM and polls a flag in
   shared host memory, how long the evaluator's own copy and L2 flush take (time-slicing), and the
   latency from the evaluator's release of the flag to the worker's end event being seen.

    python scripts/cross_process_probe.py [--bytes 1073741824] [--json out.json]
"""
import argparse
import io
import json
import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def landlock_abi() -> int:
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(444, None, 0, 1))


CHILD = r'''
import io, json, mmap, os, sys, time
flag_fd, allowed, forbidden = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = {}
try:
    from landlockpy import AccessFS, Ruleset, Scope
    rs = Ruleset(scoped=Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET)
    read = AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE
    rs.allow_path("/", read)
    everything = AccessFS(0)
    for f in AccessFS:
        everything |= f
    for p in (allowed, "/dev", "/proc"):
        rs.allow_path(p, everything)
    rs.restrict()
    out["landlock"] = "on"
except Exception as exc:
    out["landlock"] = f"off: {type(exc).__name__}: {exc}"
for name, path in (("write_allowed", allowed + "/x"), ("write_forbidden", forbidden + "/probe_should_fail")):
    try:
        with open(path, "w") as f:
            f.write("x")
        out[name] = "written"
        if name == "write_forbidden":
            os.unlink(path)
    except OSError as exc:
        out[name] = f"refused: {exc.strerror}"
import torch
from torch.multiprocessing.reductions import init_reductions
init_reductions()
import pickle
out["cuda"] = torch.cuda.is_available()
line = sys.stdin.buffer.readline()
arena = pickle.loads(bytes.fromhex(line.decode().strip()))
out["arena_sum"] = int(arena[:4096].sum().item()) if arena.is_cuda else None
mm = mmap.mmap(flag_fd, 4096)
flag = torch.frombuffer(mm, dtype=torch.int32, count=2)
rc = torch.cuda.cudart().cudaHostRegister(flag.data_ptr(), 4096, 0)
out["host_register"] = int(rc) if not isinstance(rc, int) else rc
sys.path.insert(0, os.getcwd())
import triton, triton.language as tl
from harness.hold import _hold_kernel, THREADS_PER_SM, WARPS
props = torch.cuda.get_device_properties(0)
programs = props.multi_processor_count * (THREADS_PER_SM // (WARPS * 32))
words = torch.zeros(2, dtype=torch.int32, device="cuda")
x = torch.randn(1 << 20, device="cuda")
for _ in range(3):
    x.mul_(1.0)
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
print(json.dumps({"ready": True}), flush=True)
for rnd in range(int(os.environ.get("ROUNDS", "5"))):
    sys.stdin.buffer.readline()
    words.zero_()
    _hold_kernel[(programs,)](flag, words[0:], words[1:], int(5e9), num_warps=WARPS)
    s.record()
    x.mul_(1.0)
    e.record()
    print(json.dumps({"queued": rnd}), flush=True)
    e.synchronize()
    seen = time.perf_counter_ns()
    print(json.dumps({"done": rnd, "region_ms": s.elapsed_time(e), "timed_out": int(words[1].item()),
                      "seen_ns": seen}), flush=True)
print(json.dumps(out), flush=True)
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=1 << 30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch
    from multiprocessing.reduction import ForkingPickler

    from torch.multiprocessing.reductions import init_reductions
    init_reductions()
    report = {"python": sys.version.split()[0], "torch": torch.__version__, "landlock_abi": landlock_abi(),
              "mempool": hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool")}
    print(json.dumps(report), flush=True)
    if not torch.cuda.is_available():
        print("no GPU: only the Landlock facts above")
        return
    # 2. an arena in a private pool, and what else lives in the evaluator's memory
    private = torch.randint(0, 255, (args.bytes,), dtype=torch.uint8, device="cuda")
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        arena = torch.zeros(args.bytes, dtype=torch.uint8, device="cuda")
    arena[:4096].fill_(1)
    segments = [s for s in torch.cuda.memory_snapshot() if s["address"] <= arena.data_ptr() < s["address"] + s["total_size"]]
    report["arena_segment"] = {"total_size": segments[0]["total_size"], "blocks": len(segments[0]["blocks"]),
                               "allocated_blocks": sum(b["state"] == "active_allocated" for b in segments[0]["blocks"])}
    buf = io.BytesIO()
    ForkingPickler(buf).dump(arena)
    flush = torch.empty(4 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")

    def own_ops():
        t = time.perf_counter_ns()
        arena.copy_(private)
        flush.zero_()
        torch.cuda.synchronize()
        return time.perf_counter_ns() - t

    alone = sorted(own_ops() for _ in range(5))
    report["evaluator_ops_alone_us"] = [a / 1e3 for a in alone]
    fd = os.memfd_create("flag")
    os.ftruncate(fd, 4096)
    mm = mmap.mmap(fd, 4096)
    allowed = Path(os.environ.get("TMPDIR", "/tmp")) / f"probe-allowed-{os.getpid()}"
    allowed.mkdir(exist_ok=True)
    env = {**os.environ, "ROUNDS": "8", "PYTHONDONTWRITEBYTECODE": "1", "TRITON_CACHE_DIR": str(allowed / "triton"),
           "TMPDIR": str(allowed)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(fd), str(allowed), str(ROOT)], cwd=ROOT, env=env,
                             pass_fds=(fd,), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    child.stdin.write(buf.getvalue().hex().encode() + b"\n")
    child.stdin.flush()
    print(child.stdout.readline().decode().strip(), flush=True)
    rounds = []
    for rnd in range(8):
        mm[0:4] = (0).to_bytes(4, "little")
        child.stdin.write(b"go\n")
        child.stdin.flush()
        json.loads(child.stdout.readline())
        t0 = time.perf_counter_ns()
        ops = own_ops()
        t_rel = time.perf_counter_ns()
        mm[0:4] = (1).to_bytes(4, "little")
        done = json.loads(child.stdout.readline())
        t1 = time.perf_counter_ns()
        rounds.append({"evaluator_ops_during_hold_us": ops / 1e3, "release_to_message_us": (t1 - t_rel) / 1e3,
                       "release_to_worker_seen_us": (done["seen_ns"] - t_rel) / 1e3,
                       "region_us": done["region_ms"] * 1e3, "timed_out": done["timed_out"],
                       "witness_minus_region_us": (t1 - t0) / 1e3 - done["region_ms"] * 1e3})
        print(json.dumps(rounds[-1]), flush=True)
    report["rounds"] = rounds
    report["child"] = json.loads(child.stdout.readline())
    child.wait(30)
    print(json.dumps({k: v for k, v in report.items() if k != "rounds"}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
