"""The worker process: confines itself, opens the device, imports one submission and calls it as the evaluator
says.

`python -m harness.worker --task T --channel FD --parent PID --writable DIR... -- FILE`, started by
harness.evaluator.supervisor. Order matters: the sandbox (harness.worker.confine) goes on before torch is
imported; "ready" (sandbox, the contest clear's duration) is sent and the evaluator's witness calibration runs
before any submission code does; only then "load" imports the file. After that the process is the submission's: everything it sends
is a claim the evaluator checks, and it holds nothing worth stealing (no seed, key, reference or expected output).
"""
import argparse
import math
import os
import sys
from pathlib import Path


def die_with_parent(parent: int):
    """SIGKILL when its parent dies, however it dies (Linux); if it is already gone, leave at once. The parent is the
    evaluator, or, in namespaces of the worker's own, their init (pid 1 there), which dies with the evaluator."""
    import ctypes
    import signal
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() != parent:
        os._exit(1)


def leave():
    """Exit at once, the output flushed (Python's and C's): the interpreter's and CUDA's teardown would only
    keep the evaluator waiting."""
    import ctypes
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
    os._exit(0)


class Worker:
    def __init__(self, args, sandbox):
        import torch

        from harness import channel, device
        from harness.rules import task_rules
        self.torch, self.channel = torch, channel
        self.fd = args.channel
        self.reader = channel.Reader(self.fd, take_fds=True)
        self.path = args.path
        self.kernel = None
        self.check = None
        self.slots = {}
        self.device = device.open_device(task_rules(args.task).eval.clear_bytes)
        if not self.device.gpu:
            torch.set_num_threads(1)  # as the evaluator: idle OpenMP threads spin, and would share other workers' cores
        self.send("ready", sandbox=sandbox.line, cgroup_bound=sandbox.cgroup_bound, clear_ns=self.device.clear_ns)

    def send(self, kind, **payload):
        self.channel.send(self.fd, kind, **payload)

    def receive(self) -> dict:
        return self.reader.receive(math.inf)

    def load(self, source: str | None):
        from harness.submission import import_submission
        from harness.worker import sample
        harness_modules = [sys.modules[name] for name in ("harness.device", "harness.stream_words")
                           if name in sys.modules]
        check = sample.SelfCheck([sample, sys.modules[__name__], self.channel, *harness_modules], self.device,
                                 (self.device, getattr(self.device, "words", None)))
        self.kernel = import_submission(Path(self.path), source).custom_kernel
        check.imported()
        self.check = check

    def map_slots(self, message):
        from harness.layout import open_slot
        fds = iter(self.reader.fds)
        self.reader.fds = []
        self.slots = {}
        if self.device.gpu:
            self.torch.cuda.ipc_collect()
        for i, handle in enumerate(message["handles"]):
            fd = next(fds) if message["layout"]["sizes"]["cpu"] else None
            self.slots[i] = open_slot(message["layout"], fd, handle)
            if fd is not None:
                os.close(fd)
        self.send("mapped", slots=len(self.slots))

    def wait_go(self):
        message = self.receive()
        if message["kind"] != "go":
            raise SystemExit(0)

    def serve(self, message) -> bool:
        from harness.worker import sample
        kind = message["kind"]
        if kind == "slots":
            self.map_slots(message)
        elif kind == "call":
            self.send("called", calls=[sample.call_once(self.kernel, self.slots[i], self.device)
                                       for i in message["slots"]])
        elif kind == "clock":
            self.device.map_clock(message["handle"])
            self.send("mapped", slots=0)
        elif kind == "arm":
            batch = [self.slots[i] for i in message["slots"]]
            result = sample.timed_sample(self.kernel, batch, self.device, message["method"], self.send,
                                         self.wait_go, message.get("sequence", 0))
            result["self_check"] = self.check.findings() if self.check else []
            self.send("sampled", **result)
        elif kind == "profile":
            self.send("profiled", report=self.profile(self.slots[message["slot"]]))
        elif kind == "load":
            self.load(message.get("source"))
            self.send("loaded")
        else:
            return False
        return True

    def profile(self, data) -> str:
        from torch.profiler import ProfilerActivity, profile
        self.kernel(data)  # warm: compile outside the profile
        self.device.synchronize()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.gpu else [])
        with profile(activities=activities) as prof:
            self.kernel(data)
            self.device.synchronize()
        sort = "self_cuda_time_total" if self.device.gpu else "self_cpu_time_total"
        return prof.key_averages().table(sort_by=sort, row_limit=15)


def main(argv=None):
    parser = argparse.ArgumentParser(description="nvfp4-arena worker (started by harness.evaluator.supervisor)")
    parser.add_argument("--task", required=True)
    parser.add_argument("--channel", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--writable", action="append", default=[])
    parser.add_argument("--unconfined", action="store_true")
    parser.add_argument("path")
    args = parser.parse_args(argv)
    die_with_parent(args.parent)
    from harness.worker.confine import Confinement, confine
    sandbox = Confinement("none: --unconfined") if args.unconfined else confine(args.writable)
    from harness import channel, startup
    startup.start(triton=True)  # beside the import of torch (Worker)
    from harness.worker.explain import explain
    try:
        worker = Worker(args, sandbox)
    except BaseException as exc:  # noqa: BLE001 - a device that does not open is reported, not raised
        channel.send(args.channel, "fatal", message=f"the worker could not start: {explain(exc, [args.path])}")
        return
    while True:
        try:
            message = worker.receive()
        except (channel.Closed, channel.Garbled):
            return
        try:
            if not worker.serve(message):
                leave()
        except BaseException as exc:  # noqa: BLE001 - the submission's exception becomes the evaluator's verdict
            kind = "fatal" if message["kind"] == "load" else "error"
            prefix = "submission failed to load: " if kind == "fatal" else ""
            worker.send(kind, message=prefix + explain(exc, [args.path]))
            if kind == "fatal":
                return


if __name__ == "__main__":
    main()
