"""Attack (the report rewritten on its way out, gpu-mode/pygpubench exploits/submission_pipe_interpose.py,
submission_file_struct.py, submission_seccomp_trap.py): pygpubench's harness wrote its timings from C++, and its
exploits put themselves between that write and the pipe (a filter thread behind dup2, a FILE whose descriptor was
swapped, a seccomp filter that traps write() and rewrites the buffer from the signal handler), dividing each
time on the way. Our worker writes its reports from Python through os.write: this file replaces os.write with a
filter that divides region_ns in every "sampled" line by SCALE and passes everything else through. It replaces no
function of the worker's and leaves its self-check alone (os.write is not among what it watches). It computes
honestly.

Where the worker's report is the number (a CPU), the witness's clock sees the real time; on a GPU the report is only
the evaluator's clock's cross-check. Stderr says each rewritten report's real and written region."""
import json
import os
import sys

from _honest import honest

SCALE = 100
_write = os.write
_rewritten = {"n": 0}


def _filter(fd, data):
    line = bytes(data)
    if line.startswith(b'{"kind": "sampled"') and line.endswith(b"\n"):
        message = json.loads(line)
        if message.get("region_ns"):
            real = message["region_ns"]
            message["region_ns"] = real / SCALE
            _rewritten["n"] += 1
            if _rewritten["n"] % 5 == 1:
                print(f"[write_interpose] report {_rewritten['n']}: region {real / 1e3:.1f} µs written as "
                      f"{real / SCALE / 1e3:.1f} µs", file=sys.stderr, flush=True)
            _write(fd, (json.dumps(message) + "\n").encode())
            return len(line)
    return _write(fd, data)


os.write = _filter


def custom_kernel(data):
    return honest(data)
