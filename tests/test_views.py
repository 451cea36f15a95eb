"""The views of stored results as a participant uses them: one timing method at a time, ranking by
the median over runs, errors that name what is stored, --json everywhere, charts a person can read,
paired intervals, `submit --best` decided by a fresh measurement, and the install."""
import json
import math
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures_views import H200, entry, run, store

from harness import results
from harness.protocol import timing_of
from harness.views import lineage
from harness.views.lineage import ViewError, lineage_table, per_shape_table, per_shape_table_found, versions

ROOT = Path(__file__).resolve().parent.parent
OLD = "a1" * 32  # a code hash of a file outside the lineage


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def flat(text: str) -> str:
    """Terminal output with its line wrapping undone."""
    return " ".join(text.split())


def test_timing_of_names_old_records_legacy():
    assert timing_of({"timing": "contest", "schema": 2}) == "contest"
    assert timing_of({"version": "v0"}) == "legacy"


def test_timing_of_tells_the_evaluators_clock_from_the_workers_events():
    assert timing_of({"timing": "arena", "schema": 8}) == "arena"
    assert timing_of({"timing": "arena", "schema": 7}) == "arena-worker"  # before the evaluator's clock


def test_dirty_flag_ignores_results(tmp_path):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)
    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "gemv.jsonl").write_text("{}\n")
    (tmp_path / "run.py").write_text("print(1)\n")
    git("add", ".")
    git("commit", "-qm", "init")
    (tmp_path / "results" / "gemv.jsonl").write_text("{}\n{}\n")  # a run appended a record
    assert results.repo_state(tmp_path)["dirty"] is False
    (tmp_path / "run.py").write_text("print(2)\n")
    assert results.repo_state(tmp_path)["dirty"] is True


def test_cpu_records_go_to_an_ignored_folder(monkeypatch):
    monkeypatch.delenv(results.RESULTS_ENV, raising=False)
    assert results.records_dir("cpu") == ROOT / "results" / "local"
    assert results.records_dir(H200) == ROOT / "results"
    ignored = subprocess.run(["git", "check-ignore", "-q", "results/local/gemv.jsonl"], cwd=ROOT)
    assert ignored.returncode == 0
    monkeypatch.setenv(results.RESULTS_ENV, "/tmp/elsewhere")
    assert results.records_dir("cpu") == Path("/tmp/elsewhere")


def test_views_read_local_cpu_records_too(results_dir):
    store(results_dir / "local", run("gemv", "v0", "a", [5.0, 6.0], gpu="cpu", kind="smoke"))
    view = lineage_table("gemv", kind="smoke")
    assert view.scope.gpu == "cpu" and view.runs == {"v0": 1}


def test_list_ranks_by_the_median_over_runs(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400, 400, 400]) + run("gemv", "v1", "b", [100, 100, 100])
          + run("gemv", "v1", "c", [110, 110, 110]) + run("gemv", "v1", "d", [900, 900, 900])  # one noisy run
          + run("gemv", "v2", "e", [120, 120, 120]))
    table = lineage_table("gemv").table.set_index("version")
    assert table.loc["v1", "rank"] == 1 and table.loc["v2", "rank"] == 2 and table.loc["v0", "rank"] == 3
    assert table.loc["v1", "runs"] == 3 and math.isclose(table.loc["v1", "geomean µs"], 110)
    assert math.isclose(table.loc["v1", "spread %"], 100 * (900 - 100) / 110)
    assert math.isnan(table.loc["v2", "spread %"])  # one run has no spread
    assert math.isclose(table.loc["v1", "×parent"], 400 / 110)
    out = cli("list", "--task", "gemv")
    assert out.returncode == 0, out.stderr
    assert "NVIDIA H200" in out.stdout and "arena timing" in out.stdout and "(5 runs)" in out.stdout
    assert "fastest by stored runs: v1 (3 runs)" in flat(out.stdout)


def test_list_says_why_a_version_has_no_runs(results_dir):
    """A version whose newest run of its current code on this GPU did not pass: list names that run."""
    from harness.views.tries import current_code
    code = current_code("gemv", "v2")
    failed = {**run("gemv", "v2", "f", [1])[0], "mode": "test", "status": "error", "stats": None,
              "message": "RuntimeError: no cluster of two CTAs fits\n--- traceback ---\nFile x", "code_sha256": code}
    store(results_dir, run("gemv", "v0", "a", [400] * 3) + run("gemv", "v1", "b", [100] * 3) + [failed]
          + [{**failed, "version": "v3", "code_sha256": "ab" * 32}])  # another code of v3: not its file's
    rows = {r["version"]: r for r in lineage_table("gemv").as_json()["rows"]}
    assert rows["v2"]["last_failure"] == {"status": "error", "mode": "test", "when": "2026-11-22",
                                          "message": "RuntimeError: no cluster of two CTAs fits"}
    assert rows["v3"]["last_failure"] is None and rows["v1"]["last_failure"] is None
    out = cli("list", "--task", "gemv")
    assert out.returncode == 0, out.stderr
    assert ("v2 has no runs here: its last run on NVIDIA H200 (test mode, 2026-11-22) ended error: RuntimeError: no "
            "cluster of two CTAs fits") in flat(out.stdout)
    store(results_dir, [{**failed, "status": "pass", "timestamp": "2026-11-23T08:00:00"}])  # passed since
    assert all(r["last_failure"] is None for r in lineage_table("gemv").as_json()["rows"])


def test_list_names_the_other_timings_of_a_version_without_runs_in_scope(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400] * 3) + run("gemv", "v1", "b", [100] * 3, timing="legacy")
          + run("gemv", "v1", "c", [100] * 3, timing="contest") + run("gemv", "v2", "d", [90] * 3, timing="legacy",
                                                                    gpu="NVIDIA H100 80GB HBM3"))
    rows = {r["version"]: r for r in lineage_table("gemv").as_json()["rows"]}
    assert rows["v1"]["other_timings"] in ("legacy (1 run), contest (1 run)", "contest (1 run), legacy (1 run)")
    assert rows["v0"]["other_timings"] is None and rows["v2"]["other_timings"] is None  # in scope; another GPU's
    out = cli("list", "--task", "gemv")
    assert out.returncode == 0, out.stderr
    assert "v1 has no arena-timed run on NVIDIA H200, only" in flat(out.stdout)


def test_views_compare_one_timing_method_and_name_the_others(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400] * 3, timing="legacy") + run("gemv", "v1", "b", [100] * 3,
                                                                              timing="legacy"))
    with pytest.raises(ViewError, match=r"no arena-timed runs of gemv on NVIDIA H200; stored: legacy \(2 runs\)"):
        lineage_table("gemv")
    out = cli("list", "--task", "gemv", "--timing", "arena")
    assert out.returncode == 1 and "pass --timing legacy" in flat(out.stderr)
    store(results_dir, run("gemv", "v1", "c", [50] * 3, timing="contest"))
    legacy = lineage_table("gemv", timing="legacy").table.set_index("version")
    contest = lineage_table("gemv", timing="contest").table.set_index("version")
    assert math.isclose(legacy.loc["v1", "geomean µs"], 100) and math.isclose(contest.loc["v1", "geomean µs"], 50)
    assert contest.loc["v0", "runs"] == 0  # v0 was never contest-timed: not compared across methods


@pytest.mark.slow
def test_unknown_gpu_and_version_are_errors_that_list_the_known_ones(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400] * 3) + run("gemv", "v1", "b", [100] * 3))
    out = cli("list", "--task", "gemv", "--gpu", "H100")
    assert out.returncode == 1 and "stored GPUs: NVIDIA H200 (2 runs)" in flat(out.stderr)
    assert cli("list", "--task", "gemv", "--gpu", "h200").returncode == 0  # a unique part of the name
    out = cli("diff", "--task", "gemv", "v0", "v99")
    assert out.returncode == 1 and "unknown version of gemv: v99; known: v0, v1" in flat(out.stderr)
    out = cli("diff", "--task", "gemv", "v0", "v2")  # in the lineage, never measured here
    assert out.returncode == 1 and "no complete arena-timed run of v2" in flat(out.stderr)


def test_a_gpu_user_is_pointed_at_smoke_runs(results_dir, monkeypatch):
    store(results_dir / "local", run("gemv", "v0", "a", [5.0, 6.0], gpu="cpu", kind="smoke"))
    monkeypatch.setattr(lineage, "this_machine", lambda: (H200, "benchmarks"))
    with pytest.raises(ViewError, match=r"stored \(cpu \(1 run\)\): add --smoke"):
        lineage_table("gemv", gpu="cpu", kind=None)
    assert lineage_table("gemv", gpu="cpu", kind="smoke").runs == {"v0": 1}


def test_views_default_to_this_machines_runs(results_dir, monkeypatch):
    """The committed H200 runs outnumber this CPU machine's smoke runs of a file: list, diff and plot still read this
    machine's; a name with runs only elsewhere is told where they are and how to see them, never "unknown"."""
    store(results_dir, run("gemv", "v0", "a", [400] * 3) + run("gemv", "v1", "b", [100] * 3)
          + run("gemv", "v1", "c", [110] * 3))
    store(results_dir / "local", run("gemv", "my_kernel", "d", [5.0, 6.0], gpu="cpu", kind="smoke", sha256=OLD)
          + run("gemv", "v0", "e", [9.0, 9.0], gpu="cpu", kind="smoke"))
    monkeypatch.setattr(lineage, "this_machine", lambda: ("cpu", "smoke"))
    view = lineage_table("gemv", kind=None)
    assert (view.scope.gpu, view.scope.kind) == ("cpu", "smoke") and set(view.runs) == {"v0", "my_kernel@a1a1a1a"}
    assert list(per_shape_table_found("gemv", ["v0", "my_kernel"]).runs) == ["v0", "my_kernel@a1a1a1a"]
    with pytest.raises(ViewError) as told:
        per_shape_table_found("gemv", ["v1", "my_kernel"])
    said = flat(str(told.value))
    assert "unknown" not in said and "no complete arena-timed run of v1 on cpu (smoke shapes)" in said
    assert "v1 has runs on NVIDIA H200 (contest shapes, 2 arena-timed runs): add --gpu 'NVIDIA H200'" in said
    monkeypatch.setattr(lineage, "this_machine", lambda: (H200, "benchmarks"))  # on the H200 itself: its runs
    assert lineage_table("gemv", kind=None).scope.gpu == H200
    with pytest.raises(ViewError, match=r"my_kernel has runs on cpu \(smoke shapes, 1 arena-timed run\): add --smoke"):
        per_shape_table("gemv", ["v0", "my_kernel"], kind=None)
    with pytest.raises(ViewError, match="unknown version of gemv: nobody"):
        per_shape_table("gemv", ["nobody"], kind=None)
    monkeypatch.setattr(lineage, "this_machine", lambda: ("NVIDIA B200", "benchmarks"))  # no runs here: the most runs
    assert lineage_table("gemv", kind=None).scope.gpu == H200


def test_cpu_tables_show_the_median_and_rank_by_it(results_dir):
    store(results_dir, run("gemv", "v0", "a", [6038, 500], gpu="cpu", kind="smoke", median_us=411)
          + run("gemv", "v1", "b", [450, 450], gpu="cpu", kind="smoke"))
    view = per_shape_table("gemv", ["v0", "v1"], kind="smoke")
    assert view.scope.statistic == "median"
    first = view.table.iloc[0]
    assert math.isclose(first["v0 mean µs"], 6038) and math.isclose(first["v0 median µs"], 411)
    assert math.isclose(first["v1 ×v0"], 411 / 450)  # ratios on the median, not the outlier-ridden mean
    out = cli("diff", "--task", "gemv", "--smoke", "v0", "v1")
    assert out.returncode == 0 and "v0 median µs" in out.stdout and "411.00" in out.stdout
    assert "on cpu" not in out.stdout and "cpu, arena timing" in out.stdout


def test_per_shape_views_show_host_time_and_host_bound_flags(results_dir):
    store(results_dir, [r | {"host_bound": r["index"] == 1} for r in
                        run("gemv", "v0", "a", [40, 50, 60], host_us=30)])
    table = per_shape_table("gemv", ["v0"]).table
    assert [round(x, 6) for x in table["v0 host µs"][:3]] == [30, 30, 30]
    assert list(table["v0 host-bound"][:3]) == ["no", "yes", "no"]
    store(results_dir, run("gemv", "v1", "b", [40, 50, 60]))  # older records: no such columns
    assert not any("host" in c for c in per_shape_table("gemv", ["v1"]).table.columns)


@pytest.mark.slow
def test_json_on_every_view(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400] * 3) + run("gemv", "v1", "b", [100] * 3))
    results.append(results_dir / "leaderboard.jsonl", entry("gemv", "v1", 100))
    listing = json.loads(cli("list", "--task", "gemv", "--json").stdout)
    assert listing["gpu"] == H200 and listing["timing"] == "arena" and listing["runs"] == 2
    assert [r["version"] for r in listing["rows"] if r["rank"] == 1] == ["v1"]
    diff = json.loads(cli("diff", "--task", "gemv", "v0", "v1", "--json").stdout)
    assert math.isclose(diff["geomean"][1]["speedup_vs_v0"], 4.0) and len(diff["rows"]) == 3
    board = json.loads(cli("leaderboard", "--json").stdout)
    assert board["rows"][0]["version"] == "v1" and board["timing"] == "arena"
    assert json.loads(cli("--json", "leaderboard").stdout) == board  # the option before the command counts too
    plots = json.loads(cli("plot", "--task", "gemv", "--json").stdout)
    assert all(Path(p).exists() for p in plots["paths"])
    pages = json.loads(cli("report", "--json").stdout)
    assert pages[0]["gpu"] == H200 and Path(pages[0]["path"]).exists()
    out = cli("--mode", "test", "leaderboard")
    assert out.returncode == 2 and "--mode is not an option of `leaderboard`" in out.stderr


@pytest.mark.slow
def test_leaderboard_filters_by_gpu_and_timing(results_dir):
    for e in (entry("gemv", "v1", 100), entry("gemv", "v2", 90, gpu="NVIDIA H100 80GB HBM3"),
              entry("gemv", "v0", 400, timing="legacy")):
        results.append(results_dir / "leaderboard.jsonl", e)
    out = cli("leaderboard", "--gpu", "H100")
    assert out.returncode == 0 and "NVIDIA H100 80GB HBM3, arena timing, 1 entry" in out.stdout
    out = cli("leaderboard", "--timing", "contest")  # an empty board of that method, and where the others are
    assert out.returncode == 0 and "0 entries" in out.stdout and "arena (2 entries), legacy (1 entry)" in flat(out.stdout)
    empty = subprocess.run([sys.executable, str(ROOT / "run.py"), "leaderboard", "--json"], capture_output=True, text=True,
                           cwd=ROOT, timeout=120, env={**os.environ, "NVFP4_ARENA_RESULTS": str(results_dir / "none")})
    assert empty.returncode == 0 and json.loads(empty.stdout)["entries"] == 0  # a fresh clone's board
    out = cli("leaderboard", "--gpu", "B200")
    assert out.returncode == 1 and "NVIDIA H200 (2 entries)" in flat(out.stderr)


def test_leaderboard_ranks_arena_entries_of_the_current_method_unless_asked(results_dir):
    from harness.views.standings import standings
    for e in (entry("gemv", "v12", 31.5), entry("gemv", "v12", 30.7, schema=7), entry("gemv", "v11", 30.0, schema=None),
              entry("gemv", "v9", 35.0, timing="contest", schema=5)):
        results.append(results_dir / "leaderboard.jsonl", e)
    board = standings("gemv")
    assert [(r["version"], r["rank"]) for r in board.rows] == [("v12", 1)]  # the evaluator's clock only
    assert board.rows[0]["geomean_ns"] == 31.5e3
    worker = standings("gemv", timing="arena-worker")  # the worker's events, refilled entries only
    assert [r["geomean_ns"] for r in worker.rows] == [30.7e3]
    assert "left out: 1 arena-worker entry from before record schema 7" in worker.note
    every = standings("gemv", timing="arena-worker", all_schemas=True)
    assert [r["geomean_ns"] for r in every.rows] == [30.0e3, 30.7e3] and not every.note
    assert [r["version"] for r in standings("gemv", timing="contest").rows] == ["v9"]  # the contest loop never changed
    results_dir.joinpath("leaderboard.jsonl").unlink()
    results.append(results_dir / "leaderboard.jsonl", entry("gemv", "v12", 30.7, schema=6))
    only_old = standings("gemv", timing="arena-worker")
    assert only_old.rows == [] and "--all-schemas" in only_old.note


@pytest.mark.slow
def test_plots_keep_one_file_per_gpu_timing_and_shape_set(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400, 500, 600]) + run("gemv", "v1", "b", [90, 80, 70])
          + run("gemv", "v0", "c", [900, 800], gpu="cpu", kind="smoke"))
    contest = json.loads(cli("plot", "--task", "gemv", "--gpu", "H200", "--json").stdout)["paths"]
    smoke = json.loads(cli("plot", "--task", "gemv", "--smoke", "--json").stdout)["paths"]
    names = sorted(Path(p).name for p in contest + smoke)
    assert names == ["gemv_cpu_arena_smoke_lineage.png", "gemv_cpu_arena_smoke_roofline.png",
                     "gemv_h200_arena_benchmarks_lineage.png", "gemv_h200_arena_benchmarks_roofline.png"]
    for p in contest + smoke:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(Path(p).parent == results_dir / "local" / "plots" for p in contest + smoke)  # charts stay untracked


def boxes(texts, renderer):
    return [t.get_window_extent(renderer) for t in texts if t.get_text()]


def disjoint(extents) -> bool:
    return all(not a.overlaps(b) for i, a in enumerate(extents) for b in extents[i + 1:])


def test_lineage_chart_of_27_versions_is_readable(results_dir):
    from harness.views.lineage import scoped
    from harness.views.plots import DPI, lineage_figure
    names = [v.name for v in versions("group_gemm")]
    assert len(names) >= 27
    store(results_dir, [r for k, name in enumerate(names) for r in
                        run("group_gemm", name, f"r{k}", [300 / (k + 1), 200 / (k + 1), 90, 40])])
    scope, df = scoped("group_gemm")
    fig = lineage_figure(scope, df)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.get_size_inches() * DPI
    assert width <= 1400 and height <= 1400
    axes = fig.get_axes()
    assert len(axes) == 1 + 4  # the geomean panel and one per shape
    assert axes[0].get_title(loc="left").startswith("geomean over 4 shapes")
    for ax in axes:
        ticks = ax.get_xticklabels()
        assert [t.get_text() for t in ticks] == names
        assert all(t.get_fontsize() >= 8 for t in ticks)
        assert disjoint(boxes(ticks, renderer)), ax.get_title(loc="left")


def test_lineage_chart_with_earlier_contents_is_readable(results_dir):
    """Every third version also has runs of an earlier content: its try label (vN@1a2b3c4) follows it."""
    from harness.views.lineage import scoped
    from harness.views.plots import lineage_figure
    names = [v.name for v in versions("group_gemm")]
    store(results_dir, [r for k, name in enumerate(names) for r in
                        run("group_gemm", name, f"r{k}", [300 / (k + 1), 200 / (k + 1), 90, 40])]
          + [r for k, name in enumerate(names[::3]) for r in
             run("group_gemm", name, f"e{k}", [310 / (3 * k + 1), 210, 95, 41], sha256=f"{k:02x}" * 32)])
    scope, df = scoped("group_gemm")
    fig = lineage_figure(scope, df)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    shown = [t.get_text() for t in fig.get_axes()[0].get_xticklabels()]
    assert shown[:3] == [names[0], "v0@0000000", names[1]] and len(shown) == len(names) + len(names[::3])
    for ax in fig.get_axes():
        ticks = ax.get_xticklabels()
        assert all(t.get_fontsize() >= 8 for t in ticks)
        assert disjoint(boxes(ticks, renderer)), ax.get_title(loc="left")


def test_roofline_labels_do_not_overlap_or_leave_the_figure(results_dir):
    from harness.views.lineage import scoped
    from harness.views.plots import roofline_figure
    store(results_dir, run("group_gemm", "v0", "a", [100, 100, 100, 100]))  # four points almost on top of each other
    scope, df = scoped("group_gemm")
    fig = roofline_figure(scope, df)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in fig.axes[0].texts if re.match(r"\d: ", t.get_text())]
    assert len(labels) == 4
    extents = boxes(labels, renderer)
    assert disjoint(extents)
    assert all(fig.bbox.x0 <= e.x0 and e.x1 <= fig.bbox.x1 and fig.bbox.y0 <= e.y0 and e.y1 <= fig.bbox.y1
               for e in extents)


def test_spread_labels_keeps_the_gap_and_the_bounds():
    from harness.views.plots import spread_labels
    placed = spread_labels([0.5, 0.5, 0.51, 0.99, 0.2], 0.1)
    ordered = sorted(placed)
    assert all(b - a >= 0.1 - 1e-12 for a, b in zip(ordered, ordered[1:]))
    assert 0 <= min(placed) and max(placed) <= 1
    assert placed[4] == 0.2  # a label with room stays where its point is


def test_paired_interval_cancels_drift_between_rounds():
    from harness.views.compare import ratio_ci, verdict
    base, other = [100.0, 200.0, 300.0], [90.0, 181.0, 269.0]  # the machine drifted 3x over the rounds
    point, low, high = ratio_ci(base, other)
    assert 1.0 < low <= point <= high < 1.2 and verdict(point, low, high).endswith("faster")
    point, low, high = ratio_ci([100.0, 101.0, 99.0], [100.5, 100.0, 99.8])
    assert low < 1.0 < high and verdict(point, low, high) == "no significant difference"
    assert verdict(*ratio_ci([100.0], [90.0])) == "one round: no interval"
    with pytest.raises(ValueError, match="paired"):
        ratio_ci([1.0, 2.0], [1.0])


def test_paired_interval_is_students_t_on_log_ratios():
    """Four rounds of two shapes: per round the mean log ratio over the shapes is 0.052680, 0.055158, 0.026953 and
    0.077266 (mean 0.053014, sample deviation 0.020592); Student's t for three degrees of freedom at 97.5% is 3.182446,
    so the interval is exp(0.053014 -+ 3.182446 x 0.020592 / 2) = 1.02045 to 1.08957, about 1.05444."""
    from harness.views.compare import geomean_ratio_ci
    base = [[100.0, 104.0, 98.0, 101.0], [50.0, 51.0, 49.0, 52.0]]
    other = [[90.0, 95.0, 91.0, 90.0], [50.0, 50.0, 50.0, 50.0]]
    interval = geomean_ratio_ci(base, other)
    assert interval.point == pytest.approx(1.054445, abs=1e-5)
    assert interval.low == pytest.approx(1.020455, abs=1e-5) and interval.high == pytest.approx(1.089567, abs=1e-5)


def test_compare_has_no_hand_typed_quantile_table():
    source = (ROOT / "harness" / "views" / "compare.py").read_text()
    assert "scipy" in source and "12.71" not in source and "T975" not in source


def test_best_is_decided_by_the_interval_and_a_tie_goes_to_the_oldest():
    from harness.views.best import decide
    clear = decide({"v18": {0: [60.0, 61.0, 59.0], 1: [30.0, 31.0, 29.0]},
                    "v25": {0: [50.0, 51.0, 49.5], 1: [25.0, 26.0, 24.0]}})
    assert clear.winner == clear.fastest == "v25" and clear.tied == ["v25"]
    tie = decide({"v25": {0: [60.0, 61.0, 59.0], 1: [30.0, 31.0, 29.0]},
                  "v18": {0: [60.2, 60.1, 59.5], 1: [30.1, 30.6, 29.3]},
                  "v3": {0: [90.0, 91.0, 92.0], 1: [40.0, 41.0, 40.0]}})
    assert sorted(tie.tied) == ["v18", "v25"] and tie.winner == "v18" and "tied" in tie.explain()
    assert [s.verdict for s in tie.standings][-1].startswith("slower")


def test_a_decision_without_its_failed_pick_is_made_again_on_the_same_measurement():
    """v3 is clearly fastest; v5 and v1 are slower and tied with each other. Once v3 fails leaderboard mode, the
    decision is made again without it: v5 is now the fastest, tied with v1, so the older v1 is picked."""
    from harness.views.best import decide
    first = decide({"v3": {0: [100.0, 100.4, 99.7, 100.2, 99.9]}, "v5": {0: [110.0, 111.0, 109.0, 110.5, 109.5]},
                    "v1": {0: [110.2, 109.4, 111.1, 109.8, 110.6]}})
    assert first.winner == first.fastest == "v3"
    again = first.without("v3", "failed leaderboard mode (fail: mismatch)")
    assert (again.fastest, again.winner, sorted(again.tied)) == ("v5", "v1", ["v1", "v5"])
    assert [s.version for s in again.standings] == ["v5", "v1"] and list(again.excluded) == ["v3"]
    assert again.explain().startswith("v5, v1 are tied") or again.explain().startswith("v1, v5 are tied")
    assert again.without("v1", "failed").without("v5", "failed") is None
    with pytest.raises(ValueError):
        again.without("v3", "failed")


def test_submit_best_measures_the_candidates_again(results_dir, monkeypatch):
    """Stored runs put v1 first by one run; measured again, v0 and v1 tie, so the older v0 is submitted."""
    import harness.evaluator.session
    from run import cli as main
    store(results_dir, run("gemv", "v1", "a", [100, 100], gpu="cpu", kind="smoke")
          + run("gemv", "v0", "b", [400, 400], gpu="cpu", kind="smoke")
          + run("gemv", "v2", "c", [900, 900], gpu="cpu", kind="smoke"))
    calls = []

    def measured(subs, shapes, rounds, on_round=None, timing="arena", on_fail=None):
        calls.append(([s.version for s in subs], shapes, rounds, timing))
        return {s.version: {0: [200.0, 201.0, 199.0], 1: [300.0, 299.0, 302.0]} for s in subs}
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved", measured)
    out = CliRunner().invoke(main, ["submit", "--task", "gemv", "--best", "--candidates", "2", "--rounds", "3",
                                    "--timing", "arena", "--seed", "1"])
    assert out.exit_code == 0, out.output
    assert calls == [(["v1", "v0"], "smoke", 3, "arena")]
    assert "v0, v1 are tied" in flat(out.output) or "v1, v0 are tied" in flat(out.output)
    board = results.read(results_dir / "leaderboard.jsonl")
    assert [e["version"] for e in board] == ["v0"] and board[0]["timing"] == timing_of(board[0])


def test_submit_best_leaves_out_a_candidate_that_fails_a_round(results_dir, monkeypatch):
    """A verdict against one candidate in the re-measure leaves it out; the other is submitted, and the output and
    the JSON decision name what was left out and why."""
    import harness.evaluator.session
    from run import cli as main
    store(results_dir, run("gemv", "v1", "a", [100, 100], gpu="cpu", kind="smoke")
          + run("gemv", "v0", "b", [400, 400], gpu="cpu", kind="smoke"))

    def measured(subs, shapes, rounds, on_round=None, timing="arena", on_fail=None):
        on_fail("v1", "did not pass benchmark mode in round 2 (case 0): tampered: sample 7: a forged time")
        return {"v0": {0: [200.0, 201.0, 199.0], 1: [300.0, 299.0, 302.0]}}
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved", measured)
    out = CliRunner().invoke(main, ["submit", "--task", "gemv", "--best", "--candidates", "2", "--rounds", "3",
                                    "--seed", "1", "--json"])
    assert out.exit_code == 0, out.output
    assert "v1 left out: it did not pass benchmark mode in round 2" in flat(out.output)
    decision = json.loads(out.stdout[out.stdout.index("{"):])["decision"]
    assert decision["winner"] == "v0" and [e["version"] for e in decision["excluded"]] == ["v1"]
    assert [e["version"] for e in results.read(results_dir / "leaderboard.jsonl")] == ["v0"]

    def all_failed(subs, shapes, rounds, on_round=None, timing="arena", on_fail=None):
        for s in subs:
            on_fail(s.version, "did not start: error: no module named cutlass")
        return {}
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved", all_failed)
    out = CliRunner().invoke(main, ["submit", "--task", "gemv", "--best", "--candidates", "2", "--seed", "1"])
    assert out.exit_code == 1 and "every candidate failed" in flat(out.output)
    assert "nothing was submitted" in flat(out.output)
    assert len(results.read(results_dir / "leaderboard.jsonl")) == 1


@pytest.mark.slow
def test_submit_best_submits_the_next_candidate_when_its_pick_fails_leaderboard_mode(results_dir, monkeypatch,
                                                                                    tmp_path):
    """v0 and v1 tie, so v0 is picked; v0 (here a file that writes 1s) then fails leaderboard mode, so v1 (here v0's
    code, which runs on a CPU) is submitted, and the decision names v0 as left out. With no candidate left, nothing
    is submitted."""
    import harness.evaluator.session
    import run as run_py
    store(results_dir, run("gemv", "v1", "a", [100, 100], gpu="cpu", kind="smoke")
          + run("gemv", "v0", "b", [400, 400], gpu="cpu", kind="smoke"))
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved",
                        lambda subs, *a, **k: {s.version: {0: [200.0, 201.0, 199.0]} for s in subs})
    real_resolve, ran = run_py.resolve, []
    (tmp_path / "v1.py").write_text((ROOT / "submissions" / "gemv" / "v0.py").read_text())

    def resolving(failing):
        def resolve(text, task, boards):
            ran.append(text)
            path = ROOT / "tests" / "submissions" / "wrong.py" if text in failing else tmp_path / f"{text}.py"
            return real_resolve(str(path), task, boards)
        return resolve
    monkeypatch.setattr(run_py, "resolve", resolving({"v0"}))
    out = CliRunner().invoke(run_py.cli, ["submit", "--task", "gemv", "--best", "--candidates", "2", "--rounds", "3",
                                          "--seed", "1", "--json"])
    assert out.exit_code == 0, out.output
    assert ran == ["v0", "v1"]
    assert re.search(r"v0 failed leaderboard mode \(fail: .*mismatch.*\): submitting v1, the next candidate",
                     flat(out.output))
    decision = json.loads(out.stdout[out.stdout.index("{"):])["decision"]
    assert decision["winner"] == "v1" and [e["version"] for e in decision["excluded"]] == ["v0"]
    [entry] = results.read(results_dir / "leaderboard.jsonl")
    assert entry["version"].endswith("-v1")  # the file v1 resolved to, named after its folder

    ran.clear()
    monkeypatch.setattr(run_py, "resolve", resolving({"v0", "v1"}))
    out = CliRunner().invoke(run_py.cli, ["submit", "--task", "gemv", "--best", "--candidates", "2", "--seed", "1"])
    assert out.exit_code == 1 and ran == ["v0", "v1"] and "nothing was submitted" in flat(out.output)
    assert len(results.read(results_dir / "leaderboard.jsonl")) == 1


@pytest.mark.slow
def test_a_submission_file_as_the_first_argument(results_dir):
    out = cli(str(ROOT / "tests" / "submissions" / "segfault.py"), "--mode", "test", "--case", "0", "--no-record")
    assert out.returncode == 1 and "SIGSEGV" in out.stdout
    out = cli("my_kernel.py")
    assert out.returncode == 2 and "my_kernel.py: no such file" in flat(out.stderr)
    assert "No such command" not in out.stderr


def test_pyproject_installs_the_command():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["scripts"] == {"nvfp4-arena": "run:main"}
    tool = meta["tool"]["setuptools"]
    shipped = set(tool["py-modules"]) | set(tool["packages"])
    top_level = {p.stem for p in ROOT.glob("*.py")} | {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert top_level <= shipped, top_level - shipped
    assert tool["dynamic"]["dependencies"] == {"file": ["requirements.txt"]}
    needs = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert "click>=8.1" in needs and not [n for n in needs if n.startswith("torch")]  # never an unpinned torch
    from run import cli as main
    result = CliRunner().invoke(main, ["--help"], prog_name="nvfp4-arena")
    assert result.exit_code == 0 and "nvfp4-arena [OPTIONS] [FILE.py | COMMAND [ARGS]...]" in result.output


def test_readme_case_examples_exist_on_a_cpu():
    from reference.cases import cases
    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if "--case" in line and "run.py" in line]
    assert lines
    for line in lines:
        task = re.search(r"--task (\w+)", line).group(1)
        for index in re.findall(r"--case (\d+)", line):
            assert int(index) < len(cases(task, "smoke")), line


def test_errors_under_json_are_json_on_stdout(results_dir):
    """A usage error and a view's error both print {"error": ...} on stdout under --json, with their exit codes."""
    usage = subprocess.run([sys.executable, str(ROOT / "run.py"), "--json", "list", "--task", "nope"],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert usage.returncode == 2 and "'nope' is not one of" in json.loads(usage.stdout)["error"]
    view = subprocess.run([sys.executable, str(ROOT / "run.py"), "list", "--task", "gemv", "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert view.returncode == 1 and "no " in json.loads(view.stdout)["error"]


def test_leaderboard_names_each_entry_as_every_view_names_its_try(results_dir):
    from harness.submission import code_sha256
    from harness.views.standings import standings
    source = "import torch\n\n\ndef custom_kernel(data):\n    return data[-1]\n"
    results.append(results_dir / "leaderboard.jsonl", {**entry("gemv", "my_kernel", 100), "source": source})
    current = (ROOT / "submissions" / "gemv" / "v0.py").read_text()
    results.append(results_dir / "leaderboard.jsonl", {**entry("gemv", "v0", 400), "source": current})
    board = standings("gemv")
    assert list(board.table["try"]) == [f"my_kernel@{code_sha256(source)[:7]}", "v0"]
    assert "sha256" not in board.table.columns and [r["try"] for r in board.rows] == list(board.table["try"])


def test_a_cpu_chart_draws_no_speed_of_light(results_dir):
    from harness.views.lineage import scoped
    from harness.views.plots import lineage_figure
    store(results_dir, [{**r, "sol_ns": None} for r in run("gemv", "v0", "a", [5.0, 6.0], gpu="cpu", kind="smoke")])
    fig = lineage_figure(*scoped("gemv", "cpu", kind="smoke"))
    legends = [t.get_text() for ax in fig.get_axes() for t in ax.get_legend().get_texts()]
    assert legends and not [t for t in legends if "SOL" in t or "nan" in t]


def test_list_says_a_gpu_only_file_was_skipped_and_cuts_messages_at_a_word(results_dir):
    """The words the sweep uses for a GPU-only file on a machine without a GPU, and a long message cut between words."""
    from harness.protocol import NEEDS_GPU
    from harness.views.tries import current_code
    store(results_dir, run("gemv", "v0", "a", [5.0, 6.0], gpu="cpu", kind="smoke"))
    failed = {**run("gemv", "v1", "f", [1], gpu="cpu", kind="smoke")[0], "mode": "test", "status": "error",
              "stats": None, "code_sha256": current_code("gemv", "v1"),
              "message": f"submission failed to load: {NEEDS_GPU} (its kernels are built for one) and this machine "
                         f"has none: ModuleNotFoundError: No module named 'triton'"}
    long = {**failed, "version": "v2", "code_sha256": current_code("gemv", "v2"),
            "message": "RuntimeError: " + " ".join(["wordy"] * 60)}
    store(results_dir, [failed, long])
    rows = {r["version"]: r for r in lineage_table("gemv", "cpu", kind="smoke").as_json()["rows"]}
    assert (rows["v1"]["last_failure"]["status"], rows["v1"]["last_failure"]["message"]) == ("skipped", "needs a GPU")
    cut = rows["v2"]["last_failure"]["message"]
    assert cut.endswith("wordy…") and len(cut) <= 200 and rows["v2"]["last_failure"]["status"] == "error"
    store(results_dir, [{**failed, "gpu": {"name": H200, "cc": "9.0"}}])  # said on a GPU: the file's words, no fact
    assert lineage.last_failures("gemv", H200, ["v1"])["v1"]["status"] == "error"


def test_list_and_diff_read_the_older_method_where_a_scope_has_none_of_the_default(results_dir, monkeypatch):
    """A fresh clone holds only arena runs from before the evaluator's clock (arena-worker): without --timing, list and
    diff show them and say so; --timing arena asked for them explicitly is still an error that names what is stored."""
    from click.testing import CliRunner

    from run import cli as main
    store(results_dir, [{**r, "schema": 7} for r in run("gemv", "v0", "a", [400] * 3)
                        + run("gemv", "v1", "b", [100] * 3)])
    monkeypatch.setattr(lineage, "this_machine", lambda: ("cpu", "smoke"))
    view = lineage_table("gemv", timing=None, kind=None)
    assert (view.scope.gpu, view.scope.timing, view.runs) == (H200, "arena-worker", {"v0": 1, "v1": 1})
    with pytest.raises(ViewError, match="no arena-timed runs of gemv on NVIDIA H200; stored: arena-worker"):
        lineage_table("gemv", kind=None)
    listed = CliRunner().invoke(main, ["list", "--task", "gemv"])
    assert listed.exit_code == 0 and "no arena-timed runs here: these are arena-worker-timed" in flat(listed.output)
    compared = CliRunner().invoke(main, ["diff", "--task", "gemv", "v0", "v1", "--json"])
    assert compared.exit_code == 0 and json.loads(compared.stdout)["timing"] == "arena-worker"
    assert CliRunner().invoke(main, ["list", "--task", "gemv", "--timing", "arena"]).exit_code == 1
