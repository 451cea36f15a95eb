"""Builds before timing (harness.sweep.builds): each distinct file built once through a confined test run, in the
order given; a file that cannot build is reported with its reason and the others still build."""
import pytest

from harness.sweep import builds

BROKEN = "def custom_kernel(data):\n    raise RuntimeError('cannot build this one')\n"


def test_a_build_is_a_confined_test_run_of_one_case_without_records():
    argv = builds.command("gemv", "v3", python="py")
    assert argv[0] == "py" and argv[1].endswith("run.py")
    assert argv[2:] == ["--task", "gemv", "--submission", "v3", "--mode", "test", "--case", "0", "--no-record",
                        "--json"]
    assert "--unconfined" not in argv


def test_each_file_is_built_once_in_the_order_given(monkeypatch):
    calls = []
    monkeypatch.setattr(builds, "build_one", lambda task, version: calls.append((task, version))
                        or builds.Build(task, version, True, 0.0))
    seen = []
    built = builds.build_all([("gemv", "v1"), ("gemm", "v2"), ("gemv", "v1")], workers=2, on_build=seen.append)
    assert [(b.task, b.version) for b in built] == [("gemv", "v1"), ("gemm", "v2")]
    assert sorted(calls) == [("gemm", "v2"), ("gemv", "v1")]
    assert seen == built


@pytest.mark.slow
def test_a_failing_build_is_reported_and_the_others_still_build(tmp_path, results_dir):
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN)
    ok, bad = builds.build_all([("gemv", "v0"), ("gemv", str(broken))], workers=2)
    assert ok.ok and not ok.message
    assert not bad.ok and bad.message.startswith("error: ") and "cannot build this one" in bad.message
    assert not results_dir.exists()  # builds write no records


def test_builds_happen_only_where_there_is_a_gpu(monkeypatch):
    built = []
    monkeypatch.setattr(builds, "build_all", lambda pairs, on_build=None: built.append(list(pairs)) or [])
    monkeypatch.setattr(builds, "has_gpu", lambda: False)
    assert builds.before_timing([("gemv", "v1")]) == [] and built == []
    monkeypatch.setattr(builds, "has_gpu", lambda: True)
    builds.before_timing([("gemv", "v1")])
    assert built == [[("gemv", "v1")]]


def test_re_measuring_builds_every_file_first(monkeypatch):
    """diff --measure and submit --best: the files named are built before the first round."""
    from harness.evaluator import session
    from harness.views import remeasure
    order = []
    monkeypatch.setattr(remeasure, "before_timing", lambda pairs, on_build=None: order.append(("build", pairs)))
    monkeypatch.setattr(session, "measure_interleaved", lambda subs, *a, **kw: order.append(("measure", len(subs)))
                        or {s.version: {0: [1.0, 1.0]} for s in subs})
    remeasure.measured_diff("gemv", ["v0", "v1"], "smoke", 2, "arena")
    assert [step for step, _ in order] == ["build", "measure"]
    assert [task for task, _ in order[0][1]] == ["gemv", "gemv"]
    assert [path.rsplit("/", 1)[-1] for _, path in order[0][1]] == ["v0.py", "v1.py"]
