"""The evaluator's side of its clock without a GPU: the order of a clocked sample's steps against a worker and a
clock that record what they are asked, and what happens when the worker crashes, hangs or never says "done" (the
evaluator's stream, which waits for "done", must always be let go)."""
import time

import pytest
import torch

from harness.evaluator.clock import ClockReading
from harness.evaluator.evaluation import Evaluation
from harness.evaluator.supervisor import Verdict


class Log(list):
    def add(self, *what):
        self.append(what if len(what) > 1 else what[0])


class FakeClock:
    def __init__(self, log, closes=True, early=None):
        self.log, self.closes, self.early, self.sequence = log, closes, early, 0

    def prepare_sample(self):
        self.sequence += 1
        self.log.add("prepare", self.sequence)
        return self.sequence

    def begin(self, sequence):
        self.log.add("begin", sequence)

    def release(self, sequence):
        self.log.add("release", sequence)

    def open(self, sequence):
        self.log.add("open", sequence)

    def wait(self, deadline):
        self.log.add("wait")
        return self.closes

    def rescue(self, sequence):
        self.log.add("rescue", sequence)

    def reading(self):
        return ClockReading(window_ns=310_000.0, writes_ns=50_000.0)

    def early_done(self):
        return self.early


class FakeWorker:
    """Answers the evaluator's messages from a script: kind -> reply dict, None (no answer in time) or a Verdict."""

    clear_ns = 1e6

    def __init__(self, log, answers):
        self.log, self.answers = log, answers

    def send(self, kind, **payload):
        self.log.add("send", kind, payload.get("sequence"))

    def expect(self, kinds, deadline, patient=False):
        kind = kinds[0]
        self.log.add("expect", kind)
        answers = self.answers.get(kind, [{"kind": kind}])
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        if answer is None and not patient:
            raise Verdict("timeout", "no answer")
        return answer


class FakeSlot:
    def __init__(self, log):
        self.log = log
        self.data = (torch.zeros(2), torch.zeros(2, dtype=torch.float16))

    def write_staged(self, staged, where=None):
        self.log.add("write", where)


class FakeFlush:
    def __init__(self, log):
        self.log = log

    def reset_persisting(self):
        self.log.add("reset")

    def fill(self):
        self.log.add("fill")


def steps(log) -> list[str]:
    return [step if isinstance(step, str) else " ".join(str(p) for p in step) for step in log]


def evaluation(log, answers=None, **clock):
    ev = Evaluation.__new__(Evaluation)  # the evaluator's state alone: no worker process, no GPU
    ev.gpu, ev.job_deadline = False, time.monotonic() + 60
    ev.clock, ev.worker = FakeClock(log, **clock), FakeWorker(log, answers or {})
    ev.slots = [FakeSlot(log)]
    ev.flush = FakeFlush(log)
    return ev


def test_the_worker_is_armed_before_the_inputs_exist_and_go_follows_the_flush():
    log = Log()
    sample = evaluation(log)._clocked_sample([0], [(FakeSlot(log), None)], null=False)
    assert steps(log) == ["prepare 1", "send arm 1", "expect queued", "write cpu", "reset", "begin 1", "write cuda",
                          "fill", "open 1", "release 1", "expect sampled", "wait"]
    assert sample.reading.window_ns == 310_000.0 and not sample.queued_late and sample.early_call is None


def test_a_worker_that_has_not_queued_in_time_gets_go_anyway():
    log = Log()
    sample = evaluation(log, {"queued": [None, {"kind": "queued"}]})._clocked_sample([0], [], null=False)
    order = steps(log)
    assert order.index("open 1") < order.index("expect queued", order.index("open 1"))  # asked again after go
    assert sample.queued_late


@pytest.mark.parametrize("answers,closes,status", [
    ({"sampled": [Verdict("crash", "the worker died")]}, True, "crash"),
    ({"sampled": [None]}, True, "timeout"),
    ({}, False, "tampered"),  # reported its sample, never wrote "done"
])
def test_the_evaluators_stream_is_let_go_whatever_the_worker_did(answers, closes, status):
    log = Log()
    with pytest.raises(Verdict) as found:
        evaluation(log, answers, closes=closes)._clocked_sample([0], [], null=False)
    assert found.value.status == status
    assert log[-1] == ("rescue", 1)  # "done" written by the evaluator itself, for this sample
    assert log.count(("release", 1)) == 1
    if status == "tampered":
        assert "never wrote \"done\"" in found.value.message


def test_a_write_that_fails_behind_the_gate_still_lets_the_gate_and_the_stream_go():
    class Broken(FakeSlot):
        def write_staged(self, staged, where=None):
            if where == "cuda":
                raise RuntimeError("copy failed")
    log = Log()
    with pytest.raises(RuntimeError):
        evaluation(log)._clocked_sample([0], [(Broken(log), None)], null=False)
    assert steps(log)[-3:] == ["begin 1", "release 1", "rescue 1"]


def test_a_host_that_fails_at_the_gate_still_lets_it_and_the_stream_go():
    class Stuck(FakeClock):
        def begin(self, sequence):
            super().begin(sequence)
            raise KeyboardInterrupt  # a signal between the gate's wait and its release
    log = Log()
    ev = evaluation(log)
    ev.clock = Stuck(log)
    with pytest.raises(KeyboardInterrupt):
        ev._clocked_sample([0], [(FakeSlot(log), None)], null=False)
    assert steps(log)[-3:] == ["begin 1", "release 1", "rescue 1"]


def test_the_spot_checks_finding_travels_with_the_sample():
    log = Log()
    assert evaluation(log, early=3)._clocked_sample([0], [], null=False).early_call == 3


def test_the_writes_size_travels_with_the_reading():
    class Staged:  # a staged input tuple's buffers, as Layout.stage leaves them
        def __init__(self, nbytes):
            self.buffers = {"cuda": torch.zeros(nbytes, dtype=torch.uint8)}
    log = Log()
    reading = evaluation(log)._clocked_sample([0], [(FakeSlot(log), Staged(4096)), (FakeSlot(log), Staged(8192))],
                                              null=False).reading
    assert (reading.bytes, reading.copies) == (12_288, 2) and reading.window_ns == 310_000.0
    assert evaluation(Log())._clocked_sample([0], [(FakeSlot(log), None)], null=False).reading.copies == 0
