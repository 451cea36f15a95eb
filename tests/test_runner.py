"""The harness side of the command line: a run's options become the sessions of its modes (RunOptions,
runner.run), versions measured again become diff rows (views.remeasure), an archive of records is merged
(results.merge_from)."""
import tarfile

import pytest

from harness import results
from harness.evaluator import runner, session
from harness.evaluator.session import RunSummary
from harness.rules import DEFAULT_MODES, DEFAULT_TIMING
from harness.submission import resolve
from harness.views import remeasure
from reference.cases import leaderboards


def gemv(version="v0"):
    return resolve(version, "gemv", leaderboards())


def test_options_name_their_modes_and_where_records_go(results_dir):
    options = runner.RunOptions(gemv())
    assert options.modes == DEFAULT_MODES == ("test", "benchmark") and options.timing == DEFAULT_TIMING
    assert runner.RunOptions(gemv(), "leaderboard").modes == ("leaderboard",)
    assert options.record_file() == results_dir / "gemv.jsonl"  # $NVFP4_ARENA_RESULTS, as every run's
    assert runner.RunOptions(gemv(), record=False).record_file() is None


def fake_sessions(monkeypatch, passing: dict):
    """runner.run's sessions, replaced by ones that pass or fail by mode and say what they were given."""
    calls = []

    def execute(sub, mode, shapes, timeout_s, record_to, secret_seed, on_start, on_record, only, confined, timing,
                keep_going):
        calls.append((mode, shapes, timeout_s, record_to, secret_seed, only, confined, timing, keep_going))
        on_start("job")
        status = "pass" if passing[mode] else "fail"
        on_record({"status": status})
        return RunSummary(sub, mode, shapes, timing, records=[{"status": status}])
    monkeypatch.setattr(runner, "execute", execute)
    monkeypatch.setattr(runner, "start_spares", lambda *key: calls.append(("spares", *key)))
    monkeypatch.setattr(runner, "drop_spares", lambda: calls.append(("drop",)))
    return calls


class Seen(runner.Watch):
    def __init__(self):
        self.events = []

    def job_started(self, mode, job):
        self.events.append(("start", mode, job))

    def recorded(self, record):
        self.events.append(("record", record["status"]))


def test_a_run_is_its_modes_in_turn_until_one_fails(monkeypatch, results_dir):
    calls = fake_sessions(monkeypatch, {"test": False, "benchmark": True})
    options = runner.RunOptions(gemv(), None, "smoke", timeout_s=9.0, secret_seed=7, only=frozenset({1}), confined=False,
                                timing="contest", keep_going=True)
    watch = Seen()
    summaries = list(runner.run(options, watch))
    assert [s.mode for s in summaries] == ["test"]  # the benchmark is skipped, and its spare worker stopped
    path = str(options.submission.path)
    assert calls == [("spares", "gemv", path, False, 2),  # both modes' workers start at once
                     ("test", "smoke", 9.0, results_dir / "gemv.jsonl", 7, frozenset({1}), False, "contest", True),
                     ("drop",)]
    assert watch.events == [("start", "test", "job"), ("record", "fail")]
    calls = fake_sessions(monkeypatch, {"test": True, "benchmark": True})
    with pytest.raises(ValueError, match="no tests case has index"):
        list(runner.run(runner.RunOptions(gemv(), only=frozenset({99}))))
    assert calls == [("drop",)]  # a case index no mode has: no worker started, and any started before stopped
    calls.clear()
    assert [s.mode for s in runner.run(runner.RunOptions(gemv(), record=False))] == ["test", "benchmark"]
    assert [c[0] for c in calls] == ["spares", "test", "benchmark", "drop"] and calls[1][3] is None


def test_spare_workers_are_taken_in_turn_each_with_its_evaluations_timeout(monkeypatch):
    from harness.evaluator import supervisor
    made = []

    class Worker:
        def __init__(self, task, path, timeout_s, confined):
            self.timeout_s, self.stopped = timeout_s, False
            made.append(self)

        def stop(self):
            self.stopped = True
    monkeypatch.setattr(supervisor, "WorkerProcess", Worker)
    supervisor.start_spares("gemv", "/x/v0.py", True, 2)
    supervisor.start_spares("gemv", "/x/v0.py", True, 2)  # as many as asked for, per file and sandbox
    assert len(made) == 2 and supervisor.take_spare("gemv", "/x/v0.py", 30.0, False) is None  # not unconfined
    assert supervisor.take_spare("gemv", "/x/v0.py", 30.0, True) is made[0] and made[0].timeout_s == 30.0
    assert supervisor.take_spare("gemv", "/x/v0.py", 9.0, True) is made[1] and made[1].timeout_s == 9.0
    assert supervisor.take_spare("gemv", "/x/v0.py", 30.0, True) is None
    supervisor.start_spares("gemv", "/x/v1.py", True, 1)
    supervisor.drop_spares()
    assert made[2].stopped and supervisor.take_spare("gemv", "/x/v1.py", 30.0, True) is None


@pytest.mark.slow
def test_the_runner_records_what_a_session_records(results_dir):
    """The same file, mode and cases through RunOptions as through session.execute: the same records."""
    def essentials(summary):
        return [(r["mode"], r["kind"], r["index"], r["shape"], r["values"], r["status"], r["timing"], r["seed"])
                for r in summary.records]
    options = runner.RunOptions(gemv(), "test", "smoke", only=frozenset({0}), record=False)
    [summary] = runner.run(options)
    direct = session.execute(gemv(), "test", "smoke", only={0})
    assert essentials(summary) == essentials(direct) and len(summary.records) == 2 and summary.passed


def test_measured_diff_sets_each_version_against_the_first(monkeypatch):
    """A file named twice is still two entries; per shape and over shapes, the second against the first."""
    asked = []

    def measured(subs, shapes, rounds, on_round=None, timing=DEFAULT_TIMING, on_fail=None):
        asked.append(([s.version for s in subs], shapes, rounds, timing))
        return {s.version: {0: [100.0, 110.0], 1: [200.0, 220.0]} for s in subs}
    monkeypatch.setattr(session, "measure_interleaved", measured)
    diff = remeasure.measured_diff("gemv", ["v0", "v0"], "smoke", 2, "legacy")
    assert asked == [(["v0#0", "v0#1"], "smoke", 2, DEFAULT_TIMING)]  # legacy records: measured with the default
    assert diff["base"] == "v0#0" and [r["index"] for r in diff["rows"]] == [0, 1]
    assert [v["version"] for v in diff["rows"][0]["versions"]] == ["v0#0", "v0#1"]
    second = diff["geomean"][1]
    assert second["speedup_vs_base"] == pytest.approx(1.0) and second["verdict"] == "no significant difference"


def test_merge_takes_a_tar_of_a_whole_results_folder(results_dir, tmp_path):
    """What `tar czf results.tgz results` makes of a checkout's results: its records, its CPU records in local/, and
    notes' folders of raw runs (other .jsonl files, left alone); each record lands where its machine's belong."""
    folder = tmp_path / "other_machine" / "results"
    gpu = {"run_id": "g", "version": "v0", "mode": "benchmark", "status": "pass", "gpu": {"name": "NVIDIA H200"}}
    cpu = {**gpu, "run_id": "c", "gpu": {"name": "cpu"}}
    results.append(folder / "gemv.jsonl", gpu)
    results.append(folder / "local" / "gemv.jsonl", cpu)
    results.append(folder / "h200" / "notes_2026-11-26" / "runs_1a2b3c4.jsonl", gpu)
    with tarfile.open(tmp_path / "results.tgz", "w:gz") as archive:
        archive.add(folder, arcname="results")
    done = results.merge_from(tmp_path / "results.tgz", results_dir)
    assert [(m.source, m.records, sum(m.added.values())) for m in done.files] == [
        ("results/gemv.jsonl", 1, 1), ("results/local/gemv.jsonl", 1, 1)]
    assert done.left_out == ["results/h200/notes_2026-11-26/runs_1a2b3c4.jsonl"]
    assert results.read(results_dir / "gemv.jsonl") == [gpu]
    assert results.read(results_dir / "local" / "gemv.jsonl") == [cpu]
    again = results.merge_from(tmp_path / "results.tgz", results_dir)
    assert [sum(m.added.values()) for m in again.files] == [0, 0]  # each record once
    assert not list(results_dir.rglob("runs_*.jsonl"))
