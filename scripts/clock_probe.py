"""Which clock can the evaluator own? Two processes on one GPU, arranged as the arena runs them, and the candidate
ways for the evaluator's CUDA context to time the worker's calls itself.

The "evaluator" (this process) and a "worker" (a spawned child) share int32 words in the evaluator's device memory
(CUDA IPC). In the ways named `clock*` the worker's stream waits for "go" (cuStreamWaitValue32), runs its work and
writes "done" (cuStreamWriteValue32); the evaluator's stream records an event and a %globaltimer stamp, writes "go",
waits for "done", and records again. The worker also times its work with its own events and stamps, so each sample
gives both clocks and, through the GPU's one global timer, the latency from "go" to the worker and from "done" back.

    clock         evaluator: flush, stamp, event, go, wait done, event, stamp; worker: wait go, work, done
    clock+refill  as clock, the worker's L2 refill (a randn of 4x the L2 in its context) after go, before its event
    clock+fill    as clock, the worker's refill a fill of 4x the L2 of the evaluator's memory with the sample's number
    clock2        evaluator: flush, go1, wait refilled, stamp, event, go2, wait done, event, stamp; worker: wait go1,
                  refill, refilled, wait go2, work, done (the refill outside the evaluator's window)
    hold          today's arena: the worker queues the hold, its refill and its events; the evaluator flushes and
                  releases the hold through a host page
    contest       the worker alone: the contest's clear (a 4 GiB randn), its events around the work

Work: nothing, spins of 10 µs to 1 ms (torch.cuda._sleep), a 1 GiB copy, 50 fp16 matmuls of gemm's small shape,
gemv v12 on each gemv benchmark shape, and a "tail": a spin on the worker's main stream before "done" while a second
stream of its context spins longer, with the evaluator recording an event and a stamp right after "go" too (does its
context run while the worker's is busy?).

Needs a CUDA GPU and Triton.  python scripts/clock_probe.py [--samples 50] [--jsonl FILE]
"""
import argparse
import ctypes
import faulthandler
import importlib.util
import json
import mmap
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

FLAG_PATH = "/dev/shm/nvfp4_clock_probe_flag"
HOST_PATH = "/dev/shm/nvfp4_clock_probe_words"  # [gate release, gate spinning, done, seen]: host words of round two
RELEASE, SPINNING, HOST_DONE, SEEN = 0, 1, 2, 3
CYCLES_PER_US = 1980  # the H200's and H100's SM clock, MHz: spins are sized by it, and timed anyway
GO, DONE, REFILLED, GO2 = 0, 1, 2, 3
WAIT_GEQ = 0


def driver_ops():
    lib = ctypes.CDLL("libcuda.so.1")
    ops = []
    for name in ("cuStreamWaitValue32", "cuStreamWriteValue32"):
        fn = getattr(lib, name + "_v2", None) or getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        fn.restype = ctypes.c_int
        ops.append(fn)
    return ops


class Words:
    """int32 words in device memory, waited for and written by a stream through the driver."""

    def __init__(self, tensor):
        self.tensor = tensor
        self._wait, self._write = driver_ops()

    def wait(self, index: int, value: int, stream=None):
        stream = stream or torch.cuda.current_stream()
        rc = self._wait(stream.cuda_stream, self.tensor.data_ptr() + 4 * index, value, WAIT_GEQ)
        if rc:
            raise RuntimeError(f"cuStreamWaitValue32 returned {rc}")

    def write_at(self, address: int, value: int, stream=None):
        stream = stream or torch.cuda.current_stream()
        rc = self._write(stream.cuda_stream, address, value, 0)
        if rc:
            raise RuntimeError(f"cuStreamWriteValue32 returned {rc}")

    def write(self, index: int, value: int, stream=None):
        stream = stream or torch.cuda.current_stream()
        rc = self._write(stream.cuda_stream, self.tensor.data_ptr() + 4 * index, value, 0)
        if rc:
            raise RuntimeError(f"cuStreamWriteValue32 returned {rc}")


def stamper():
    import triton
    import triton.language as tl

    @triton.jit
    def _stamp(out):
        t = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        tl.store(out, t)

    def stamp(buffer, i):
        _stamp[(1,)](buffer[i:])
    return stamp


def gpu_kernels():
    """The Triton kernels of the second round: the evaluator's gate, a spinner that records when its context was off
    the GPU, a copy through the SMs, and a store of a word and a stamp into host memory."""
    import triton
    import triton.language as tl

    @triton.jit
    def _now():
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)

    @triton.jit(do_not_specialize=["value"])  # a new specialization would load a module, which waits for the stream
    def _gate(flag, status, value, stamps, device_word):
        if tl.program_id(0) == 0:
            tl.store(status, value)
            released = tl.load(flag, volatile=True)
            while released < value:
                released = tl.load(flag, volatile=True)
            tl.store(stamps, _now())
            tl.store(device_word, value)
        else:
            go = tl.load(device_word, volatile=True)
            while go < value:
                go = tl.load(device_word, volatile=True)

    @triton.jit(do_not_specialize=["duration_ns"])
    def _spin(gaps, duration_ns, GAPS: tl.constexpr):
        start = _now()
        prev = start
        found = 0
        while prev - start < duration_ns:
            t = _now()
            if (t - prev > 3000) & (found < GAPS):
                tl.store(gaps + 2 * found, prev)
                tl.store(gaps + 2 * found + 1, t)
                found += 1
            prev = t
        tl.store(gaps + 2 * GAPS, start)
        tl.store(gaps + 2 * GAPS + 1, prev)

    @triton.jit
    def _copy(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    @triton.jit(do_not_specialize=["value"])
    def _post(host_word, value, stamps):
        tl.store(stamps, _now())
        tl.store(host_word, value)

    programs = torch.cuda.get_device_properties(0).multi_processor_count * 2

    class K:
        @staticmethod
        def gate(flag, status, value, stamps, device_word):
            _gate[(programs,)](flag, status, value, stamps, device_word, num_warps=32)

        @staticmethod
        def spin(gaps, duration_ns):
            _spin[(1,)](gaps, duration_ns, GAPS=16)

        @staticmethod
        def copy(src, dst):
            n = src.numel()
            _copy[(triton.cdiv(n, 4096),)](src, dst, n, BLOCK=4096)

        @staticmethod
        def post(host_word, value, stamps):
            _post[(1,)](host_word, value, stamps)
    return K


def host_words(path: str):
    """int32 words of a page in /dev/shm both processes map, registered with CUDA here."""
    page = mmap.mmap(os.open(path, os.O_RDWR), 4096)
    words = torch.frombuffer(page, dtype=torch.int32, count=1024)
    torch.cuda.cudart().cudaHostRegister(words.data_ptr(), 4096, 0)
    return page, words


def load_gemv():
    path = ROOT / "submissions" / "gemv" / "v12.py"
    spec = importlib.util.spec_from_file_location("gemv_v12", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel


def gemv_inputs():
    from reference import get_task
    from reference.cases import cases
    task = get_task("gemv")
    return [task.generate_input(**case.args) for case in cases("gemv", "benchmarks")]


def build():
    """Builds gemv v12 into TORCH_EXTENSIONS_DIR (run beside the first experiments)."""
    kernel = load_gemv()
    kernel(gemv_inputs()[2])
    torch.cuda.synchronize()


# -- the worker ------------------------------------------------------------------------------------------------------
def worker(conn, words_tensor, shared_fill):
    from harness.device import flush_bytes
    from harness.hold import StreamHold
    words = Words(words_tensor)
    stamp = stamper()
    page = mmap.mmap(os.open(FLAG_PATH, os.O_RDWR), 4096)
    flag = torch.frombuffer(page, dtype=torch.int32, count=1)
    torch.cuda.cudart().cudaHostRegister(flag.data_ptr(), 4096, 0)
    hold = StreamHold(flag)
    refill = torch.empty(flush_bytes() // 4, dtype=torch.float32, device="cuda")
    clear = torch.empty((4 << 30) // 4, dtype=torch.float32, device="cuda")
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    a = torch.randn(128, 2048, dtype=torch.float16, device="cuda")
    bs = [torch.randn(2048, 7168, dtype=torch.float16, device="cuda") for _ in range(50)]
    side = torch.cuda.Stream()
    stamps = torch.zeros(8, dtype=torch.int64, device="cuda")
    kernels = gpu_kernels()
    _, host = host_words(HOST_PATH)
    gaps = torch.zeros(34, dtype=torch.int64, device="cuda")

    def host_done(s):
        try:
            words.write_at(host.data_ptr() + 4 * HOST_DONE, s)
        except RuntimeError:
            kernels.post(host[HOST_DONE:], s, stamps[6:])
    gemv = {"kernel": None, "inputs": None}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def work(what):
        kind = what[0]
        if kind == "sleep":
            torch.cuda._sleep(int(what[1] * CYCLES_PER_US))
        elif kind == "copy":
            dst.copy_(src)
        elif kind == "mm50":
            for b in bs:
                torch.mm(a, b)
        elif kind == "gemv":
            gemv["kernel"](gemv["inputs"][what[1]])
        elif kind == "tail":
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.cuda._sleep(int(what[2] * CYCLES_PER_US))
            torch.cuda._sleep(int(what[1] * CYCLES_PER_US))

    kernels.spin(gaps, 1000)
    host_done(0)
    stamp(stamps, 0)  # every kernel and library handle loaded before any stream waits: a module load or an
    for what in (("sleep", 1), ("copy",), ("mm50",), ("tail", 1, 1)):  # allocation that synchronizes behind a
        work(what)  # wait for "go" would never return
    refill.normal_(), clear.normal_(), shared_fill.fill_(0)
    hold.warm()
    torch.cuda.synchronize()
    conn.send("ready")
    while True:
        order = conn.recv()
        if order is None:
            return
        if order["way"] == "load_gemv":
            gemv["kernel"], gemv["inputs"] = load_gemv(), gemv_inputs()
            gemv["kernel"](gemv["inputs"][0])
            torch.cuda.synchronize()
            conn.send("loaded")
            continue
        way, s, what = order["way"], order["s"], order["work"]
        faulthandler.dump_traceback_later(45, exit=True)
        torch.cuda.synchronize()
        stamps.zero_()
        if way == "contest":
            clear.normal_()
        elif way == "hold":
            hold.engage()
            refill.normal_()
        elif way.startswith("gate") or way == "idle":
            if way.endswith("spin"):
                gaps.zero_()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    kernels.spin(gaps, int(order["spin_ns"]))
            words.wait(GO, s)
        elif way.startswith("clock2"):
            words.wait(GO, s)
            refill.normal_()
            words.write(REFILLED, s)
            words.wait(GO2, s)
        else:
            words.wait(GO, s)
            if way == "clock+refill":
                refill.normal_()
            elif way == "clock+fill":
                shared_fill.fill_(s)
        stamp(stamps, 0)
        start.record()
        work(what)
        end.record()
        stamp(stamps, 2)
        if way.startswith("clock"):
            words.write(DONE, s)
        elif way.startswith("gate") or way == "idle":
            host_done(s)
            words.write(DONE, s)
        conn.send("queued")
        torch.cuda.synchronize()
        faulthandler.cancel_dump_traceback_later()
        reply = {"worker_us": start.elapsed_time(end) * 1e3, "w0": int(stamps[0]), "w1": int(stamps[2])}
        if way.endswith("spin"):
            reply["gaps"] = [int(g) for g in gaps.tolist()]
        conn.send(reply)


# -- the evaluator ---------------------------------------------------------------------------------------------------
class Evaluator:
    def __init__(self):
        from harness.device import flush_bytes
        self.stamp = stamper()
        self.words_tensor = torch.zeros(16, dtype=torch.int32, device="cuda")
        self.words = Words(self.words_tensor)
        self.flush_buffer = torch.empty(flush_bytes() // 4, dtype=torch.int32, device="cuda")
        self.shared_fill = torch.empty(flush_bytes() // 4, dtype=torch.int32, device="cuda")
        self.stamps = torch.zeros(8, dtype=torch.int64, device="cuda")
        self.e0, self.e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.mid = torch.cuda.Event(enable_timing=True)
        self.stamp(self.stamps, 0)
        self.e0.record(), self.e1.record(), self.mid.record()
        for path in (FLAG_PATH, HOST_PATH):
            with open(path, "wb") as f:
                f.write(bytes(4096))
        self.kernels = gpu_kernels()
        self.host_page, self.host = host_words(HOST_PATH)
        self.host_view = memoryview(self.host_page).cast("i")  # read and written from the host: fast
        self.gate_word = torch.zeros(4, dtype=torch.int32, device="cuda")
        self.staged = torch.randint(0, 1 << 30, (128 << 20,), dtype=torch.int32, device="cuda")  # 512 MiB of inputs
        self.slot = torch.zeros_like(self.staged)
        self.kernels.copy(self.staged, self.slot)
        self.kernels.post(self.host[SEEN:], 0, self.stamps[2:])
        self.kernels.gate(self.host[RELEASE:], self.host[SPINNING:], 0, self.stamps[0:], self.gate_word)
        self.page = mmap.mmap(os.open(FLAG_PATH, os.O_RDWR), 4096)
        self.flag = memoryview(self.page).cast("i")
        self.s = 0
        ctx = mp.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=worker, args=(theirs, self.words_tensor, self.shared_fill), daemon=True)
        self.proc.start()
        self.expect(120)

    def expect(self, seconds):
        if not self.conn.poll(seconds):
            print(f"the worker did not answer in {seconds} s", flush=True)
            os._exit(3)
        return self.conn.recv()

    def load_gemv(self):
        self.conn.send({"way": "load_gemv"})
        self.expect(600)

    def sample(self, way: str, what: tuple, flush: bool = True, mid: bool = False) -> dict:
        self.s += 1
        s = self.s
        self.flag[0] = 0
        torch.cuda.synchronize()
        self.stamps.zero_()
        self.conn.send({"way": way, "s": s, "work": what})
        assert self.expect(60) == "queued"
        out = {"way": way, "work": list(what), "flush": flush and way != "contest"}
        if out["flush"]:
            self.flush_buffer.zero_()
        if way == "hold":
            torch.cuda.synchronize()
            self.flag[0] = 1
        elif way.startswith("clock"):
            if way.startswith("clock2"):
                self.words.write(GO, s)
                self.words.wait(REFILLED, s)
            self.stamp(self.stamps, 0)
            self.e0.record()
            self.words.write(GO2 if way.startswith("clock2") else GO, s)
            if mid:
                self.mid.record()
                self.stamp(self.stamps, 4)
            self.words.wait(DONE, s)
            self.e1.record()
            self.stamp(self.stamps, 2)
        reply = self.expect(60)
        torch.cuda.synchronize()
        out.update(reply)
        if way.startswith("clock"):
            e0, e1, w0, w1 = int(self.stamps[0]), int(self.stamps[2]), reply["w0"], reply["w1"]
            out.update(evaluator_us=self.e0.elapsed_time(self.e1) * 1e3, stamped_us=(e1 - e0) / 1e3,
                       go_latency_us=(w0 - e0) / 1e3, done_latency_us=(e1 - w1) / 1e3)
            if mid:
                out.update(mid_event_us=self.e0.elapsed_time(self.mid) * 1e3,
                           mid_stamp_us=(int(self.stamps[4]) - e0) / 1e3)
        return out

    def spin_until(self, index: int, value: int, seconds: float = 30.0) -> int:
        """Spin on a host word until it reaches value; the host clock then (ns)."""
        deadline = time.perf_counter_ns() + int(seconds * 1e9)
        view = self.host_view
        while view[index] < value:
            if time.perf_counter_ns() > deadline:
                print(f"host word {index} never reached {value}", flush=True)
                os._exit(4)
        return time.perf_counter_ns()

    def sample_gate(self, way: str, what: tuple, writes: str = "", spin_ns: int = 0) -> dict:
        """The second round: the evaluator's context holds the GPU (its gate) until its host clock says go (gate*), or
        writes go from its stream and goes idle (idle); the end is the worker's done word in host memory."""
        self.s += 1
        s = self.s
        faulthandler.dump_traceback_later(40, exit=True)
        trace = (lambda stage: print(f"{way} {s}: {stage}", file=sys.stderr, flush=True)) if s < 12 else (lambda _: 0)
        trace("start")
        torch.cuda.synchronize()
        self.stamps.zero_()
        self.conn.send({"way": way, "s": s, "work": what, "spin_ns": spin_ns})
        assert self.expect(60) == "queued"
        out = {"way": way, "work": list(what), "writes": writes}
        self.stamp(self.stamps, 4)
        if writes == "ce":
            self.slot.copy_(self.staged)
        elif writes == "kernel":
            self.kernels.copy(self.staged, self.slot)
        self.flush_buffer.zero_()
        self.stamp(self.stamps, 6)
        t_go = None
        trace("flushed")
        if way == "idle":
            self.stamp(self.stamps, 0)
            self.words.write(GO, s)
        else:
            self.kernels.gate(self.host[RELEASE:], self.host[SPINNING:], s, self.stamps[0:], self.gate_word)
            self.words.write(GO, s)
            if way.startswith("gate-blocked"):
                self.words.wait(DONE, s)
                self.kernels.post(self.host[SEEN:], s, self.stamps[2:])
            trace("gate queued")
            self.spin_until(SPINNING, s)
            t_go = time.perf_counter_ns()
            self.host_view[RELEASE] = s
        trace("released")
        t_done = self.spin_until(HOST_DONE, s)
        trace("done seen")
        if not way.startswith("gate-blocked"):
            self.kernels.post(self.host[SEEN:], s, self.stamps[2:])
        t_seen = self.spin_until(SEEN, s)
        trace("seen")
        reply = self.expect(60)
        torch.cuda.synchronize()
        faulthandler.cancel_dump_traceback_later()
        out.update(reply)
        st = [int(v) for v in self.stamps.tolist()]
        e0, e_post, w0, w1 = st[0], st[2], reply["w0"], reply["w1"]
        out.update(go_switch_us=(w0 - e0) / 1e3, back_us=(e_post - w1) / 1e3, seen_lag_us=(t_seen - t_done) / 1e3,
                   writes_us=(st[6] - st[4]) / 1e3)
        if t_go is not None:
            out.update(window_us=(t_done - t_go) / 1e3, window_less_worker_us=(t_done - t_go) / 1e3 - reply["worker_us"])
        if "gaps" in reply:
            g = reply["gaps"]
            out["spin_span_us"] = [(g[32] - e0) / 1e3, (g[33] - e0) / 1e3]
            out["spin_gaps_us"] = [((g[2 * i] - e0) / 1e3, (g[2 * i + 1] - e0) / 1e3) for i in range(16) if g[2 * i]]
            out["writes_at_us"] = [(st[4] - e0) / 1e3, (st[6] - e0) / 1e3]
        return out

    def close(self):
        self.conn.send(None)
        self.proc.join(timeout=30)


def summary(rows: list, keys: list) -> str:
    out = []
    for key in keys:
        values = [r[key] for r in rows if key in r]
        if values:
            q = statistics.quantiles(values, n=10) if len(values) > 2 else [values[0]] * 9
            out.append(f"{key} {statistics.median(values):.2f} [{q[0]:.2f}..{q[-1]:.2f}, max {max(values):.2f}]")
    return "; ".join(out)


GATE_WAYS = ("gate", "gate-blocked", "idle", "gate+spin")
KEYS = ["worker_us", "evaluator_us", "stamped_us", "go_latency_us", "done_latency_us", "mid_event_us", "mid_stamp_us",
        "window_us", "window_less_worker_us", "go_switch_us", "back_us", "seen_lag_us", "writes_us"]


def run_ways(ev, log, title, ways, works, samples, **kwargs):
    """Interleaved samples of every (way, work); one markdown line per pair with its medians."""
    rows = {}
    for n in range(samples + 1):
        for work in works:
            for way in ways:
                row = ev.sample_gate(way, work, **kwargs) if way in GATE_WAYS else ev.sample(way, work, **kwargs)
                if n:
                    rows.setdefault((way, tuple(work)), []).append(row)
                    log.write(json.dumps({"experiment": title, **row}) + "\n")
    log.flush()
    print(f"\n## {title} ({samples} samples each)\n", flush=True)
    for (way, work), got in rows.items():
        print(f"- {way} {work}: " + summary(got, KEYS), flush=True)
        for row in got[:3]:
            if "spin_gaps_us" in row:
                print(f"  - spinner {row['spin_span_us']}, off the GPU {row['spin_gaps_us']}, the evaluator's writes "
                      f"{row['writes_at_us']} (µs from its gate's exit)", flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--jsonl", default="clock_probe.jsonl")
    parser.add_argument("--rounds", default="1,2", help="which rounds of experiments: 1 (the evaluator's stream waits), "
                                                        "2 (its gate and host clock)")
    parser.add_argument("--build", action="store_true", help="only build gemv v12 (run beside the probe)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA GPU")
    if args.build:
        build()
        return
    builder = subprocess.Popen([sys.executable, __file__, "--build"], cwd=ROOT)
    ev = Evaluator()
    rounds = args.rounds.split(",")
    print(f"# clock probe on {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    with open(args.jsonl, "a") as log:
        n = args.samples
        if "1" in rounds:
            run_ways(ev, log, "fixed cost: the evaluator's clock against the worker's events", ["clock"],
                     [("none",), ("sleep", 10), ("sleep", 100), ("sleep", 1000), ("copy",)], n)
            run_ways(ev, log, "the same without the evaluator's flush before go", ["clock"],
                     [("none",), ("sleep", 100)], n // 2, flush=False)
            run_ways(ev, log, "tail: a second stream of the worker outlasts done", ["clock"],
                     [("tail", 20, 500), ("tail", 20, 3000), ("tail", 20, 20000)], 10, mid=True)
        if "2" in rounds:
            run_ways(ev, log, "round 2: gate, gate with the stream waiting, idle evaluator", ["gate", "gate-blocked", "idle"],
                     [("none",), ("sleep", 100), ("copy",), ("tail", 20, 500)], n // 2)
            for writes in ("ce", "kernel"):
                run_ways(ev, log, f"round 2: the gate after 512 MiB of input writes ({writes})", ["gate"], [("none",)],
                         n // 2, writes=writes)
                run_ways(ev, log, f"round 2: a worker spinning across the gate, writes {writes}", ["gate+spin"],
                         [("none",)], 5, writes=writes, spin_ns=6_000_000)
        run_ways(ev, log, "50 fp16 matmuls (128x2048 @ 2048x7168)",
                 ["contest", "hold", "clock"] + (["gate"] if "2" in rounds else []), [("mm50",)], n // 2)
        builder.wait(timeout=600)
        ev.load_gemv()
        run_ways(ev, log, "gemv v12 per benchmark shape",
                 ["contest", "hold"] + (["clock+refill", "clock+fill", "clock2", "clock"] if "1" in rounds else [])
                 + (["gate"] if "2" in rounds else []), [("gemv", 0), ("gemv", 1), ("gemv", 2)], n)
    ev.close()


if __name__ == "__main__":
    main()
