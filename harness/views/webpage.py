"""`run.py report`: one static HTML page per GPU and timing method, the local counterpart of the
contest's leaderboard site. The standings first (each task's fastest version by stored runs, and the
local leaderboard's entries), then per task the lineage table, its chart, and the fastest version's
per-shape times against SOL with host µs and host-bound flags, and its roofline. Charts are embedded
as PNG data, so a page is one file that opens anywhere."""
import base64
import html
import io
import numbers
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from reference import TASKS

from .. import results
from ..rules import DEFAULT_TIMING
from . import plots
from .lineage import ViewError, benchmark_records, lineage_table, per_shape_table, pick_gpu, plural, scoped
from .standings import standings

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1240px; color: #1d232a; }
h1 { margin-bottom: 4px; } h2 { border-bottom: 2px solid #d0d7de; padding-bottom: 4px; margin-top: 40px; }
.meta, .note, figcaption { color: #57606a; font-size: 14px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; } th { background: #f0f3f6; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #f8fafb; } tr.best td { background: #fff4d6; font-weight: 600; }
td.host-bound { color: #b42318; font-weight: 600; }
img.chart { max-width: 100%; border: 1px solid #d0d7de; }
nav a { margin-right: 14px; }
"""


@dataclass
class Page:
    gpu: str
    timing: str
    path: Path
    tasks: list[str]  # the tasks with runs on this page


def cell(value) -> tuple[str, str]:
    """(class, text) of one table cell."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "", "–"
    if isinstance(value, numbers.Integral):
        return "num", str(value)
    if isinstance(value, numbers.Real):
        return "num", f"{value:,.2f}"
    if value == "yes":
        return "host-bound", "host-bound"
    return "", str(value)


def table_html(df: pd.DataFrame, css: str, key: str | None = None, best: str | None = None) -> str:
    """A table; rows get data-<key> from that column, and the row whose key is `best` class 'best'."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for record in df.astype(object).to_dict(orient="records"):
        attrs = ""
        if key is not None:
            attrs = f' data-{key}="{html.escape(str(record[key]))}"'
            attrs += ' class="best"' if record[key] == best else ""
        cells = "".join(f'<td class="{c}">{html.escape(t)}</td>' if c else f"<td>{html.escape(t)}</td>"
                        for c, t in map(cell, record.values()))
        rows.append(f"<tr{attrs}>{cells}</tr>")
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def figure_html(fig, css: str, caption: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=plots.DPI)
    plots.plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode()
    text = html.escape(caption)
    return (f'<figure><img class="chart {css}" alt="{text}" src="data:image/png;base64,{data}">'
            f"<figcaption>{text}</figcaption></figure>")


@dataclass
class TaskPart:
    task: str
    summary: dict | None  # the standings row; None when the task has no runs in scope
    html: str


def task_part(task: str, gpu: str, timing: str) -> TaskPart:
    anchor = f'<section class="task" id="task-{task}"><h2>{task}</h2>'
    try:
        scope, df = scoped(task, gpu, timing)
    except ViewError as exc:
        return TaskPart(task, None, f'{anchor}<p class="note">{html.escape(str(exc))}</p></section>')
    lineage = lineage_table(task, gpu, timing)
    table = lineage.table[lineage.table["runs"] > 0]
    best = table.sort_values("rank").iloc[0]
    shapes = per_shape_table(task, [best["version"]], gpu, timing).table
    shapes.columns = [c.removeprefix(f"{best['version']} ") for c in shapes.columns]
    flagged = int((shapes["host-bound"] == "yes").sum()) if "host-bound" in shapes else None
    v0 = table[table["version"] == "v0"]["geomean µs"]
    summary = {"task": task, "fastest (stored runs)": best["version"], "geomean µs": best["geomean µs"],
               "×SOL": best["×SOL"], "its runs": int(best["runs"]),
               "×v0": float(v0.iloc[0] / best["geomean µs"]) if len(v0) else None,
               "host-bound shapes": flagged, "versions with runs": len(table), "runs": scope.runs}
    parts = [anchor,
             f'<p class="summary">Fastest by stored runs: <b>{html.escape(best["version"])}</b> — '
             f"{best['geomean µs']:,.2f} µs geomean over {len(shapes) - 1} shapes"
             + (f", {best['×SOL']:.2f}× SOL" if pd.notna(best["×SOL"]) else "")
             + f", {plural(int(best['runs']), 'run')}. {html.escape(scope.title('lineage'))}.</p>",
             "<h3>Lineage</h3>", table_html(table, "lineage", key="version", best=best["version"]),
             figure_html(plots.lineage_figure(scope, df), "lineage",
                         f"{task}: geomean and every shape per version ({plural(scope.runs, 'run')})"),
             f"<h3>{html.escape(best['version'])} per shape</h3>", table_html(shapes, "shapes")]
    if df["flops"].notna().all() and df["bytes"].notna().all():
        parts.append(figure_html(plots.roofline_figure(scope, df), "roofline",
                                 f"{task} {best['version']}: achieved TFLOP/s against the datasheet roof"))
    parts.append("</section>")
    return TaskPart(task, summary, "".join(parts))


def page_html(gpu: str, timing: str) -> tuple[str, list[str]]:
    parts = [task_part(task, gpu, timing) for task in TASKS]
    summaries = [p.summary for p in parts if p.summary]
    try:
        board = standings(None, gpu, timing).table.drop(columns=["gpu"])
        entries = table_html(board, "leaderboard", key="try")
        top = board[board["rank"] == 1].drop_duplicates("task").set_index("task")
        for s in summaries:
            if s["task"] in top.index:
                s["best submitted"] = f"{top.loc[s['task'], 'try']} ({top.loc[s['task'], 'geomean µs']:,.2f} µs)"
    except ViewError as exc:
        entries = f'<p class="note">{html.escape(str(exc))}</p>'
    git = results.git_state()
    commit = (git.get("commit") or "unknown")[:12]
    runs = sum(s["runs"] for s in summaries)
    nav = "".join(f'<a href="#task-{p.task}">{p.task}</a>' for p in parts)
    body = [f"<h1>nvfp4-arena — {html.escape(gpu)}</h1>",
            f'<p class="meta">{timing} timing · {plural(len(summaries), "task")} with runs · {plural(runs, "complete run")}'
            f" · generated {results.now()} at commit {commit}</p>",
            f"<nav>{nav}</nav>",
            '<section id="standings"><h2>Standings</h2>',
            '<p class="note">Per task, the version with the lowest geomean over the contest\'s benchmark shapes, '
            "each shape's time the median over the version's complete runs. One run is weak evidence: "
            "<code>run.py submit --best</code> re-measures the top candidates interleaved before choosing.</p>",
            table_html(pd.DataFrame(summaries), "standings", key="task") if summaries else "",
            "<h3>Local leaderboard</h3>", entries, "</section>", *[p.html for p in parts]]
    title = f"nvfp4-arena — {gpu}, {timing} timing"
    document = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
                f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n")
    return document, [s["task"] for s in summaries]


def gpus_with_runs(timing: str) -> list[str]:
    frames = [benchmark_records(task) for task in TASKS]
    df = pd.concat([f for f in frames if not f.empty]) if any(not f.empty for f in frames) else pd.DataFrame()
    if df.empty or not (df["timing"] == timing).any():
        stored = "" if df.empty else "; stored methods: " + ", ".join(sorted(set(df["timing"])))
        raise ViewError(f"no {timing}-timed benchmark runs of any task{stored}")
    return sorted(set(df[df["timing"] == timing]["gpu"]))


def resolve_gpu(gpu: str, timing: str) -> str:
    frames = [f for f in (benchmark_records(task) for task in TASKS) if not f.empty]
    if not frames:
        raise ViewError("no benchmark runs stored")
    return pick_gpu(pd.concat(frames), gpu, timing)


def build(out_dir: Path, gpu: str | None = None, timing: str = DEFAULT_TIMING) -> list[Page]:
    """Write <out_dir>/<gpu>-<timing>.html for the named GPU, or for every GPU with runs of this method."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = []
    for name in [resolve_gpu(gpu, timing)] if gpu else gpus_with_runs(timing):
        document, tasks = page_html(name, timing)
        if not tasks:
            raise ViewError(f"no {timing}-timed runs on {name}")
        path = out_dir / f"{plots.slug(name)}-{timing}.html"
        path.write_text(document)
        pages.append(Page(name, timing, path, tasks))
    return pages
