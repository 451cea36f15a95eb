"""A run of one submission file as the command line asks for it: the options of the run (RunOptions),
the shape set `auto` stands for on this machine, and the modes in turn (test, then benchmark if every
test passes, unless one mode is named), each a session whose records go to this device's records folder.
What a person sees on the way is the command line's: it passes a Watch."""
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .. import device, results
from ..rules import DEFAULT_TIMING, modes_of
from ..submission import Submission
from .session import RunSummary, build_jobs, execute
from .supervisor import drop_spares, start_spares
from .watch import Watch


def pick_shapes(shapes: str) -> str:
    """auto: the contest's shapes on a GPU, the tiny smoke shapes on a CPU; contest and smoke as given."""
    return shapes if shapes != "auto" else ("contest" if device.has_gpu() else "smoke")


@dataclass(frozen=True)
class RunOptions:
    """What a command asks of a run of one file."""

    submission: Submission
    mode: str | None = None  # None: rules.DEFAULT_MODES in turn
    shapes: str = "contest"  # contest or smoke (pick_shapes turns auto into one of them)
    timeout_s: float | None = None  # one case's limit; None: its mode's (rules.TIMEOUT_S)
    record: bool = True  # append the records to this device's records folder
    secret_seed: int | None = None  # leaderboard mode: the key of its seeds comes from this; None: a fresh key
    only: frozenset[int] = frozenset()  # the indices of the cases to run; empty: every case
    confined: bool = True  # the worker runs in its sandbox
    timing: str = DEFAULT_TIMING
    keep_going: bool = False  # run the remaining cases after one hung or crashed

    @property
    def modes(self) -> tuple[str, ...]:
        return modes_of(self.mode)

    def record_file(self) -> Path | None:
        """Where this run's records are appended: <this device's records folder>/<task>.jsonl, or None."""
        return results.records_dir(device.name()) / f"{self.submission.task}.jsonl" if self.record else None


def run(options: RunOptions, watch: Watch = Watch()) -> Iterator[RunSummary]:
    """The options' modes in turn, each one's summary as it ends; after a mode in which not every case passed,
    the modes left are not run. Every mode's worker starts at once (spares, harness.evaluator.supervisor): a test
    mode often ends within a second of its worker's start-up, too soon for the benchmark's worker to come up after
    it (run.py starts them sooner still, before it imports torch). ValueError: no case has an index of `only`;
    the workers started for the run are stopped."""
    sub = options.submission
    try:
        for mode in options.modes:  # a case index that no mode has stops the run before a mode starts
            build_jobs(sub.task, mode, options.shapes, only=options.only)
        start_spares(sub.task, str(sub.path), options.confined, len(options.modes))
        for mode in options.modes:
            with watch.mode(mode):
                summary = execute(sub, mode, options.shapes, options.timeout_s, options.record_file(),
                                  options.secret_seed, partial(watch.job_started, mode), watch.recorded,
                                  options.only, options.confined, options.timing, options.keep_going)
            yield summary
            if not summary.passed:
                return
    finally:
        drop_spares()
