"""The socket between the evaluator and a worker: one JSON object per line, nothing executable.

The worker's code and the submission share a process, so the submission can write anything to the
worker's end. The evaluator therefore reads raw bytes against its own clock (select with a deadline,
never a blocking read of a declared length), takes only whole lines of JSON objects with a known
`kind`, and calls anything else garbled: a verdict, never a hang. JSON instead of pickle: a forged
message can lie, but it cannot run code in the evaluator; and a plain read() discards any file
descriptor the worker tries to pass. The evaluator passes the worker the memfds of its shared slots
with `send_fds`; the worker collects them with `Reader(..., take_fds=True)`.
"""
import json
import os
import select
import socket
import time

MAX_LINE = 64 << 20  # a longer line is garbage, not a message
KINDS = ("ready", "loaded", "fatal", "called", "queued", "sampled", "profiled", "error", "mapped",  # worker -> evaluator
         "slots", "clock", "call", "arm", "go", "profile", "load", "stop",  # evaluator -> worker
         "request", "signal", "started", "declined", "exit")  # command line <-> standing evaluator (harness.forward)


class Garbled(Exception):
    """Bytes on the channel that are not one of the harness's messages."""


class Closed(Exception):
    """The other end closed the channel (its process exited)."""


def send(fd: int, kind: str, fds: tuple = (), **payload) -> None:
    data = (json.dumps({"kind": kind, **payload}, default=str) + "\n").encode()
    view = memoryview(data)
    if fds:
        with socket.socket(fileno=os.dup(fd)) as sock:
            sent = socket.send_fds(sock, [view[:1]], list(fds))
        view = view[sent:]
    while view:
        view = view[os.write(fd, view):]


class Reader:
    """Messages from one pipe, each read against a deadline on the caller's monotonic clock."""

    def __init__(self, fd: int, take_fds: bool = False):
        self.fd = fd
        self.buffer = bytearray()
        self.fds = []  # descriptors that arrived with the messages (take_fds only)
        self.sock = socket.socket(fileno=os.dup(fd)) if take_fds else None

    def receive(self, deadline: float) -> dict | None:
        """The next message, or None once the deadline passed. Raises Closed or Garbled."""
        while True:
            line = self._line()
            if line is not None:
                return line
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], min(remaining, 1.0))
            if not ready:
                continue
            if self.sock is not None:
                chunk, fds, _, _ = socket.recv_fds(self.sock, 1 << 20, 64)
                self.fds += fds
            else:
                chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise Closed("the channel was closed")
            self.buffer += chunk

    def close(self) -> None:
        """Close the socket that collects descriptors (take_fds); the channel's own descriptor stays the caller's."""
        if self.sock is not None:
            self.sock.close()

    def _line(self) -> dict | None:
        end = self.buffer.find(b"\n")
        if end < 0:
            if len(self.buffer) > MAX_LINE:
                raise Garbled(f"more than {MAX_LINE >> 20} MiB without a line break")
            return None
        raw = bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        try:
            message = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # RecursionError: nested past Python's limit
            raise Garbled(f"a line that is not JSON: {raw[:80]!r}") from None
        if not isinstance(message, dict) or message.get("kind") not in KINDS:
            raise Garbled(f"a line that is no harness message: {raw[:80]!r}")
        return message
