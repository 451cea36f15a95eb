"""nvfp4-arena command line: check, time and compare NVFP4 kernels the way the contest did.

    python run.py --task gemm --submission v0                 # test, then benchmark if tests pass
    python run.py --task gemm --submission v0 --mode leaderboard
    python run.py --submission path/to/file.py                 # task from its #!POPCORN header
    python run.py calibrate                                    # measure this GPU's ceilings
    python run.py serve                                        # a standing evaluator: later runs start warm
"""
import os
import shlex
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from harness import results, startup
from harness.evaluator.supervisor import start_spares
from harness.evaluator.watch import Watch
from harness.protocol import RECORD_TIMINGS, brief
from harness.rules import DEFAULT_TIMING, MODES, RECORDED_MODES, TIMINGS, modes_of
from harness.submission import SubmissionError, task_from_leaderboard
from harness.views.tables import frame_table, plain_text
from harness.views.tries import resolve
from reference import TASKS
from reference.cases import leaderboards, task_config, timed_kind


err_console = Console(stderr=True)
SHAPES = click.Choice(["auto", "contest", "smoke"])
KINETO_QUIET = ("KINETO_LOG_LEVEL", "6")  # kineto's levels end at USDT (5), the "USDT: profiler_start" lines
EVERY_COMMAND = ("--no-tui",)  # the group's flags that hold for every command, before or after its name (popcorn-cli)


SERVER_PID = None  # in `run.py serve` and the runs forked from it: the standing evaluator's process


def exit_on_signals():
    """SIGTERM and Ctrl-C end the runner with one line and 143 / 130; the workers die with it
    (harness.evaluator.supervisor kills every live worker and what it started on the way out). A run forked from a
    standing evaluator that has gone (its SIGTERM on the server's death, harness.evaluator.server) says so."""
    def leave(signum, frame):
        if SERVER_PID == os.getpid():
            said = f"{signal.Signals(signum).name}: the standing evaluator stops, and the runs in flight with it"
        elif SERVER_PID is not None and os.getppid() != SERVER_PID:
            said = ("the standing evaluator (run.py serve) stopped during this run, and the run with it: its workers "
                    "are stopped and the records stored so far kept; run the command again (without a standing "
                    "evaluator it starts cold)")
        else:
            said = f"{signal.Signals(signum).name}: stopping the workers and leaving"
        err_console.print(f"[yellow]{escape(said)}[/]", highlight=False)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGINT, leave)


def json_wanted() -> bool:
    """--json anywhere on the command line: then an error also goes to stdout, as {"error": ...}."""
    return "--json" in sys.argv[1:]


def fail(message: str, code: int = 2):
    if json_wanted():
        emit_json({"error": message})
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def refuse_unparsable(sub) -> None:
    """A file Python would not compile stops here, before a worker starts or a record is stored."""
    from harness.precheck import syntax_error
    broken = syntax_error(sub.path)
    if broken:
        fail(f"{sub.path.name}:{broken.line}: {broken.why}: {broken.text} (nothing was run, no record stored)", code=1)


def show_precheck(sub, console) -> list:
    """The pre-check's findings, the file named as its author knows it (a past try run from its kept copy, which is
    named by its hash: its name)."""
    from harness import sources
    from harness.precheck import scan
    findings = scan(sub.path)
    name = f"{sub.version}'s kept copy" if sub.path.resolve().parent == sources.folder().resolve() else sub.path.name
    if not findings:
        console.print(f"static pre-check of {escape(name)}: no known cheat patterns found", style="dim",
                      highlight=False)
    for f in findings:
        console.print(f"[yellow]pre-check warning[/] {escape(name)}:{f.line}: {escape(f.why)}: "
                      f"[dim]{escape(f.text)}[/]", highlight=False)
    return findings


class Progress(Watch):
    """A status line naming the job that runs, and a line per case as it ends (the sweep reads these lines)."""

    def __init__(self, console, sub):
        self.console, self.sub, self.status = console, sub, None

    @contextmanager
    def mode(self, mode):
        with self.console.status(f"{self.sub.task} {self.sub.version}: {mode}") as self.status:
            yield

    def job_started(self, mode, job):
        what = "warm-up" if not job.record else f"{job.kind} {job.index}"
        self.status.update(f"{self.sub.task} {self.sub.version} {mode}: {what} [{job.label}] ({job.values} values)")

    def recorded(self, rec):
        mark = "[green]pass[/]" if rec["status"] == "pass" else f"[red]{rec['status']}[/]"
        mean = rec["stats"]["mean"] / 1e3 if rec.get("stats") else None
        shown = f" {mean:,.2f} µs" if mean else ""
        self.console.print(f"  {rec['kind']} {rec['index']} {rec['shape']} ({rec['values']}): {mark}{shown}",
                           highlight=False)


def show_protection(summary, console, earlier=None) -> None:
    """One line on what protected this run's records, and the start-up hooks other than setuptools' own; once per
    command: after an earlier mode (`earlier`, its summary) only where this mode's worker was confined otherwise."""
    from harness.views.report import unusual_hooks
    confined = summary.sandbox.startswith("landlock")
    if summary.sandbox and (earlier is None or confined != earlier.sandbox.startswith("landlock")):
        shown = summary.sandbox if confined else f"{summary.sandbox}: records unprotected"
        console.print(f"sandbox: {escape(shown)}", style="dim" if confined else "yellow", highlight=False,
                      soft_wrap=True)
    hooks = unusual_hooks(summary.hooks) if earlier is None else []
    if hooks:
        console.print(f"start-up {'hook' if len(hooks) == 1 else 'hooks'} in this Python: code that runs at the start "
                      f"of every Python process here, the evaluator's and the workers' included (a .pth file's import "
                      f"line or a sitecustomize module); make sure you trust {'it' if len(hooks) == 1 else 'them'}: "
                      f"{escape(', '.join(hooks))}", style="yellow", highlight=False, soft_wrap=True)


def run_ncu(options, console) -> int:
    """Profile mode under Nsight Compute, each case's report shown as it ends; 1 if ncu failed on any."""
    from harness.tools.ncu import ProfileError, profiling
    try:
        plan = profiling(options)
    except ProfileError as exc:
        fail(str(exc))
    sub, failed = options.submission, False
    for case in plan.cases:
        with console.status(f"ncu: {sub.task} {sub.version} {plan.kind} {case.index} [{case.label}]"):
            profile = plan.run(case)
        console.print(f"[bold]{case.label}[/] (saved to {profile.path})")
        console.print(profile.text, markup=False, highlight=False)
        failed = failed or profile.code != 0
    return 1 if failed else 0


class TaskName(click.Choice):
    """A task, or its contest leaderboard name as popcorn-cli spells it (nvfp4_gemv for gemv)."""

    def __init__(self, extra: tuple = ()):
        super().__init__([*TASKS, *extra])

    def convert(self, value, param, ctx):
        task = task_from_leaderboard(str(value), leaderboards()) if value not in self.choices else value
        return super().convert(task or value, param, ctx)


TASK = TaskName()


class ArenaGroup(click.Group):
    """The command group, taking two spellings users reach for: a submission file as the first
    argument, popcorn-cli style (`run.py my_kernel.py` is `run.py --submission my_kernel.py`), and
    options written before a command's name (`run.py --json leaderboard` is `run.py leaderboard
    --json`); an option only the default command has is an error there, not silently dropped."""

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, self.normalize(list(args)))

    def main(self, *args, **kwargs):
        """Click's own handling, except that under --json a usage error is also {"error": ...} on stdout."""
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except click.ClickException as exc:
            if json_wanted():
                emit_json({"error": exc.format_message()})
            exc.show()
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            err_console.print("Aborted.")
            sys.exit(1)

    def collect_usage_pieces(self, ctx):
        return ["[OPTIONS]", "[FILE.py | COMMAND [ARGS]...]"]

    def own_option(self, token: str):
        return next((p for p in self.params if token.split("=", 1)[0] in (*p.opts, *p.secondary_opts)), None)

    def normalize(self, args: list[str]) -> list[str]:
        i = 0
        while i < len(args):
            token = args[i]
            if token == "--" or token in self.get_help_option_names(click.Context(self)):
                return args
            if token.startswith("-"):
                option = self.own_option(token)
                i += 2 if option is not None and not option.is_flag and "=" not in token else 1
                continue
            if token in self.commands:
                return self.move_options(args[:i], token, args[i + 1:])
            if token.endswith(".py"):
                if not Path(token).is_file():
                    raise click.UsageError(f"{token}: no such file (give a submission file, or one of the commands: "
                                           f"{', '.join(self.commands)})")
                return args[:i] + ["--submission", token] + args[i + 1:]
            return args
        return args

    def move_options(self, before: list[str], name: str, after: list[str]) -> list[str]:
        """The options given before a command's name, moved after it where the command takes them; the group's
        options for every command (EVERY_COMMAND) stay the group's, from either side of the name."""
        command = self.commands[name]
        known = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
        kept = [token for token in [*before, *after] if token in EVERY_COMMAND]
        before = [token for token in before if token not in EVERY_COMMAND]
        after = [token for token in after if token not in EVERY_COMMAND]
        moved, i = [], 0
        while i < len(before):
            token = before[i]
            option = self.own_option(token)
            width = 2 if option is not None and not option.is_flag and "=" not in token else 1
            if token.split("=", 1)[0] not in known:
                raise click.UsageError(f"{token} is not an option of `{name}` (see `{name} --help`)")
            moved += before[i:i + width]
            i += width
        return [*kept, name, *moved, *after]


@click.group(cls=ArenaGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--task", "--leaderboard", "task", type=TASK,
              help="Problem (gemv, ... or the contest's nvfp4_gemv, ...); optional when the file has a #!POPCORN "
                   "leaderboard line.")
@click.option("--submission", "submission", help="Lineage version (v0, v23, ...), a path to any submission file, "
                                                "or a past try as name@hash (a prefix of at least 4 hex).")
@click.option("--name", "name", help="Store this try under NAME instead of the file's name (it is then shown as "
                                     "NAME@hash and compared with NAME's previous try).")
@click.option("--mode", type=click.Choice(MODES), help="Default: test, then benchmark if every test passes.")
@click.option("--shapes", type=SHAPES, default="auto", show_default=True,
              help="auto = the contest's shapes on a GPU, the tiny smoke shapes on a CPU.")
@click.option("--timeout", type=float, help="Seconds one case may take before its worker is killed (default per mode).")
@click.option("--case", "only", type=int, multiple=True, help="Run only the case with this index (repeatable).")
@click.option("--no-record", is_flag=True, help="Do not append records to results/.")
@click.option("--seed", "secret_seed", type=int, help="Leaderboard mode: seed of its inputs, to reproduce a run "
              "(default: a fresh secret one; a seed given here is on the command line, which the file can read).")
@click.option("--ncu", is_flag=True, help="Profile mode: run each benchmark shape under Nsight Compute instead.")
@click.option("--timing", type=click.Choice(TIMINGS), default=DEFAULT_TIMING, show_default=True,
              help="arena: the calls queued behind the evaluator's go, after its 4x-L2 flush, timed by the evaluator's "
                   "own clock on a GPU; contest: the contest's own loop and L2 clear (a 4 or 62.5 GiB randn per sample), "
                   "timed by the worker's events, to cross-check.")
@click.option("--unconfined", is_flag=True, hidden=True,
              help="Start the worker without its sandbox (to measure the sandbox's cost); records say so.")
@click.option("--keep-going", is_flag=True, help="Run the remaining cases after one hung or crashed (default: skip them).")
@click.option("--traceback", "show_traceback", is_flag=True, help="Show whole tracebacks of failing submissions.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout (progress goes to stderr).")
@click.option("--no-tui", is_flag=True, help="Plain text (popcorn-cli's flag): no colours or live progress, tables "
                                            "as Markdown without box-drawing lines.")
@click.pass_context
def cli(ctx, task, submission, name, mode, shapes, timeout, only, no_record, secret_seed, ncu, timing, unconfined,
        keep_going, show_traceback, as_json, no_tui):
    """Check and time an NVFP4 submission as the GPU MODE contest did."""
    exit_on_signals()
    if no_tui:  # read by every console and table made from here on, here and in the processes this one starts
        global err_console
        plain_text()
        err_console = Console(stderr=True)
    if ctx.invoked_subcommand is not None:
        return
    if not submission:
        fail("nothing to run: give --submission (e.g. --task gemm --submission v0), or a command such as calibrate.")
    try:
        sub = resolve(submission, task, leaderboards(), name)
    except SubmissionError as exc:
        fail(str(exc))
    refuse_unparsable(sub)
    if mode == "profile":  # the workers' torch.profiler, without its own log lines on the terminal
        os.environ.setdefault(*KINETO_QUIET)
    if not ncu:  # the run's workers start now, and import torch while this process does (runner.run takes them)
        start_spares(sub.task, str(sub.path), not unconfined, len(modes_of(mode)))
        startup.start()  # and this process's CUDA context beside its own import of torch
    from harness import device
    from harness.evaluator import runner
    from harness.views import report
    if shapes == "auto":
        shapes = runner.pick_shapes(shapes)
        if shapes == "smoke":
            err_console.print("[yellow]No GPU here: running the smoke shapes on the CPU with wall-clock timers "
                              "(--shapes contest runs the contest's shapes, slowly).[/]", soft_wrap=True)
    out = report.console(stderr=as_json)
    target = sub.headers.get("gpu")
    if target:
        here = device.name()
        if target.strip().lower() not in here.lower():
            err_console.print(f"this file targets {escape(target)} (its #!POPCORN gpu line); running on {escape(here)}",
                              highlight=False)
    options = runner.RunOptions(sub, mode, shapes, timeout_s=timeout, record=not no_record, secret_seed=secret_seed,
                                only=frozenset(only), confined=not unconfined, timing=timing, keep_going=keep_going)
    if ncu:
        sys.exit(run_ncu(options, out))
    findings = show_precheck(sub, out)
    summaries = []
    try:
        for summary in runner.run(options, Progress(out, sub)):
            show_protection(summary, out, summaries[0] if summaries else None)
            summaries.append(summary)
            report.render(summary, out, show_traceback)
            if summary.unstored:
                err_console.print(f"[red]records not stored:[/] {escape(summary.unstored)}", highlight=False)
            if not summary.passed:
                skipped = options.modes[len(summaries):]
                out.print(f"[red]{summary.mode}: not every case passed.[/]"
                          + (f" {', '.join(skipped).capitalize()} skipped." if skipped else ""))
    except ValueError as exc:
        fail(str(exc))
    from harness.views.previous import previous_try
    compared = previous_try(summaries)
    if compared:
        out.print(frame_table(compared.table(), compared.title()))
        out.print(compared.note(), highlight=False, markup=False, soft_wrap=True)  # its command pastes whole
    if as_json:
        emit_json(report.as_json(summaries, [vars(f) for f in findings], compared.as_json() if compared else None))
    stored = not any(s.unstored for s in summaries)
    sys.exit(0 if all(s.passed for s in summaries) and len(summaries) == len(options.modes) and stored else 1)


@cli.command()
def calibrate():
    """Measure this GPU's fp16 matmul rate, copy bandwidth and the cost of the evaluator's L2 flush."""
    from harness import device
    if not device.has_gpu():
        fail("calibrate measures a GPU and there is none here.", code=1)
    from harness.tools.calibrate import calibrate as measure
    path = results.results_dir() / "calibration.json"
    with err_console.status("measuring fp16 matmul, copy bandwidth and the L2 flush"):
        entry = measure(path)
    Console().print_json(data={k: v for k, v in entry.items() if k != "device"})
    err_console.print(f"stored in {path}")


def view_options(command):
    """--gpu, --timing and --json, shared by every view of stored results."""
    command = click.option("--json", "as_json", is_flag=True, help="Print the table as JSON on stdout.")(command)
    command = click.option("--timing", type=click.Choice(RECORD_TIMINGS), default=DEFAULT_TIMING,
                           show_default=True,
                           help="Compare only records timed this way (legacy: records from before records named "
                                "their method).")(command)
    return click.option("--gpu", help="GPU in the records, or a unique part of its name such as H200 "
                                      "(default: the GPU with the most runs).")(command)


def asked_timing(timing: str) -> str | None:
    """--timing as given, or None where its default stands: `list` and `diff` then read the default method, or where
    their scope has no runs of it, the method its runs have (lineage.scoped), and say which."""
    from click.core import ParameterSource
    given = click.get_current_context().get_parameter_source("timing") is not ParameterSource.DEFAULT
    return timing if given else None


def emit_json(data) -> None:
    from harness.views import report
    click.echo(report.dumps(data))


def answer(make, *args):
    """The view's result, or its error message (which says what is stored) with exit code 1."""
    from harness.views.lineage import ViewError
    try:
        return make(*args)
    except ViewError as exc:
        fail(str(exc), code=1)


@cli.command("list")
@click.option("--task", "--leaderboard", "task", type=TASK, required=True)
@view_options
@click.option("--smoke", is_flag=True, help="Runs on the smoke shapes (CPU) instead of the contest's benchmarks.")
def list_versions(task, gpu, timing, as_json, smoke):
    """The lineage ranked by the median over each version's runs: runs, spread, geomean, ×SOL, ×parent."""
    from harness.views import report
    from harness.views.lineage import lineage_table, plural
    view = answer(lineage_table, task, gpu, asked_timing(timing), "smoke" if smoke else None)
    if as_json:
        return emit_json(view.as_json())
    out = report.console()
    out.print(frame_table(view.table, view.scope.title(f"lineage ({plural(view.scope.runs, 'run')})")))
    if view.scope.timing != timing:
        out.print(f"no {timing}-timed runs here: these are {view.scope.timing}-timed (--timing names a method)",
                  style="dim", highlight=False, markup=False)
    for row in view.body["rows"]:
        if row["last_failure"]:
            f = row["last_failure"]
            ended = "was skipped" if f["status"] == "skipped" else f"ended {f['status']}"
            out.print(f"{row['version']} has no runs here: its last run on {view.scope.gpu} ({f['mode']} mode, "
                      f"{f['when']}) {ended}: {f['message']}", style="yellow", highlight=False, markup=False)
        elif row["other_timings"]:
            out.print(f"{row['version']} has no {view.scope.timing}-timed run on {view.scope.gpu}, only "
                      f"{row['other_timings']} (--timing shows them)", style="dim", highlight=False, markup=False)
    out.print(fastest_line(view, gpu is not None or smoke), highlight=False, markup=False)


def fastest_line(view, asked: bool) -> str:
    """list's last line: the fastest try by stored runs among those `submit --best` can run again, and whether
    `submit --best` reads this scope (this machine's) or which scope it reads instead."""
    from harness.views.lineage import plural, this_machine
    here, kind = this_machine()
    table = view.table.set_index("version")
    first = table.dropna(subset=["geomean µs"]).sort_values("rank").index[0]
    fastest = view.body["fastest"]
    if fastest is None:
        said = f"fastest by stored runs: {first}, but no try here can be run again (its code is gone, no copy kept)"
    else:
        said = f"fastest by stored runs: {fastest} ({plural(int(table.loc[fastest, 'runs']), 'run')})"
        if fastest != first:
            said += f"; {first} ranks first, but its code is gone (no copy kept), so it cannot run again"
    if (view.scope.gpu, view.scope.kind) == (here, kind):
        return said + (". Stored runs only nominate: `submit --best` measures the fastest tries that can run again, "
                       "interleaved, before it picks one.")
    mine = "" if asked else (f" This machine ({here}) has no runs of {view.scope.task} yet: these are "
                             f"{view.scope.gpu}'s.")
    shape_set = "smoke" if kind == "smoke" else "contest"
    return said + f".{mine} `submit --best` nominates from this machine's runs ({here}, {shape_set} shapes)."


@cli.command()
@click.option("--task", "--leaderboard", "task", type=TASK, required=True)
@click.option("--all", "all_versions", is_flag=True, help="Every version of the lineage that has runs.")
@view_options
@click.option("--smoke", is_flag=True, help="Stored runs on the smoke shapes (CPU) instead of the contest's benchmarks.")
@click.option("--measure", is_flag=True, help="Measure the versions now, interleaved, with paired 95% intervals.")
@click.option("--rounds", type=int, default=3, show_default=True, help="With --measure: interleaved rounds (A B C, then C B A, ...).")
@click.option("--shapes", type=SHAPES, default="auto", show_default=True,
              help="With --measure: the shapes to measure.")
@click.argument("names", nargs=-1)
def diff(task, all_versions, gpu, timing, as_json, smoke, measure, rounds, shapes, names):
    """Per shape, from stored runs: mean and median µs (median over runs), ×parent, ×v0, ×SOL, host µs."""
    from harness.evaluator import runner
    from harness.views import report
    from harness.views.lineage import lineage_table, per_shape_table, per_shape_table_found, plural
    kind = "smoke" if smoke else None
    timing = asked_timing(timing)
    if all_versions:
        table = answer(lineage_table, task, gpu, timing, kind).table
        names = list(table[table["runs"] > 0]["version"])
    names = list(names)
    if not names:
        fail("name versions to compare (e.g. v0 v1), or pass --all.")
    if measure:
        sys.exit(diff_measured(task, names, runner.pick_shapes(shapes), rounds, as_json, timing))
    view = answer(per_shape_table, task, names, gpu, timing, kind) if gpu or smoke else \
        answer(per_shape_table_found, task, names, timing, kind)
    if as_json:
        return emit_json(view.as_json())
    what = " vs ".join(f"{n} ({plural(runs, 'run')})" for n, runs in view.runs.items())
    report.console().print(frame_table(view.table, view.scope.title(what)))


def measuring(what: str, rounds: int, failed: str, measure):
    """measure(on_round, on_build) under a status line that counts the interleaved rounds, after a line per file
    built before them; a failed measurement stops with `failed` and the reason."""
    from harness.sweep.builds import say
    with err_console.status(what) as status:
        try:
            return measure(lambda r, v: status.update(f"round {r}/{rounds}: {v} done"),
                           lambda build: err_console.print(say(build), markup=False, highlight=False))
        except RuntimeError as exc:
            fail(f"{failed}{brief(str(exc))} (run that version alone with --traceback to see where)", code=1)


def diff_measured(task, names, shapes, rounds, as_json, timing) -> int:
    """diff --measure: interleaved rounds, then each version against the first, per shape and geomean."""
    from harness import device
    from harness.views import report
    import pandas as pd

    from harness.views.remeasure import measured_diff
    if len(names) < 2:
        fail("--measure compares at least two versions.")
    try:
        compared = measuring("measuring", rounds, "",
                             lambda on_round, on_build: measured_diff(task, names, shapes, rounds, timing, on_round,
                                                                      on_build))
    except SubmissionError as exc:
        fail(str(exc))
    gpu = device.name()
    if as_json:
        emit_json({"task": task, "gpu": gpu, "shapes": shapes, "rounds": rounds, **compared})
        return 0
    base = compared["base"]

    def ratio(v: dict) -> dict:
        return {f"×{base}": v["speedup_vs_base"], "95% low": v["speedup_low"], "95% high": v["speedup_high"],
                "verdict": v["verdict"]}
    rows = []
    for k in range(1, len(compared["geomean"])):
        for row in compared["rows"]:
            v = row["versions"][k]
            rows.append({"shape": row["index"], "version": v["version"], f"{base} mean µs":
                         row["versions"][0]["mean_ns"] / 1e3, "mean µs": v["mean_ns"] / 1e3, **ratio(v)})
        rows.append({"shape": "geomean", "version": compared["geomean"][k]["version"], **ratio(compared["geomean"][k])})
    title = (f"{task}: measured now on {gpu}, {shapes} shapes, {rounds} interleaved rounds; "
             f"×{base} = geometric mean of per-round ratios, paired 95% t interval")
    report.console().print(frame_table(pd.DataFrame(rows), title))
    return 0


def choose_best(task, shapes, timing, candidates, rounds, console):
    """The stored ranking on this device nominates up to `candidates` tries that can be run again (lineage versions
    and the participant's own); they are measured again, interleaved (a worker each), and the winner is decided by
    paired intervals."""
    from harness.views.remeasure import choose, nominate
    nomination = answer(nominate, task, shapes, timing, candidates)
    top = nomination.versions
    err_console.print(f"fastest stored tries of {task} on {nomination.gpu} ({timing} timing) that can be run again: "
                      f"{', '.join(top)}", highlight=False, markup=False)
    if len(top) == 1:
        err_console.print(f"{top[0]} is the only candidate: nothing to measure it against", markup=False)
        return top[0], None
    decision = measuring("measuring the candidates", rounds, "re-measuring the candidates failed, nothing was submitted: ",
                         lambda on_round, on_build: choose(task, nomination, shapes, rounds, timing, on_round,
                                                           on_build))
    import pandas as pd
    console.print(frame_table(pd.DataFrame([{
        "version": s.version, "geomean µs now": s.geomean_ns / 1e3, f"×{decision.fastest}": s.vs_fastest.point,
        "95% low": s.vs_fastest.low, "95% high": s.vs_fastest.high, "verdict": s.verdict}
        for s in decision.standings]), f"{task} candidates measured now on {nomination.gpu}, {rounds} interleaved rounds"))
    console.print(decision.explain(), highlight=False, markup=False)  # verdicts may quote the submission's text
    return decision.winner, decision


@cli.command()
@click.argument("file", required=False)
@click.option("--task", "--leaderboard", "task", type=TASK,
              help="Problem; optional when the file has a #!POPCORN leaderboard line or lives in submissions/<task>/.")
@click.option("--submission", "submission", help="Version (vN), path or past try (name@hash) to submit (or give it as "
                                                "the argument).")
@click.option("--best", is_flag=True,
              help="Measure the fastest stored tries again (lineage versions and your own files' tries), interleaved, "
                   "and submit the winner (a tie: the oldest).")
@click.option("--candidates", type=click.IntRange(1), default=3, show_default=True,
              help="With --best: how many of the fastest stored tries to measure again.")
@click.option("--rounds", type=click.IntRange(2), default=5, show_default=True,
              help="With --best: interleaved rounds.")
@click.option("--timing", type=click.Choice(RECORD_TIMINGS), default=DEFAULT_TIMING, show_default=True,
              help="With --best: rank stored records timed this way.")
@click.option("--shapes", type=SHAPES, default="auto", show_default=True)
@click.option("--remote", is_flag=True, help="Also submit to the real contest with popcorn-cli (must be on PATH).")
@click.option("--seed", "secret_seed", type=int, help="Seed of the leaderboard inputs, to reproduce a run (default: "
              "a fresh secret one; a seed given here is on the command line, which the file can read).")
@click.option("--json", "as_json", is_flag=True, help="Print the entry (and the --best decision) as JSON on stdout.")
def submit(file, task, submission, best, candidates, rounds, timing, shapes, remote, secret_seed, as_json):
    """Leaderboard mode on one file; on success, a local leaderboard entry and a contest-ready file."""
    from harness.evaluator import runner
    from harness.views import report
    from harness.views import standings
    if file and submission:
        fail("give the submission once: as the argument or as --submission.")
    submission = submission or file
    if bool(submission) == best:
        fail("give either a file (or --submission vN) or --best.")
    if best and not task:
        fail("--best needs --task: it picks among that task's stored tries.")
    shapes = runner.pick_shapes(shapes)
    out = report.console(stderr=as_json)
    decision = None
    if best:
        submission, decision = choose_best(task, shapes, timing, candidates, rounds, out)
        err_console.print(f"submitting {submission}", markup=False)
    while True:
        try:
            sub = resolve(submission, task, leaderboards())
        except SubmissionError as exc:
            fail(str(exc))
        refuse_unparsable(sub)
        show_precheck(sub, out)
        [summary] = runner.run(runner.RunOptions(sub, "leaderboard", shapes, secret_seed=secret_seed),
                               Progress(out, sub))
        show_protection(summary, out)
        report.render(summary, out)
        if summary.passed:
            break
        why = "failed leaderboard mode"
        failed = next((r for r in summary.records if r["status"] != "pass"), None)
        if failed:
            why += f" ({failed['status']}: {(brief(failed.get('message') or '').splitlines() or ['no message'])[0]})"
        decision = decision.without(submission, why) if decision else None
        if decision is None:
            fail("leaderboard mode did not pass: nothing was submitted.", code=1)
        err_console.print(f"{submission} {why}: submitting {decision.winner}, the next candidate", markup=False)
        submission = decision.winner
    entry = standings.add_entry(sub, summary, shapes)
    board = task_config(sub.task)["leaderboard"]
    path = standings.contest_file(sub, board, entry["gpu"])
    command = standings.popcorn_command(path, board)
    out.print(f"added {sub.version} ({entry['geomean_ns'] / 1e3:,.2f} µs geomean on {entry['gpu']}) to "
              f"{standings.leaderboard_path(entry['gpu'])}", markup=False)
    out.print(f"contest-ready file: {path}\nto submit it: {shlex.join(command)}", highlight=False, markup=False)
    if as_json:
        emit_json({"entry": standings.entry_json(entry), "contest_file": str(path), "command": command,
                   "decision": decision.as_json() if decision else None})
    if remote:
        try:
            sys.exit(standings.run_remote(command))
        except FileNotFoundError as exc:
            fail(f"--remote: {exc}.")


@cli.command()
@click.option("--task", "--leaderboard", "task", type=TASK, required=True)
@view_options
@click.option("--smoke", is_flag=True, help="Plot smoke-shape runs (CPU) instead of the contest's benchmarks.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the charts (default: the git-ignored results/local/plots/).")
def plot(task, gpu, timing, as_json, smoke, out_dir):
    """PNG charts (geomean and time per shape per version, and a roofline of the fastest version) in the
    git-ignored results/local/plots/; file names carry the task, GPU, timing method and shape set."""
    from harness.views import report
    from harness.views.plots import plot as make
    folder = out_dir or results.results_dir() / results.LOCAL / "plots"
    paths = answer(make, task, folder, gpu, timing, "smoke" if smoke else None)
    if as_json:
        return emit_json({"task": task, "timing": timing, "paths": [str(p) for p in paths]})
    for path in paths:
        report.console().print(f"wrote {path}", highlight=False, markup=False)


@cli.command("leaderboard")
@click.option("--task", "--leaderboard", "task", type=TASK)
@click.option("--all-schemas", is_flag=True,
              help="With --timing arena-worker: rank entries from before record schema 7 too (timed without the "
                   "L2 refill).")
@view_options
def leaderboard_cmd(task, all_schemas, gpu, timing, as_json):
    """Local standings per task and GPU, ranked by geomean, with the best so far over time."""
    from harness.views import report
    from harness.views.standings import standings
    board = answer(standings, task, gpu, timing, all_schemas)
    if as_json:
        return emit_json(board.as_json())
    report.console().print(frame_table(board.table, board.title))
    if board.note:
        report.console().print(board.note, highlight=False, markup=False)


@cli.command("report")
@view_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the pages (default: the git-ignored results/local/report/).")
def report_page(gpu, timing, as_json, out_dir):
    """One static HTML page per GPU: standings, each lineage's table and charts, per-shape ×SOL and host-bound flags."""
    from harness.views import report
    from harness.views.webpage import build
    pages = answer(build, out_dir or results.results_dir() / results.LOCAL / "report", gpu, timing)
    if as_json:
        return emit_json([{"gpu": p.gpu, "timing": p.timing, "path": str(p.path), "tasks": p.tasks} for p in pages])
    for page in pages:
        report.console().print(f"wrote {page.path} ({page.gpu}, {page.timing} timing: {', '.join(page.tasks)})",
                               highlight=False)


@cli.command()
@click.argument("source", type=click.Path(exists=True, path_type=Path))
def merge(source):
    """Add the records of another machine's results folder, or of a .tgz of one (`tar czf results.tgz results`,
    subfolders included), to results/, once each (a CPU's records to the git-ignored results/local/)."""
    from harness.views import report
    from harness.views.lineage import plural
    try:
        done = results.merge_from(source, results.results_dir())
    except results.MergeError as exc:
        fail(str(exc))
    if not done.files:
        fail(f"{source}: no record files there ({', '.join(sorted(results.RECORD_FILES))}, at any depth)"
             + (f"; left alone: {plural(len(done.left_out), 'other .jsonl file')}" if done.left_out else ""), code=1)
    out = report.console()
    base = results.results_dir().parent
    out.print(f"merged from {source}:", highlight=False, markup=False)
    for merged in done.files:
        into = ", ".join(f"{plural(n, 'new record')} into {shown_path(target, base)}"
                         for target, n in merged.added.items())
        out.print(f"  {merged.source}: {plural(merged.records, 'record')}; {into or 'nothing new'}", highlight=False,
                  markup=False)
    if done.left_out:
        out.print(f"left alone: {plural(len(done.left_out), 'other .jsonl file')} (the views read only "
                  f"<task>.jsonl and leaderboard.jsonl), such as {done.left_out[0]}", highlight=False, markup=False)


def shown_path(path: str, base: Path) -> str:
    """A path relative to `base` where it lies under it (results/gemv.jsonl), else whole."""
    return str(Path(path).relative_to(base)) if Path(path).is_relative_to(base) else path


@cli.command()
@click.option("--task", "--leaderboard", "tasks", multiple=True, required=True, type=TaskName(("all",)),
              help="Lineage to sweep (repeatable), or all of them.")
@click.option("--versions", default="all", show_default=True,
              help="all, a range v0..v26, a list v3,v5,v9, paths of files, or a mix; missing: the versions without a "
                   "complete benchmark run with this timing on this GPU.")
@click.option("--mode", type=click.Choice([*RECORDED_MODES, "auto"]), default="benchmark",
              show_default=True, help="auto: test, then benchmark if every test passes (run.py's default).")
@click.option("--gpus", help="GPUs to use, one lane each: all (default) or numbers such as 0,1.")
@click.option("--lanes", "cpu_lanes", type=click.IntRange(1), help="N lanes without a GPU (CPU machines, tests).")
@click.option("--ray", "ray_address",
              help="Run on a Ray cluster instead: its address, auto, or local (needs pip install -e .[ray]).")
@click.option("--shapes", type=SHAPES, default="auto", show_default=True)
@click.option("--timing", type=click.Choice(TIMINGS), default=DEFAULT_TIMING, show_default=True)
@click.option("--timeout", "case_timeout", type=float, help="Seconds one case may take (default per mode).")
@click.option("--job-timeout", type=float, default=3600, show_default=True,
              help="Seconds one version's whole run may take before it is killed and counted as lost.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout (progress goes to stderr).")
def sweep(tasks, versions, mode, gpus, cpu_lanes, ray_address, shapes, timing, case_timeout, job_timeout, as_json):
    """Run many versions at once, one lane per GPU (or on a Ray cluster): a shared queue, records
    appended by this process alone, lost jobs retried on another lane, a summary at the end."""
    from harness import device
    from harness.evaluator.runner import pick_shapes
    from harness.sweep import lanes as sw
    from harness.sweep.builds import before_timing, say
    from harness.views import report
    chosen = TASKS if "all" in tasks else list(dict.fromkeys(tasks))
    kind = timed_kind(pick_shapes(shapes))
    missing_in = (device.name(), timing, kind) if mode == "benchmark" else None
    out = report.console(stderr=as_json)
    try:
        jobs = sw.make_jobs((t, v) for t in chosen for v in sw.parse_versions(t, versions, missing_in))
        if not jobs:  # only where every version named was 'missing' and none is
            out.print(f"nothing is missing: every version of {', '.join(chosen)} has a complete {timing}-timed "
                      f"{kind} run on {device.name()}", highlight=False)
            if as_json:
                emit_json({**sw.SweepResult().as_json(), "passed": True})
            sys.exit(0)
        options = sw.Options(mode, shapes, timing, case_timeout, job_timeout)
        lanes, events = sw.backend(jobs, options, gpus, cpu_lanes, ray_address)
        where = f"Ray at {ray_address}" if ray_address else f"{len(lanes)} lane(s): {', '.join(l.name for l in lanes)}"
        out.print(f"sweep: {len(jobs)} job(s), {mode} mode, on {where}", highlight=False)
        if not ray_address:  # on a Ray cluster each job builds where it runs
            started = time.monotonic()
            built = before_timing([(j.task, j.version) for j in jobs],
                                  lambda build: out.print(say(build), markup=False, highlight=False))
            if built:
                out.print(f"built {len(built)} file(s) in {time.monotonic() - started:,.1f} s before timing, "
                          f"{sum(not b.ok for b in built)} failed", highlight=False)
        result, leaving = sw.SweepResult(), None
        with sw.SweepView(out, [l.name for l in lanes], len(jobs)) as view:
            try:
                sw.drive(events, device.name(), view, into=result)
            except SystemExit as stop:  # SIGTERM or Ctrl-C (exit_on_signals): the jobs that ended, then leave
                result.stopped, leaving = True, stop
    except sw.SweepError as exc:
        fail(str(exc))
    if as_json:
        emit_json(result.as_json())
    else:
        show_sweep(result, out)
    if leaving:
        raise leaving
    sys.exit(0 if result.passed else 1)


def show_sweep(result, out) -> None:
    if not result.outcomes:
        out.print("[yellow]stopped before any job had ended[/]", highlight=False)
        return
    import pandas as pd
    rows = pd.DataFrame(result.rows())
    tries = f"{result.attempts} tr{'y' if result.attempts == 1 else 'ies'}"
    out.print(frame_table(rows, f"sweep: {len(rows)} job(s), {tries}, {result.wall_s:,.1f} s"))
    counts = ", ".join(f"{n} {status}" for status, n in rows["status"].value_counts().items())
    serial = sum(a.wall_s for a in result.outcomes)
    out.print(f"{counts}; the jobs' own wall times add up to {serial:,.1f} s, the sweep took {result.wall_s:,.1f} s "
              f"(x{serial / max(result.wall_s, 1e-9):,.2f})", highlight=False)
    for r in result.retired:
        out.print(f"[yellow]{escape(f'{r.lane} was retired: {r.why}')}[/]", highlight=False)
    if result.stopped:
        out.print(f"[yellow]stopped before every job had run: the {len(rows)} above ended, and their records are "
                  f"kept[/]", highlight=False)


@cli.command()
def serve():
    """Keep a standing evaluator for this checkout: it imports torch once, and each later run of one file from
    this checkout (another terminal) is forked from it, workers included, instead of starting two interpreters."""
    from harness.evaluator.server import ServerError
    from harness.evaluator.server import serve as stand
    global SERVER_PID
    SERVER_PID = os.getpid()
    try:
        stand(run_here, lambda text: err_console.print(f"[dim]{time.strftime('%H:%M:%S')}[/] {escape(text)}",
                                                      highlight=False, soft_wrap=True))
    except ServerError as exc:
        fail(str(exc), code=1)


def main():
    """The command line: handed to this checkout's standing evaluator where one takes it (harness.forward), run
    here otherwise. Then the process ends without the interpreter's teardown of its modules: with torch loaded
    that took 0.27 s on a CPU after every record was written and every line printed."""
    from harness.forward import forward
    code = forward(sys.argv[1:]) if one_file_run(sys.argv[1:]) else None
    os._exit(run_here() if code is None else code)


def one_file_run(argv: list[str]) -> bool:
    """A run of one file, what a standing evaluator takes: no other command, not under Nsight Compute, no help."""
    try:
        normalized = cli.normalize(list(argv))
    except click.UsageError:
        return False  # run here, where the error is told
    here = {"--ncu", *cli.get_help_option_names(click.Context(cli))}
    return bool(normalized) and normalized[0] not in cli.commands and not here & set(normalized)


def run_here() -> int:
    """sys.argv's command in this process, its exit status returned once the exit handlers ran (they stop the
    workers and whatever they left behind)."""
    import atexit
    global err_console
    err_console = Console(stderr=True)  # a standing evaluator's run has the command line's terminal
    try:
        cli()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    flush()
    atexit._run_exitfuncs()
    flush()  # what the exit handlers printed
    return code


def flush():
    """Both streams written out; a reader that has gone (`| head`) or a closed stream loses only the output."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


if __name__ == "__main__":
    main()
