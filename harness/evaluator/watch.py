"""What a run shows as it goes: the hooks harness.evaluator.runner calls. This base shows nothing; the command
line's shows a status line and a line per record. Torch-free, so that run.py defines its own before torch loads."""
from contextlib import AbstractContextManager, nullcontext


class Watch:
    def mode(self, mode: str) -> AbstractContextManager:
        """Entered while one mode's jobs run."""
        return nullcontext()

    def job_started(self, mode: str, job) -> None:
        """A job of the mode (a warm-up or a case) starts."""

    def recorded(self, record: dict) -> None:
        """A case ended in this record."""
