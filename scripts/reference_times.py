"""Wall time of each task's input generation and exact reference on its largest benchmark shape,
on this machine's default device (CUDA if present). Prints one line per task."""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from reference import TASKS, get_task  # noqa: E402
from reference.cases import cases  # noqa: E402


def sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def main():
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    for task in TASKS:
        mod = get_task(task)
        big = max(cases(task, "benchmarks"), key=lambda c: mod.flops(**c.args) + mod.bytes_moved(**c.args))
        t0 = time.perf_counter()
        data = mod.generate_input(**big.args)
        sync()
        t1 = time.perf_counter()
        mod.ref_kernel(data)  # first call: includes one-time library start-up
        sync()
        t2 = time.perf_counter()
        mod.ref_kernel(data)
        sync()
        t3 = time.perf_counter()
        print(f"{device} {task} [{big.label}]: generate {t1 - t0:.3f} s, reference first {t2 - t1:.3f} s, "
              f"again {t3 - t2:.3f} s", flush=True)


if __name__ == "__main__":
    main()
