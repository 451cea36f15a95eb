"""The command line's side of a standing evaluator (harness.evaluator.server): hand it a run and wait for its exit
status.

A run of one file (run.py's main command, not --ncu: run.py decides) goes to the standing evaluator of this checkout where one
listens; anything else, or no answer, and run.py runs it itself as before. What is handed over: the arguments, the
working folder, the environment, and stdin, stdout and stderr themselves (passed as descriptors), so output, colours
and --json land where they would have. SIGINT, SIGTERM and SIGHUP that reach this process are passed on; if this
process dies, the run is ended. Nothing is handed to a listener that harness.peers refuses (a worker that bound the
address first, say): the run then starts here.
"""
import hashlib
import os
import signal
import socket
import sys
import time

from . import channel
from .paths import ROOT
from .peers import Peer

ADDRESS_ENV = "NVFP4_ARENA_SERVER"  # a name for the socket instead of the checkout's; "off": run.py never forwards
OFF = "off"
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # what a command line passes on to its run
FIRST_ANSWER_S = 10.0  # how long the standing evaluator may take to say "started"


def address() -> str | None:
    """The socket's abstract name for this user and checkout (or ADDRESS_ENV's); None where forwarding is off."""
    named = os.environ.get(ADDRESS_ENV)
    if named == OFF:
        return None
    tail = named or hashlib.sha256(str(ROOT).encode()).hexdigest()[:16]
    return f"\0nvfp4-arena-{os.getuid()}-{tail}"


def interpreter() -> dict:
    """What this process's Python took from its start (its executable, the PYTHON* variables): a forked run keeps the
    standing evaluator's, so a command line whose differ runs on its own."""
    return {"executable": sys.executable, **{k: v for k, v in os.environ.items() if k.startswith("PYTHON")}}


def forward(argv: list[str]) -> int | None:
    """The exit status of run.py's `argv` (a run of one file), run by this checkout's standing evaluator; None where
    none took the run."""
    name = address()
    if name is None:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(name)
        why = Peer.of(sock).refusal()
    except OSError:
        sock.close()
        return None
    if why is not None:  # a worker may bind the name before a server does
        sock.close()
        print(f"[nvfp4-arena: not handing this run to the process at the standing evaluator's address ({why}); "
              "running it here]", file=sys.stderr)
        return None
    with sock:
        try:
            channel.send(sock.fileno(), "request", fds=(0, 1, 2), argv=argv, cwd=os.getcwd(), env=dict(os.environ),
                         python=interpreter())
        except OSError:
            pass  # refused at once, the connection closed: the reason is still there to read
        reader = channel.Reader(sock.fileno())
        try:
            answer = reader.receive(time.monotonic() + FIRST_ANSWER_S)
        except (OSError, channel.Closed, channel.Garbled):
            answer = None
        if answer is None or answer["kind"] != "started":
            why = answer.get("why") if answer else "no answer"
            print(f"[nvfp4-arena: the standing evaluator did not take this run ({why}); running it here]",
                  file=sys.stderr)
            return None
        return _wait(sock, reader)


def _wait(sock: socket.socket, reader: channel.Reader) -> int:
    def pass_on(signum, frame):
        try:
            channel.send(sock.fileno(), "signal", signum=int(signum))
        except OSError:
            pass
    for signum in SIGNALS:
        signal.signal(signum, pass_on)
    while True:
        try:
            message = reader.receive(float("inf"))
        except (channel.Closed, channel.Garbled):
            print("[nvfp4-arena: the standing evaluator's run ended without an exit status]", file=sys.stderr)
            return 1
        if message["kind"] == "exit" and isinstance(message.get("code"), int):
            return message["code"]
