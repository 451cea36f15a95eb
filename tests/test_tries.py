"""Tries, as a participant meets them: one file edited between runs, or two files of one name, are
separate tries in every view (`name@1a2b3c4`, newest first, "edited since"); `name@hash` picks a past try
in `diff` and runs it again from its kept copy; `--name` labels a try; a benchmark run ends with ×previous
against its name's previous try."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_views import H200, run, store
from test_json import check

from harness import sources
from harness.evaluator.session import RunSummary
from harness.submission import SUBMISSIONS, Submission, SubmissionError
from harness.views import tries
from harness.views.lineage import ViewError, lineage_table, per_shape_table
from harness.views.previous import previous_try
from reference.cases import leaderboards

ROOT = Path(__file__).resolve().parent.parent
OLD, NEW = "a1" * 32, "b2" * 32  # two contents of one name


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def flat(text: str) -> str:
    return " ".join(text.split())


def two_tries(results_dir, name="my_gemv"):
    """An older try (400 µs a shape) and a newer one (100 µs) of one name."""
    store(results_dir, run("gemv", name, "a", [400] * 3, sha256=OLD, ts="2026-11-22T08:00:00")
          + run("gemv", name, "b", [100] * 3, sha256=NEW, ts="2026-11-22T09:00:00"))


def test_two_files_of_one_name_are_two_tries_newest_first(results_dir):
    two_tries(results_dir)
    table = lineage_table("gemv").table
    mine = table[table["version"].str.startswith("my_gemv")]
    assert list(mine["version"]) == ["my_gemv@b2b2b2b", "my_gemv@a1a1a1a"]  # newest first, not pooled
    assert list(mine["runs"]) == [1, 1] and [round(g) for g in mine["geomean µs"]] == [100, 400]
    assert list(mine["idea"]) == ["(not in the lineage)", "edited since"]
    assert mine["spread %"].isna().all()  # one run each: no spread, where the pooled row had 300 %
    out = cli("list", "--task", "gemv")
    assert out.returncode == 0 and "my_gemv@b2b2b2b" in out.stdout and "edited since" in out.stdout


def test_a_try_is_the_code_less_its_module_docstring():
    from harness.submission import code_sha256
    code = 'import torch\n\n\ndef custom_kernel(data):\n    return data  # µs\n'
    measured = code_sha256('"""v3: one idea.\n\nMeasured: 1.02x of v2 (12.0 µs)."""\n' + code)
    assert measured == code_sha256('"""v3: one idea."""\n' + code)
    assert measured != code_sha256('"""v3: one idea."""\n' + code.replace("# µs", "# ns"))  # a comment is code
    assert code_sha256('x = 1\n"""not the module docstring"""\n') != code_sha256("x = 1\n")
    assert code_sha256("def broken(:\n") == code_sha256("def broken(:\n")  # hashed whole
    latin = '# -*- coding: latin-1 -*-\n"""' + "é" * 40 + '"""\nDELAY_S = {}  # pad\n'
    assert code_sha256(latin.format("0.002")) != code_sha256(latin.format("0.000"))  # read as Python would read it


def test_a_lineage_file_whose_docstring_was_edited_keeps_its_runs(results_dir, tmp_path, monkeypatch):
    folder = tmp_path / "gemv"
    folder.mkdir()
    body = (SUBMISSIONS / "gemv" / "v0.py").read_text()
    (folder / "v0.py").write_text(body)
    monkeypatch.setattr(tries, "SUBMISSIONS", tmp_path)
    store(results_dir, run("gemv", "v0", "a", [400] * 3, sha256=tries.code_of(folder / "v0.py")))
    (folder / "v0.py").write_text(body.replace('"""', '"""Measured: 400 µs a shape. ', 1))
    assert tries.label("gemv", "v0", tries.code_of(folder / "v0.py")) == "v0"
    assert tries.label("gemv", "v0", OLD) == "v0@a1a1a1a"


def test_a_lineage_file_edited_since_its_runs_shows_them_under_its_hash(results_dir):
    now = tries.code_of(SUBMISSIONS / "gemv" / "v0.py")
    store(results_dir, run("gemv", "v0", "a", [400] * 3, sha256=OLD) + run("gemv", "v1", "b", [100] * 3))
    table = lineage_table("gemv").table.set_index("version")
    assert table.loc["v0", "runs"] == 0 and table.loc["v0@a1a1a1a", "runs"] == 1
    assert table.loc["v0@a1a1a1a", "idea"] == "edited since" and table.loc["v0@a1a1a1a", "parent"] == "-"
    assert table.loc["v1", "parent"] == "v0@a1a1a1a"  # v0 has no runs as it is now: its try stands in, named
    assert math.isclose(table.loc["v1", "×parent"], 4)
    rows = {r["version"]: r for r in lineage_table("gemv").as_json()["rows"]}  # the same under list --json's keys
    assert rows["v0@a1a1a1a"]["idea"] == "edited since" and rows["v0@a1a1a1a"]["parent"] is None
    assert rows["v1"]["parent"] == "v0@a1a1a1a" and math.isclose(rows["v1"]["speedup_vs_parent"], 4)
    store(results_dir, run("gemv", "v0", "c", [200] * 3, sha256=now))
    table = lineage_table("gemv").table.set_index("version")
    assert table.loc["v0", "runs"] == 1 and table.loc["v1", "parent"] == "v0"
    assert math.isclose(table.loc["v1", "×parent"], 2)
    assert list(table.index[:2]) == ["v0", "v0@a1a1a1a"]  # the earlier content right after the version


def test_name_at_hash_picks_the_older_try_in_diff(results_dir):
    two_tries(results_dir)
    view = per_shape_table("gemv", ["my_gemv@a1a1", "my_gemv"])
    assert list(view.runs) == ["my_gemv@a1a1a1a", "my_gemv@b2b2b2b"]  # a bare name: its newest try
    assert list(view.table["my_gemv@a1a1a1a mean µs"][:3]) == [400] * 3
    assert list(view.table["my_gemv@b2b2b2b mean µs"][:3]) == [100] * 3
    out = cli("diff", "--task", "gemv", "my_gemv@A1A1A1", "my_gemv@b2b2")
    assert out.returncode == 0, out.stderr
    assert "my_gemv@a1a1a1a (1 run) vs my_gemv@b2b2b2b (1 run)" in flat(out.stdout)


def test_a_hash_prefix_must_pick_exactly_one_try(results_dir):
    store(results_dir, run("gemv", "k", "a", [400] * 3, sha256="abcd1" + "0" * 59)
          + run("gemv", "k", "b", [100] * 3, sha256="abcd2" + "0" * 59))
    with pytest.raises(ViewError, match=r"several tries of k have a hash starting abcd .*give more of it"):
        per_shape_table("gemv", ["k@abcd"])
    with pytest.raises(ViewError, match=r"no try of k has a hash starting ffff; its tries, newest first"):
        per_shape_table("gemv", ["k@ffff"])
    with pytest.raises(ViewError, match="at least 4 hex digits"):
        per_shape_table("gemv", ["k@abc"])
    assert list(per_shape_table("gemv", ["k@abcd2"]).runs) == ["k@abcd200"]


def test_a_past_try_runs_again_from_its_kept_copy(results_dir, tmp_path):
    from rich.console import Console

    import run as run_py
    path = tmp_path / "my_gemv.py"
    path.write_text("# first\n")
    first = tries.code_of(path)
    sources.keep(path, first)
    store(results_dir, [{**r, "submission": str(path)} for r in run("gemv", "my_gemv", "a", [400] * 3, sha256=first)])
    path.write_text("# second\n")
    sub = tries.resolve(f"my_gemv@{first[:4]}", "gemv", leaderboards())
    assert sub.version == "my_gemv" and sub.sha256 == first and sub.path.read_text() == "# first\n"
    assert sub.path != path  # the file itself holds the second content now
    console = Console(record=True, width=200)
    run_py.show_precheck(sub, console)  # the copy is named by its hash: the run names it by the try's name
    assert console.export_text().startswith("static pre-check of my_gemv's kept copy: ")
    sources.folder().joinpath(f"{first}.py").unlink()
    with pytest.raises(SubmissionError, match="no copy of it was kept"):
        tries.resolve(f"my_gemv@{first[:4]}", "gemv", leaderboards())
    with pytest.raises(SubmissionError, match="no try of my_gemv has a hash starting ffff"):
        tries.resolve("my_gemv@ffff", "gemv", leaderboards())


def test_measure_shows_each_try_by_its_hash(results_dir, tmp_path, monkeypatch):
    import harness.evaluator.session
    from click.testing import CliRunner
    from run import cli as main
    path = tmp_path / "my_gemv.py"
    path.write_text("# first\n")
    first = tries.code_of(path)
    sources.keep(path, first)
    store(results_dir, [{**r, "submission": str(path)} for r in
                        run("gemv", "my_gemv", "a", [400, 400], gpu="cpu", kind="smoke", sha256=first)])
    path.write_text("# second\n")
    second = tries.code_of(path)
    calls = []

    def measured(subs, shapes, rounds, on_round=None, timing="arena", on_fail=None):
        calls.append([(s.version, s.sha256, s.path.read_text()) for s in subs])
        return {s.version: {0: [200.0, 201.0], 1: [300.0, 299.0]} for s in subs}
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved", measured)
    out = CliRunner().invoke(main, ["diff", "--task", "gemv", "--measure", "--rounds", "2", f"my_gemv@{first[:4]}",
                                    str(path), str(path)])
    assert out.exit_code == 0, out.output
    assert calls == [[(f"my_gemv@{first[:7]}", first, "# first\n"), (f"my_gemv@{second[:7]}#1", second, "# second\n"),
                      (f"my_gemv@{second[:7]}#2", second, "# second\n")]]  # the same file twice: two entries


def test_keep_copies_only_the_content_its_hash_names(results_dir, tmp_path):
    path = tmp_path / "k.py"
    path.write_text("x = 1\n")
    sources.keep(path, "0" * 64)  # edited since its hash was taken: nothing to keep
    assert sources.kept("0" * 64) is None
    sources.keep(path, tries.code_of(path))
    assert sources.kept(tries.code_of(path)).read_text() == "x = 1\n"


def test_name_labels_a_try_and_keeps_the_lineage_names(tmp_path):
    path = tmp_path / "my_gemv.py"
    path.write_text("# a kernel\n")
    assert tries.resolve(str(path), "gemv", leaderboards(), "tiles-128").version == "tiles-128"
    for bad in ("v3", "a@b", "-x", ""):
        with pytest.raises(SubmissionError, match="--name"):
            tries.resolve(str(path), "gemv", leaderboards(), bad)


def summary(task, name, sha, means_us, gpu=H200, run_id="now"):
    records = run(task, name, run_id, means_us, sha256=sha, gpu=gpu, ts="2026-11-23T08:00:00")
    return RunSummary(Submission(Path("x.py"), task, name, sha, sha), "benchmark", "contest", "arena", records,
                      {"name": gpu})


def test_a_run_is_compared_with_its_names_previous_try(results_dir):
    two_tries(results_dir)
    third = "c3" * 32
    compared = previous_try([summary("gemv", "my_gemv", third, [50, 200, 100])])
    assert compared.now == "my_gemv@c3c3c3c" and compared.previous == "my_gemv@b2b2b2b"  # the newest other content
    assert [r["speedup_vs_previous"] for r in compared.rows] == [2.0, 0.5, 1.0]
    assert [(r["previous_runs"], r["now_runs"]) for r in compared.rows] == [(1, 1)] * 3
    assert math.isclose(compared.geomean["speedup_vs_previous"], 1.0)
    data = json.loads(json.dumps(compared.as_json()))
    assert data["label"] == "my_gemv@b2b2b2b" and data["code_sha256"] == NEW and data["this_try"] == "my_gemv@c3c3c3c"
    assert data["shapes"][0] == {"index": 0, "shape": data["shapes"][0]["shape"], "previous_ns": 100_000.0,
                                 "previous_runs": 1, "now_ns": 50_000.0, "now_runs": 1,
                                 "speedup_vs_previous": 2.0}
    assert "×previous" in compared.table().columns and "no interval" in compared.note()
    assert "diff --task gemv --measure" not in compared.note()  # no copy of the previous try is kept to measure


def test_no_previous_try_means_nothing_to_compare(results_dir):
    two_tries(results_dir)
    assert previous_try([summary("gemv", "other", NEW, [50] * 3)]) is None  # another name
    assert previous_try([summary("gemv", "my_gemv", "c3" * 32, [50] * 3, gpu="NVIDIA H100")]) is None  # another GPU
    store(results_dir, run("gemv", "solo", "s", [80] * 3, sha256=NEW))
    assert previous_try([summary("gemv", "solo", NEW, [50] * 3)]) is None  # the same content run again


@pytest.mark.slow
def test_edit_and_run_again_shows_times_previous(results_dir, tmp_path):
    """The user story: run a file, edit it, run it again; then run the first try again and label a try."""
    path = tmp_path / "my_gemv.py"
    path.write_text((SUBMISSIONS / "gemv" / "v0.py").read_text())
    first = tries.code_of(path)
    args = ["--task", "gemv", "--mode", "benchmark", "--case", "1"]
    out = cli(str(path), *args)
    assert out.returncode == 0, out.stderr
    assert "previous try" not in out.stdout
    path.write_text(path.read_text() + "# edited\n")
    second = tries.code_of(path)
    out = cli(str(path), *args, "--json")
    assert out.returncode == 0, out.stderr
    bench = check("run", out.stdout)[-1]  # previous_try as docs/json.md has it
    assert bench["previous_try"]["label"] == f"my_gemv@{first[:7]}"
    assert bench["previous_try"]["this_try"] == f"my_gemv@{second[:7]}"
    shapes = bench["previous_try"]["shapes"]
    assert [s["index"] for s in shapes] == [1] and shapes[0]["speedup_vs_previous"] > 0
    assert shapes[0]["now_runs"] == 1
    assert "×previous" in out.stderr and f"against its previous try my_gemv@{first[:7]}" in flat(out.stderr)
    out = cli("--submission", f"my_gemv@{first[:5]}", *args, "--json")  # the first try, from its kept copy
    assert out.returncode == 0, out.stderr
    bench = json.loads(out.stdout)[-1]
    assert {r["code_sha256"] for r in bench["records"]} == {first} and bench["version"] == "my_gemv"
    assert bench["previous_try"]["label"] == f"my_gemv@{second[:7]}"
    out = cli(str(path), *args, "--name", "tiles", "--json")
    bench = json.loads(out.stdout)[-1]
    assert out.returncode == 0 and bench["version"] == "tiles" and bench["previous_try"] is None
    assert {r["version"] for r in bench["records"]} == {"tiles"}


def test_two_codes_sharing_the_shown_digits_are_still_two_tries(results_dir):
    """Labels grow past 7 hex digits where two codes of one name share them (found by an attack round: 2^28
    tries make such a pair), so views never pool the two."""
    a, b = "dda8b31" + "a" * 57, "dda8b31" + "b" * 57
    store(results_dir, run("gemv", "my_kernel", "a", [1000] * 3, sha256=a, ts="2026-11-22T08:00:00")
          + run("gemv", "my_kernel", "b", [6000] * 3, sha256=b, ts="2026-11-22T09:00:00"))
    table = lineage_table("gemv").table
    mine = table[table["version"].str.startswith("my_kernel")]
    assert list(mine["version"]) == ["my_kernel@dda8b31b", "my_kernel@dda8b31a"]
    assert list(mine["runs"]) == [1, 1]
    compared = previous_try([summary("gemv", "my_kernel", "dda8b31" + "c" * 57, [500] * 3)])
    assert compared.now == "my_kernel@dda8b31c" and compared.previous == "my_kernel@dda8b31b"


def test_diff_of_two_tries_sets_each_against_the_first(results_dir):
    """Two tries of a file have no parent and no v0: diff gives them the ratio diff --measure gives, ×<first>."""
    two_tries(results_dir)
    view = per_shape_table("gemv", ["my_gemv@a1a1", "my_gemv"])
    assert list(view.table["my_gemv@b2b2b2b ×my_gemv@a1a1a1a"]) == [4.0] * 4  # three shapes and the geomean
    assert "my_gemv@a1a1a1a ×my_gemv@a1a1a1a" not in view.table.columns
    assert view.as_json()["geomean"][1]["speedup_vs_first"] == 4.0


def test_submit_best_nominates_the_participants_own_tries(results_dir, tmp_path, monkeypatch):
    """A participant's tries with runs on this machine are candidates beside the lineage's versions: `list` names the
    fastest of them, and `submit --best` measures it again, under its label, and picks it. A try whose code is gone
    cannot run again, so it is neither, however fast its stored runs."""
    import harness.evaluator.session
    from harness.views import remeasure
    from harness.views.best import decide
    path = tmp_path / "my_gemv.py"
    path.write_text((SUBMISSIONS / "gemv" / "v0.py").read_text() + "# mine\n")
    mine = tries.code_of(path)
    sources.keep(path, mine)
    store(results_dir, run("gemv", "v0", "a", [400, 400], gpu="cpu", kind="smoke")
          + [{**r, "submission": str(path)} for r in run("gemv", "my_gemv", "b", [100, 100], gpu="cpu", kind="smoke",
                                                         sha256=mine, ts="2026-11-22T09:00:00")]
          + run("gemv", "my_gemv", "c", [50, 50], gpu="cpu", kind="smoke", sha256=OLD))  # no copy of it anywhere
    label = f"my_gemv@{mine[:7]}"
    listed = lineage_table("gemv", "cpu", kind="smoke")
    assert listed.body["fastest"] == label and listed.table.set_index("version").loc["my_gemv@a1a1a1a", "rank"] == 1
    monkeypatch.setattr(remeasure.device, "name", lambda: "cpu")
    nomination = remeasure.nominate("gemv", "smoke", "arena", 3)
    assert nomination.versions == [label, "v0"] and nomination.oldest_first == ["v0", label]
    calls = []

    def measured(subs, shapes, rounds, on_round=None, timing="arena", on_fail=None):
        calls.append([(s.version, s.code_sha256, s.path.read_text()) for s in subs])
        times = {label: [100.0, 101.0, 99.0], "v0": [400.0, 398.0, 405.0]}  # per round, on both shapes
        return {s.version: {0: times[s.version], 1: times[s.version]} for s in subs}
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved", measured)
    decision = remeasure.choose("gemv", nomination, "smoke", 3, "arena")
    assert decision.winner == label and calls[0][0] == (label, mine, path.read_text())
    assert tries.resolve(decision.winner, "gemv", leaderboards()).version == "my_gemv"  # submitted under its name
    tied = decide({v: {0: [100.0, 101.0, 99.0]} for v in (label, "v0")}, {}, nomination.oldest_first)
    assert tied.winner == "v0"  # a tie goes to the oldest: the lineage's version before a participant's try
