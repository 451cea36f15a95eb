"""Versions measured again now, interleaved (harness.evaluator.session.measure_interleaved), where stored runs
cannot settle a question: `diff --measure` sets each version against the first, per shape and over shapes;
`submit --best` lets the stored ranking on this GPU nominate the fastest tries that can be run again (lineage versions
and a participant's own) and the fresh measurement decide among them (harness.views.best)."""
from dataclasses import dataclass
from itertools import islice

from reference.cases import cases, leaderboards, timed_kind

from .. import device
from ..evaluator import session
from ..rules import DEFAULT_TIMING, TIMINGS
from ..submission import Submission, version_key
from ..sweep.builds import before_timing
from . import tries
from .best import Decision, decide
from .compare import paired_comparison
from .lineage import ViewError, candidates, scoped, versions


def measure(subs: list[Submission], shapes: str, rounds: int, timing: str, on_round=None, on_build=None,
            on_fail=None) -> dict:
    """{version: {shape index: [ns per round]}}, every file built first on a GPU (harness.sweep.builds;
    on_build(Build) as each ends); a view of legacy records measures with the default timing.
    RuntimeError: a version's worker did not start, or the version failed a round (with on_fail: as
    session.measure_interleaved, that version left out)."""
    before_timing([(s.task, str(s.path)) for s in subs], on_build)
    return session.measure_interleaved(subs, shapes, rounds, on_round,
                                       timing=timing if timing in TIMINGS else DEFAULT_TIMING, on_fail=on_fail)


def measured_diff(task: str, names: list[str], shapes: str, rounds: int, timing: str, on_round=None,
                  on_build=None) -> dict:
    """The named versions, files or past tries (name@hash, harness.views.tries) measured in interleaved rounds,
    each against the first (harness.views.compare.paired_comparison, docs/json.md), each under its try's label as the
    stored views show it; the same try named twice is still two entries, told apart as label#position.
    SubmissionError: a name that is no submission; RuntimeError: as measure."""
    subs = [tries.resolve(n, task, leaderboards()) for n in names]
    shown = [tries.label(task, s.version, s.code_sha256) for s in subs]
    for i, s in enumerate(subs):
        s.version = f"{shown[i]}#{i}" if shown.count(shown[i]) > 1 else shown[i]
    pooled = measure(subs, shapes, rounds, timing, on_round, on_build)
    labels = [case.label for case in cases(task, timed_kind(shapes))]
    return paired_comparison(pooled, labels)


@dataclass(frozen=True)
class Nomination:
    """The fastest tries by the stored runs on one GPU that can be run again, fastest first (labels, as `list` shows
    them), and the same tries oldest first, the order a tie is broken in."""

    gpu: str
    versions: list[str]
    oldest_first: list[str]


def nominate(task: str, shapes: str, timing: str, count: int) -> Nomination:
    """Up to `count` tries ranked by their stored runs on this device, among those that can be run again
    (lineage.candidates: lineage versions as their files are now, and a participant's tries whose code is kept).
    ViewError: none has a complete run."""
    scope, df = scoped(task, device.name(), timing, timed_kind(shapes))
    top = [s.version for s in islice(candidates(task, scope, df), count)]
    if not top:
        raise ViewError(f"no try of {task} that can be run again has a complete {timing}-timed run on {scope.gpu} "
                        f"(a lineage version as its file is now, or a try of your own whose code is kept: runs of "
                        f"earlier contents whose code is gone nominate nothing)")
    first_run = df.groupby("version")["timestamp"].min()
    lineage = {v.name for v in versions(task)}

    def age(label: str):  # lineage versions by number, then other tries by their first stored run
        name = tries.name_of(label, df)
        return (0, version_key(label), "") if name in lineage else (1, (0, ""), first_run[label])
    return Nomination(scope.gpu, top, sorted(top, key=age))


def choose(task: str, nomination: Nomination, shapes: str, rounds: int, timing: str, on_round=None,
           on_build=None) -> Decision:
    """The nominated tries measured in interleaved rounds, each under its label; the winner by paired intervals
    (harness.views.best), a tie going to the oldest. A candidate that fails a round is left out, with its verdict in
    the decision: the others' rounds stand. RuntimeError: every candidate failed."""
    subs = [tries.resolve(label, task, leaderboards()) for label in nomination.versions]
    for label, sub in zip(nomination.versions, subs):
        sub.version = label
    excluded = {}
    pooled = measure(subs, shapes, rounds, timing, on_round, on_build,
                     on_fail=lambda version, why: excluded.update({version: why}))
    if not pooled:
        raise RuntimeError("every candidate failed: " + "; ".join(f"{v} {why}" for v, why in excluded.items()))
    return decide(pooled, excluded, nomination.oldest_first)
