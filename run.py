"""nvfp4-arena command line: check, time and compare NVFP4 kernels the way the contest did.

    python run.py --task gemm --submission v0                 # test, then benchmark if tests pass
    python run.py --task gemm --submission v0 --mode leaderboard
    python run.py --submission path/to/file.py                 # task from its #!POPCORN header
    python run.py calibrate                                    # measure this GPU's ceilings
"""
import sys
from pathlib import Path

import click
from rich.console import Console

from harness import device, report, results, session
from harness.rules import TIMINGS
from harness.submission import SubmissionError, resolve
from reference import TASKS
from reference.cases import leaderboards, task_config

err_console = Console(stderr=True)


def fail(message: str, code: int = 2):
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    sys.exit(code)


def show_precheck(sub, console) -> list:
    from harness.precheck import scan
    findings = scan(sub.path)
    if not findings:
        console.print(f"static pre-check of {sub.path.name}: no known cheat patterns found", style="dim")
    for f in findings:
        console.print(f"[yellow]pre-check warning[/] {sub.path.name}:{f.line}: {f.why}: [dim]{f.text}[/]", highlight=False)
    return findings


def run_mode(sub, mode, shapes, timeout, record, secret_seed, console, only, guarded,
             timing="arena") -> session.RunSummary:
    record_to = results.results_dir() / f"{sub.task}.jsonl" if record else None
    with console.status(f"{sub.task} {sub.version}: {mode}") as status:
        def on_start(job):
            what = "warm-up" if not job.record else f"{job.kind} {job.index}"
            status.update(f"{sub.task} {sub.version} {mode}: {what} [{job.label}] ({job.values} values)")

        def on_progress(text):
            status.update(f"{status.status} — {text}" if " — " not in str(status.status)
                          else f"{str(status.status).split(' — ')[0]} — {text}")

        def on_record(rec):
            mark = "[green]pass[/]" if rec["status"] == "pass" else f"[red]{rec['status']}[/]"
            mean = rec["stats"]["mean"] / 1e3 if rec.get("stats") else None
            shown = f" {mean:,.2f} µs" if mean else ""
            console.print(f"  {rec['kind']} {rec['index']} {rec['shape']} ({rec['values']}): {mark}{shown}",
                          highlight=False)
        return session.execute(sub, mode, shapes, timeout, record_to, secret_seed, on_start, on_progress, on_record,
                               only, guarded, timing)


def run_ncu(sub, mode, shapes, timeout, only, console) -> int:
    """Profile mode under Nsight Compute; reports are also saved under results/profiles/."""
    from harness.ncu import find_ncu, profile_case
    from reference.cases import cases
    if mode not in (None, "profile"):
        fail("--ncu goes with --mode profile.")
    ncu = find_ncu()
    if ncu is None:
        fail("--ncu needs Nsight Compute (ncu), which is not installed here; plain --mode profile uses torch.profiler.")
    if not device.has_gpu():
        fail("--ncu needs a GPU.")
    kind = "benchmarks" if shapes == "contest" else "smoke"
    out_dir = results.results_dir() / "profiles"
    out_dir.mkdir(parents=True, exist_ok=True)
    worst = 0
    for case in cases(sub.task, kind):
        if only and case.index not in only:
            continue
        with console.status(f"ncu: {sub.task} {sub.version} {kind} {case.index} [{case.label}]"):
            code, text = profile_case(ncu, sub.task, sub.path, kind, case.index, timeout or 600)
        path = out_dir / f"{sub.task}_{sub.version}_{kind}{case.index}.ncu.txt"
        path.write_text(text)
        console.print(f"[bold]{case.label}[/] (saved to {path})")
        console.print(text, markup=False, highlight=False)
        worst = max(worst, 0 if code == 0 else 1)
    return worst


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--task", type=click.Choice(TASKS), help="Problem; optional when the file has a #!POPCORN leaderboard line.")
@click.option("--submission", "submission", help="Lineage version (v0, v23, ...) or a path to any submission file.")
@click.option("--mode", type=click.Choice(session.MODES), help="Default: test, then benchmark if every test passes.")
@click.option("--shapes", type=click.Choice(["auto", "contest", "smoke"]), default="auto", show_default=True,
              help="auto = the contest's shapes on a GPU, the tiny smoke shapes on a CPU.")
@click.option("--timeout", type=float, help="Seconds one case may take before its worker is killed (default per mode).")
@click.option("--case", "only", type=int, multiple=True, help="Run only the case with this index (repeatable).")
@click.option("--no-record", is_flag=True, help="Do not append records to results/.")
@click.option("--seed", "secret_seed", type=int, help="Leaderboard mode: secret seed (default: a fresh random one).")
@click.option("--ncu", is_flag=True, help="Profile mode: run each benchmark shape under Nsight Compute instead.")
@click.option("--timing", type=click.Choice(TIMINGS), default="arena", show_default=True,
              help="arena: 4x-L2 flush, then a hold that hides the host's queueing as the contest's clear does; "
                   "contest: the contest's own loop and L2 clear (a 4 or 62.5 GiB randn per sample), to cross-check.")
@click.option("--unguarded", is_flag=True, hidden=True,
              help="Turn the run-time defenses off (to measure their cost); records are marked unguarded.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout (progress goes to stderr).")
@click.pass_context
def cli(ctx, task, submission, mode, shapes, timeout, only, no_record, secret_seed, ncu, timing, unguarded, as_json):
    """Check and time an NVFP4 submission as the GPU MODE contest did."""
    if ctx.invoked_subcommand is not None:
        return
    if not submission:
        fail("nothing to run: give --submission (e.g. --task gemm --submission v0), or a command such as calibrate.")
    try:
        sub = resolve(submission, task, leaderboards())
    except SubmissionError as exc:
        fail(str(exc))
    if shapes == "auto":
        shapes = "contest" if device.has_gpu() else "smoke"
        if shapes == "smoke":
            err_console.print("[yellow]No GPU here: running the smoke shapes on the CPU with wall-clock timers "
                              "(--shapes contest runs the contest's shapes, slowly).[/]")
    out = report.console(stderr=as_json)
    if ncu:
        sys.exit(run_ncu(sub, mode, shapes, timeout, set(only), out))
    modes = [mode] if mode else ["test", "benchmark"]
    findings = show_precheck(sub, out)
    summaries = []
    for m in modes:
        try:
            summary = run_mode(sub, m, shapes, timeout, not no_record, secret_seed, out, set(only), not unguarded, timing)
        except ValueError as exc:
            fail(str(exc))
        summaries.append(summary)
        report.render(summary, out)
        if not summary.passed:
            out.print(f"[red]{m}: not every case passed.[/]" + (" Benchmark skipped." if m == "test" and not mode else ""))
            break
    if as_json:
        click.echo(report.as_json(summaries, [vars(f) for f in findings]))
    sys.exit(0 if all(s.passed for s in summaries) and len(summaries) == len(modes) else 1)


@cli.command()
def calibrate():
    """Measure this GPU's fp16 matmul rate, copy bandwidth, L2 flush cost and timing floor."""
    if not device.has_gpu():
        fail("calibrate measures a GPU and there is none here.", code=1)
    from harness.calibrate import calibrate as measure
    path = results.results_dir() / "calibration.json"
    with err_console.status("measuring fp16 matmul, copy bandwidth, L2 flush and the timing floor"):
        entry = measure(path)
    Console().print_json(data={k: v for k, v in entry.items() if k != "device"})
    err_console.print(f"stored in {path}")


def frame_table(df, title: str):
    from rich.table import Table
    table = Table(title=title, title_justify="left")
    cols = list(df.columns)
    for col in cols:
        table.add_column(str(col), justify="right" if df[col].dtype.kind in "fi" else "left")
    for _, row in df.iterrows():
        table.add_row(*["-" if v is None or (isinstance(v, float) and v != v) else
                        (f"{v:,.2f}" if isinstance(v, float) else str(v)) for v in row])
    return table


@cli.command("list")
@click.option("--task", type=click.Choice(TASKS), required=True)
@click.option("--gpu", help="GPU name in the records (default: the one with the most records).")
def list_versions(task, gpu):
    """The lineage: version, parent, idea, latest geomean on this GPU, ×SOL, ×parent."""
    from harness.lineage import lineage_table
    from reference.cases import cases
    df = lineage_table(task, len(cases(task, "benchmarks")), gpu)
    report.console().print(frame_table(df, f"{task} lineage"))


@cli.command()
@click.option("--task", type=click.Choice(TASKS), required=True)
@click.option("--all", "all_versions", is_flag=True, help="Every version of the lineage.")
@click.option("--gpu", help="GPU name in the records (default: the one with the most records).")
@click.option("--measure", is_flag=True, help="Measure the versions now, interleaved, with bootstrap 95% intervals.")
@click.option("--rounds", type=int, default=3, show_default=True, help="With --measure: A B C rounds.")
@click.option("--shapes", type=click.Choice(["auto", "contest", "smoke"]), default="auto", show_default=True)
@click.argument("names", nargs=-1)
def diff(task, all_versions, gpu, measure, rounds, shapes, names):
    """Per-shape means of versions from stored benchmark runs, with ×parent, ×v0 and ×SOL."""
    from harness.lineage import per_shape_table, versions
    from reference.cases import cases
    names = [v.name for v in versions(task)] if all_versions else list(names)
    if not names:
        fail("name versions to compare (e.g. v0 v1), or pass --all.")
    if measure:
        sys.exit(diff_measured(task, names, pick_shapes(shapes), rounds))
    df = per_shape_table(task, names, len(cases(task, "benchmarks")), gpu)
    if df.empty:
        fail(f"no complete benchmark runs of {task} stored in {results.results_dir()} for that GPU.", code=1)
    missing = [n for n in names if f"{n} µs" not in df.columns]
    df = df.reset_index().drop(columns="index")
    report.console().print(frame_table(df, f"{task}: {' vs '.join(n for n in names if n not in missing)}"))
    if missing:
        err_console.print(f"[yellow]no complete stored run for: {', '.join(missing)}[/]")


def diff_measured(task, names, shapes, rounds) -> int:
    """diff --measure: interleaved rounds, then each version against the first, per shape and geomean."""
    import pandas as pd

    from harness.compare import geomean_ratio_ci, ratio_ci, verdict
    from harness.session import measure_interleaved
    if len(names) < 2:
        fail("--measure compares at least two versions.")
    try:
        subs = [resolve(n, task, leaderboards()) for n in names]
    except SubmissionError as exc:
        fail(str(exc))
    for i, s in enumerate(subs):  # the same file named twice is still two entries
        s.version = f"{s.version}#{i}" if [t.path for t in subs].count(s.path) > 1 else s.version
    with err_console.status("measuring") as status:
        try:
            pooled = measure_interleaved(subs, shapes, rounds,
                                         lambda r, v: status.update(f"round {r}/{rounds}: {v} done"))
        except RuntimeError as exc:
            fail(str(exc), code=1)
    base = subs[0].version
    rows = []
    indices = sorted(pooled[base])
    for sub in subs[1:]:
        for i in indices:
            point, low, high = ratio_ci(pooled[base][i], pooled[sub.version][i])
            rows.append({"shape": i, "version": sub.version, f"{base} mean µs": sum(pooled[base][i]) / len(pooled[base][i]) / 1e3,
                         "mean µs": sum(pooled[sub.version][i]) / len(pooled[sub.version][i]) / 1e3,
                         f"×{base}": point, "95% low": low, "95% high": high, "verdict": verdict(point, low, high)})
        point, low, high = geomean_ratio_ci([pooled[base][i] for i in indices], [pooled[sub.version][i] for i in indices])
        rows.append({"shape": "geomean", "version": sub.version, f"×{base}": point, "95% low": low, "95% high": high,
                     "verdict": verdict(point, low, high)})
    report.console().print(frame_table(pd.DataFrame(rows), f"{task}: measured now, {rounds} interleaved rounds"))
    return 0


def pick_shapes(shapes: str) -> str:
    return shapes if shapes != "auto" else ("contest" if device.has_gpu() else "smoke")


@cli.command()
@click.option("--task", type=click.Choice(TASKS), required=True)
@click.option("--submission", "submission", help="Version (vN) or path to submit.")
@click.option("--best", is_flag=True, help="The version with the lowest stored geomean on this GPU.")
@click.option("--shapes", type=click.Choice(["auto", "contest", "smoke"]), default="auto", show_default=True)
@click.option("--remote", is_flag=True, help="Also submit to the real contest with popcorn-cli (must be on PATH).")
@click.option("--seed", "secret_seed", type=int, help="Secret seed (default: a fresh random one).")
def submit(task, submission, best, shapes, remote, secret_seed):
    """Leaderboard mode on one file; on success, a local leaderboard entry and a contest-ready file."""
    from harness import standings
    from harness.lineage import lineage_table
    from reference.cases import cases
    if bool(submission) == best:
        fail("give either --submission vN (or a path) or --best.")
    shapes = pick_shapes(shapes)
    if best:
        gpu = device.describe()["name"]
        kind = "benchmarks" if shapes == "contest" else "smoke"
        table = lineage_table(task, len(cases(task, kind)), gpu, kind).dropna(subset=["geomean µs"])
        if table.empty:
            fail(f"no complete stored {kind} runs of {task} on {gpu}: run some versions first.", code=1)
        submission = table.sort_values("geomean µs").iloc[0]["version"]
        err_console.print(f"best stored version of {task} on {gpu}: {submission}")
    try:
        sub = resolve(submission, task, leaderboards())
    except SubmissionError as exc:
        fail(str(exc))
    out = report.console()
    show_precheck(sub, out)
    summary = run_mode(sub, "leaderboard", shapes, None, True, secret_seed, out, set(), True)
    report.render(summary, out)
    if not summary.passed:
        fail("leaderboard mode did not pass: nothing was submitted.", code=1)
    entry = standings.add_entry(sub, summary, shapes)
    board = task_config(task)["leaderboard"]
    path = standings.contest_file(sub, board)
    command = standings.popcorn_command(path, board)
    out.print(f"added {sub.version} ({entry['geomean_ns'] / 1e3:,.2f} µs geomean on {entry['gpu']}) to "
              f"{standings.leaderboard_path()}")
    out.print(f"contest-ready file: {path}\nto submit it: {' '.join(command)}", highlight=False)
    if remote:
        try:
            sys.exit(standings.run_remote(command))
        except FileNotFoundError as exc:
            fail(f"--remote: {exc}.")


@cli.command()
@click.option("--task", type=click.Choice(TASKS), required=True)
@click.option("--gpu", help="GPU name in the records (default: the one with the most records).")
@click.option("--smoke", is_flag=True, help="Plot smoke-shape runs (CPU) instead of the contest's benchmarks.")
def plot(task, gpu, smoke):
    """PNG charts under results/plots/: time per version per shape, and a roofline of the best version."""
    from harness.plots import plot as make
    from reference.cases import cases
    kind = "smoke" if smoke else "benchmarks"
    try:
        paths = make(task, len(cases(task, kind)), results.results_dir() / "plots", gpu, kind)
    except ValueError as exc:
        fail(f"{exc}: run benchmark mode on some versions first.", code=1)
    for path in paths:
        report.console().print(f"wrote {path}")


@cli.command("leaderboard")
@click.option("--task", type=click.Choice(TASKS))
def leaderboard_cmd(task):
    """Local standings per task and GPU, ranked by geomean, with the best so far over time."""
    from harness.standings import standings
    df = standings(task)
    if df.empty:
        fail("the local leaderboard is empty: add entries with `python run.py submit`.", code=1)
    report.console().print(frame_table(df, "local leaderboard"))


@cli.command()
@click.argument("source", type=click.Path(exists=True, path_type=Path))
def merge(source):
    """Add the records of another machine's results folder (or a .tgz of one) to results/, once each."""
    import tarfile
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        folder = source
        if source.is_file():
            with tarfile.open(source) as archive:
                archive.extractall(tmp, filter="data")
            found = sorted({p.parent for p in Path(tmp).rglob("*.jsonl")})
            if len(found) != 1:
                fail(f"{source}: expected one folder of .jsonl records inside, found {len(found)}.")
            folder = found[0]
        added = results.merge(folder, results.results_dir())
    if not added:
        fail(f"{source}: no .jsonl records there.", code=1)
    for name, count in added.items():
        report.console().print(f"{name}: {count} new records")


if __name__ == "__main__":
    cli()
