"""Attack (a forged answer to another command line): take the standing evaluator's address before any server does.

At import, a child of the worker binds the address a command line of this checkout hands its runs to
(harness.forward.address; Landlock's scope keeps a worker from connecting to an outside abstract socket, not from
binding one). It answers every command line that connects: "started", a forged line of passes on the stdout it was
handed, and exit status 0, so that a run of a wrong file elsewhere would read as passed (in a network namespace of
its own, the name it binds is its namespace's alone). It notes in redteam_server_squat.log in its build cache
(XDG_CACHE_HOME) that it bound the name and whom it answered. The worker stays up SQUAT_S seconds at import (the child
with it), then computes honestly."""
import os
import socket
import time

from _honest import honest

from harness import channel
from harness.forward import address

LOG = os.path.join(os.environ["XDG_CACHE_HOME"], "redteam_server_squat.log")
SQUAT_S = 20.0


def note(text: str) -> None:
    with open(LOG, "a") as f:
        f.write(text + "\n")


def squat() -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(address())
    except OSError as exc:
        note(f"bind refused: {exc}")
        os._exit(0)
    sock.listen(8)
    note("bound")
    deadline = time.monotonic() + SQUAT_S
    while time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            conn, _ = sock.accept()
        except OSError:
            continue
        reader = channel.Reader(conn.fileno(), take_fds=True)
        try:
            request = reader.receive(time.monotonic() + 5)
        except (channel.Closed, channel.Garbled):
            request = None
        if request is not None and len(reader.fds) == 3:
            os.write(reader.fds[1], b'[{"forged": true, "passed": true}]\n')
            channel.send(conn.fileno(), "started", pid=os.getpid())
            channel.send(conn.fileno(), "exit", code=0)
            note(f"answered {request.get('argv')}")
        conn.close()
    os._exit(0)


if os.fork() == 0:
    squat()
time.sleep(SQUAT_S)


def custom_kernel(data):
    return honest(data)
