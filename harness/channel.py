"""The pipes between the runner and a worker: one JSON object per line, nothing executable.

The worker's code and the submission share a process, so the submission can write anything to the
worker's end. The runner therefore reads raw bytes against its own clock (select with a deadline,
never a blocking read of a declared length), takes only whole lines of JSON objects with a known
`kind`, and calls anything else garbled: a verdict, never a hang. JSON instead of pickle: a forged
message can lie, but it cannot run code in the runner.
"""
import json
import os
import select
import time

MAX_LINE = 64 << 20  # a longer line is garbage, not a message
KINDS = ("ready", "fatal", "progress", "done", "job", "stop")


class Garbled(Exception):
    """Bytes on the channel that are not one of the harness's messages."""


class Closed(Exception):
    """The other end closed the channel (its process exited)."""


def send(fd: int, kind: str, **payload) -> None:
    data = (json.dumps({"kind": kind, **payload}, default=str) + "\n").encode()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Reader:
    """Messages from one pipe, each read against a deadline on the caller's monotonic clock."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buffer = bytearray()

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
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise Closed("the channel was closed")
            self.buffer += chunk

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
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise Garbled(f"a line that is not JSON: {raw[:80]!r}") from None
        if not isinstance(message, dict) or message.get("kind") not in KINDS:
            raise Garbled(f"a line that is no harness message: {raw[:80]!r}")
        return message
