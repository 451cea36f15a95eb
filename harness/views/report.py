"""Tables a person reads (rich) and the JSON a program reads, from result records."""
import json
import math
import re
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..device import CPU_NAME
from ..rules import CONTEST, CPU_MAX_SAMPLES
from ..evaluator.session import RunSummary
from . import tables


def us(ns) -> str:
    return "-" if ns is None else f"{ns / 1e3:,.2f}"


def test_table(summary: RunSummary) -> Table:
    table = tables.table(f"{summary.submission.task} {summary.submission.version} — test")
    for col in ("#", "shape", "values", "status", "first call ms", "detail"):
        table.add_column(col, justify="right" if col in ("#", "first call ms") else "left")
    for r in summary.records:
        style = "green" if r["status"] == "pass" else "red"
        first = "-" if r.get("first_call_ns") is None else f"{r['first_call_ns'] / 1e6:,.1f}"
        table.add_row(str(r["index"]), escape(r["shape"]), escape(r["values"]), f"[{style}]{r['status']}[/]", first,
                      escape(tables.shorten(r["message"], 100)))
    return table


# setuptools' own hook in every virtual environment it is installed in (python -m venv included): it puts setuptools'
# distutils in place of the standard library's when SETUPTOOLS_USE_DISTUTILS says so
SETUPTOOLS_HOOK = ("distutils-precedence.pth", re.compile(
    r"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os\.environ\.get\(var, '(local|stdlib)'\) == 'local'; "
    r"enabled and __import__\('_distutils_hack'\)\.add_shim\(\); ?"))


def unusual_hooks(paths: list[str]) -> list[str]:
    """The start-up hooks (harness.evaluator.sandbox.startup_hooks) other than setuptools' own, word for word."""
    name, text = SETUPTOOLS_HOOK

    def standard(path: str) -> bool:
        try:
            return Path(path).name == name and bool(text.fullmatch(Path(path).read_text().strip()))
        except (OSError, UnicodeDecodeError):
            return False
    return [path for path in paths if not standard(path)]


def console(stderr: bool = False) -> Console:
    """A console that keeps tables whole when output goes to a file or a pipe."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=220)


def drop_empty_columns(table: Table) -> Table:
    """Remove columns whose every cell is '-' (e.g. SOL columns on a CPU)."""
    keep = [c for c in table.columns if any(cell not in ("-", "") for cell in c._cells)]
    if len(keep) != len(table.columns):
        table.columns[:] = keep
    return table


def throttled(record: dict) -> list:
    """The samples of a record's job that ran while the GPU throttled itself (empty without telemetry)."""
    return (record.get("telemetry") or {}).get("throttled_samples") or []


def benchmark_table(summary: RunSummary) -> Table:
    sub = summary.submission
    gpu = summary.device.get("name", "?")
    table = tables.table(f"{sub.task} {sub.version} — {summary.mode} on {gpu}, {summary.timing} timing "
                         f"(times in µs)")
    cols = ["#", "shape", "status", "mean", "± err", "best", "median", "runs", "host", "SOL", "×SOL", "% meas. peak",
            "B200 SOL", "first call ms"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("shape", "status") else "right")
    for r in summary.records:
        s = r.get("stats") or {}
        mean = s.get("mean")
        x_sol = f"{mean / r['sol_ns']:.2f}" if mean and r.get("sol_ns") else "-"
        meas = f"{100 * r['measured_sol_ns'] / mean:.1f}" if mean and r.get("measured_sol_ns") else "-"
        first = "-" if r.get("first_call_ns") is None else f"{r['first_call_ns'] / 1e6:,.1f}"
        style = "green" if r["status"] == "pass" else "red"
        host = us(r.get("host_ns")) + (" [yellow]host-bound[/]" if r.get("host_bound") else "")
        shown_mean = us(mean) + (" [yellow]throttled[/]" if throttled(r) else "")
        table.add_row(str(r["index"]), escape(r["shape"]), f"[{style}]{r['status']}[/]", shown_mean, us(s.get("err")),
                      us(s.get("best")), us(s.get("median")), str(s.get("runs", "-")), host, us(r.get("sol_ns")), x_sol,
                      meas, us(r.get("sol_b200_ns")), first)
    geo = summary.geomean_ns
    if geo:
        sols = [r["sol_ns"] for r in summary.records if r.get("sol_ns")]
        from ..stats import geomean
        geo_sol = geomean(sols) if len(sols) == len(summary.records) else None
        table.add_row("", "[bold]geomean[/]", "", f"[bold]{us(geo)}[/]", "", "", "", "", "", us(geo_sol),
                      f"{geo / geo_sol:.2f}" if geo_sol else "-", "", "", "")
    return drop_empty_columns(table)


CPU_TIMES = ("CPU times: for correctness and smoke timing only, not comparable across machines (wall-clock, "
             f"at most {CPU_MAX_SAMPLES} samples a case)")


def host_notes(summary: RunSummary, console: Console) -> None:
    """What a host-bound shape or a timed-out hold means for the contest's number, what contest timing does
    not watch, and what a CPU's times are for."""
    if summary.device.get("name") == CPU_NAME and any(r.get("stats") for r in summary.records):
        console.print(f"[yellow]{CPU_TIMES}[/]", highlight=False)
    if summary.timing == CONTEST and summary.device.get("name") != CPU_NAME:
        console.print("[yellow]contest timing[/]: as in the contest's loop, work on a side stream can run during the "
                      "clear, and no check after the region can tell it from the synchronize's own cost there; the "
                      "default timing (arena) holds every SM until the region starts and watches for it.",
                      highlight=False)
    bound = [r for r in summary.records if r.get("host_bound")]
    if bound:
        clear = next((r["hold_timeout_ns"] for r in bound if r.get("hold_timeout_ns")), None)
        console.print(f"[yellow]host-bound[/] ({', '.join(str(r['index']) for r in bound)}): queueing a call takes the host "
                      "longer than the GPU takes to run it. The contest hides it only while N calls x host time stay "
                      f"under its L2 clear{f' ({clear / 1e6:.1f} ms on this GPU)' if clear else ''}; beyond that, or on "
                      "a busier host, the host time shows in the contest's number.", highlight=False)
    for r in summary.records:
        if throttled(r):
            t = r["telemetry"]
            console.print(f"[yellow]{r['index']}: throttled: {len(throttled(r))} of {t['samples']} samples ran while "
                          f"the GPU slowed itself down ({', '.join(t['throttle_reasons'])}; SM clock "
                          f"{t['sm_mhz'][0]:.0f}-{t['sm_mhz'][2]:.0f} MHz); the mean includes them.[/]", highlight=False)
    for r in summary.records:
        if r.get("hold_timeouts"):
            console.print(f"[yellow]{r['index']}: in {r['hold_timeouts']} sample(s) the host had not queued every call "
                          f"after {r['hold_timeout_ns'] / 1e6:.1f} ms (as long as the contest's clear runs here): "
                          "custom_kernel synchronizes or is very slow to launch; those samples count host time, as "
                          "the contest's would.[/]", highlight=False)


def failures(summary: RunSummary, console: Console, show_traceback: bool = False) -> None:
    """Each distinct failure once, with the cases it hit; its traceback only with --traceback."""
    from ..protocol import brief
    seen = {}
    for r in summary.records:
        if r["status"] != "pass" and r["message"]:
            seen.setdefault((r["status"], r["message"]), []).append(f"{r['kind']} {r['index']} ({r['values']})")
    for (status, message), where in seen.items():
        shown = message if show_traceback else brief(message)
        console.print(f"[red]{status}[/]: {escape(', '.join(where))}", highlight=False)
        console.print(shown, markup=False, highlight=False)


def render(summary: RunSummary, console: Console, show_traceback: bool = False) -> None:
    if summary.mode == "test":
        console.print(test_table(summary))
    elif summary.mode == "profile":
        for r in summary.records:
            console.print(f"[bold]{escape(r['shape'])}[/]")
            console.print(r.get("profile") or r["message"], markup=False, highlight=False)
    else:
        console.print(benchmark_table(summary))
        host_notes(summary, console)
    failures(summary, console, show_traceback)


def as_json(summaries: list[RunSummary], precheck: list | None = None,
            previous_try: dict | None = None) -> list[dict]:
    """The default command's --json: one object per mode run (docs/json.md); a benchmark summary also holds
    `previous_try`, the comparison with the name's previous try (harness.views.previous), or null."""
    return [{
        "task": s.submission.task, "version": s.submission.version, "mode": s.mode, "shapes": s.shapes,
        "timing": s.timing,
        "passed": s.passed, "geomean_ns": s.geomean_ns, "precheck": precheck or [], "records": s.records,
        **({"previous_try": previous_try} if s.mode == "benchmark" else {}),
    } for s in summaries]


def plain(data):
    """`data` in JSON's own types: numpy numbers as numbers, NaN and infinities (a missing number, an interval
    of one round) as null."""
    if isinstance(data, dict):
        return {str(k): plain(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain(v) for v in data]
    if isinstance(data, np.generic):
        data = data.item()
    return None if isinstance(data, float) and not math.isfinite(data) else data


def dumps(data) -> str:
    """The text every --json prints (docs/json.md): strict JSON, indented; anything else (a path) as a string,
    as records are stored."""
    return json.dumps(plain(data), indent=2, allow_nan=False, default=str)
