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
