"""PNG charts of a lineage on one GPU with one timing method: the geomean per version on top (the
ranking number, best version marked, spread of runs as bars), every shape below it, and a roofline
of the best version whose shape labels sit in a column beside the plot, spaced so they never
overlap. File names carry the task, GPU, timing method and shape set, so no chart overwrites another."""
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .. import sol  # noqa: E402
from . import tries  # noqa: E402
from .lineage import Scope, benchmark_records, per_shape, plural, ranked, scoped, scores, versions  # noqa: E402
from ..rules import DEFAULT_TIMING  # noqa: E402

IDEA_LABELS_UP_TO = 10  # versions per chart that still get their idea written under the name
WIDTH_IN = 12.0  # every lineage chart is this wide (1200 px at DPI), however many versions
DPI = 100
TICK_PT = 8
LABEL_PT = 8
CHAR_EM = 0.6  # a character's width in a sans-serif font, as a share of its size


def slug(gpu: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"^nvidia\s+", "", gpu.lower())).strip("-")


def chart_path(out_dir: Path, scope: Scope, what: str) -> Path:
    return out_dir / f"{scope.task}_{slug(scope.gpu)}_{scope.timing}_{scope.kind}_{what}.png"  # kind: benchmarks | smoke


def tick_labels(order) -> tuple[list[str], dict]:
    """Tick labels and their style: a short lineage gets each version's idea under its name, slanted;
    a long one only the names."""
    if len(order) <= IDEA_LABELS_UP_TO:
        return [f"{v.name}\n{v.idea[:28]}" for v in order], {"fontsize": 7, "rotation": 30, "ha": "right"}
    return [v.name for v in order], {"fontsize": TICK_PT}


def fit_ticks(labels: list[str], axes_width_in: float) -> dict:
    """Upright names when they fit side by side in the axes, else turned 90 degrees; never smaller than TICK_PT."""
    needed_pt = sum(len(label) + 1 for label in labels) * CHAR_EM * TICK_PT
    return {"fontsize": TICK_PT, "rotation": 0 if needed_pt < 0.9 * axes_width_in * 72 else 90}


def fit_turned(labels: list[str], axes_width_in: float) -> bool:
    """Whether the labels, turned 90 degrees, fit side by side in the axes (a turned label takes about
    1.1 times its size, with the gap to the next)."""
    return len(labels) * 1.1 * TICK_PT < 0.9 * axes_width_in * 72


def spread_labels(ys: list[float], gap: float, low: float = 0.0, high: float = 1.0) -> list[float]:
    """Label heights as close to `ys` as possible, at least `gap` apart and inside [low, high]
    (where they do not fit, they keep the gap and start at low); returned in the order given."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed = [min(max(ys[i], low), high) for i in order]
    for k in range(1, len(placed)):
        placed[k] = max(placed[k], placed[k - 1] + gap)
    if placed and placed[-1] > high:
        placed[-1] = high
        for k in range(len(placed) - 2, -1, -1):
            placed[k] = min(placed[k], placed[k + 1] - gap)
    if placed and placed[0] < low:
        placed = [low + k * gap for k in range(len(placed))]
    out = [0.0] * len(ys)
    for k, i in enumerate(order):
        out[i] = placed[k]
    return out


def draw_series(ax, names, ys, lows, highs, sol_ns, title, best):
    """One panel: µs per version (log), run spread as error bars, SOL line, the best version marked."""
    xs = range(len(names))
    ax.plot(xs, ys, marker="o", markersize=4, color="tab:blue", zorder=2)
    err = [[y - lo for y, lo in zip(ys, lows)], [hi - y for y, hi in zip(ys, highs)]]
    ax.errorbar(xs, ys, yerr=err, fmt="none", ecolor="tab:blue", alpha=0.5, capsize=2)
    if sol_ns and math.isfinite(sol_ns):  # a CPU has no speed of light: its records carry none
        ax.axhline(sol_ns / 1e3, color="red", linestyle="--", linewidth=1, label=f"SOL {sol_ns / 1e3:.1f} µs")
    i = names.index(best)
    ax.plot([i], [ys[i]], marker="*", markersize=13, color="tab:orange", zorder=3,
            label="best: " + best.replace("$", r"\$") + f" {ys[i]:,.1f} µs")  # a name's "$" is no TeX
    ax.set_yscale("log")
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_title(title, fontsize=9, loc="left", parse_math=False)
    ax.set_ylabel("µs (log)", fontsize=8)
    ax.tick_params(axis="y", labelsize=TICK_PT)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)


def lineage_figure(scope: Scope, df):
    """Geomean panel across the top, then the shapes two per row (one per row where the tries would not fit
    in half the width); x: tries in the order `list` shows them."""
    column = f"{scope.statistic}_ns"
    score = scores(scope, df)
    shapes = per_shape(df)
    spread = df.groupby(["version", "index"])[column].agg(["min", "max"])
    lineage = versions(scope.task)
    order = [v for v in lineage if v.name in score]
    names = tries.order(list(score), [v.name for v in lineage], benchmark_records(scope.task, scope.kind))
    best = ranked(scope, df)[0].version
    indices = sorted(set(df["index"]))
    cols = 1 if len(indices) == 1 or not fit_turned(names, WIDTH_IN / 2 - 1.0) else 2
    rows = math.ceil(len(indices) / cols)
    fig = plt.figure(figsize=(WIDTH_IN, 3.8 + 2.9 * rows), layout="constrained")
    grid = fig.add_gridspec(1 + rows, cols, height_ratios=[1.35] + [1] * rows)
    top = fig.add_subplot(grid[0, :])
    draw_series(top, names, [score[n].geomean_ns / 1e3 for n in names], [score[n].low_ns / 1e3 for n in names],
                [score[n].high_ns / 1e3 for n in names], score[best].sol_ns,
                f"geomean over {len(indices)} shapes (the ranking number; bars: fastest and slowest run)", best)
    labels, style = tick_labels(order) if len(names) == len(order) else (names, fit_ticks(names, WIDTH_IN - 1.0))
    top.set_xticks(range(len(names)), labels, **style, parse_math=False)  # names and ideas are text, not TeX
    for k, index in enumerate(indices):
        ax = fig.add_subplot(grid[1 + k // cols, k % cols])
        mine = [shapes.loc[(n, index)] for n in names]
        draw_series(ax, names, [m[column] / 1e3 for m in mine],
                    [spread.loc[(n, index), "min"] / 1e3 for n in names],
                    [spread.loc[(n, index), "max"] / 1e3 for n in names], mine[0]["sol_ns"],
                    f"shape {index}: {mine[0]['shape']}", min(names, key=lambda n: shapes.loc[(n, index)][column]))
        ax.set_xticks(range(len(names)), names, **fit_ticks(names, WIDTH_IN / cols - 1.0), parse_math=False)
    fig.suptitle(scope.title(f"lineage ({plural(scope.runs, 'run')})"), fontsize=11, parse_math=False)
    return fig


def lineage_chart(scope: Scope, df, out_dir: Path) -> Path:
    fig = lineage_figure(scope, df)
    path = chart_path(out_dir, scope, "lineage")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def roofline_figure(scope: Scope, df):
    """The best version's shapes against this GPU's datasheet roof; labels in a column on the right,
    joined to their points, the figure widened to hold the longest label."""
    best = ranked(scope, df)[0].version
    rows = per_shape(df).loc[best]
    column = f"{scope.statistic}_ns"
    intensity = list(rows["flops"] / rows["bytes"])
    achieved = list(rows["flops"] / rows[column] / 1e3)  # TFLOP/s
    labels = [f"{i}: {shape}" for i, shape in zip(rows.index, rows["shape"])]
    label_in = max(len(label) for label in labels) * CHAR_EM * LABEL_PT / 72 + 0.5
    fig = plt.figure(figsize=(6.5 + label_in, 5.2))
    ax = fig.add_axes((0.1, 0.22, 5.6 / (6.5 + label_in), 0.66))
    peak = sol.peak_for(scope.gpu)
    xs = [min(intensity) / 4, max(intensity) * 4]
    ys = [min(achieved) / 4, max(achieved) * 4]
    if peak:
        rate = peak.simt_tflops if scope.task in sol.SIMT_TASKS else peak.tensor_tflops
        ridge = rate / peak.dram_tbps  # FLOP/byte where memory and math take equally long
        xs = [min(xs[0], ridge / 10), max(xs[1], ridge * 4)]
        ys = [min(ys[0], xs[0] * peak.dram_tbps), max(ys[1], rate * 2)]
        ax.plot([xs[0], ridge, xs[1]], [xs[0] * peak.dram_tbps, rate, rate], color="red",
                label=f"{peak.name} datasheet roof ({peak.dram_tbps} TB/s, {rate:g} TFLOP/s)")
    ax.scatter(intensity, achieved, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xs)
    ax.set_ylim(*ys)
    height_pt = 0.66 * 5.2 * 72
    fractions = [(math.log(y) - math.log(ys[0])) / (math.log(ys[1]) - math.log(ys[0])) for y in achieved]
    placed = spread_labels(fractions, 1.5 * LABEL_PT / height_pt)
    for label, x, y, at in zip(labels, intensity, achieved, placed):
        ax.annotate(label, (x, y), xytext=(1.03, at), textcoords="axes fraction", fontsize=LABEL_PT, va="center",
                    annotation_clip=False, arrowprops={"arrowstyle": "-", "color": "0.6", "linewidth": 0.7})
    ax.set_xlabel("FLOP per byte (counted once)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"{scope.task} {best} — {scope.gpu}, {scope.timing} timing, {scope.shape_set} shapes", fontsize=10,
                 loc="left", parse_math=False)
    ax.grid(True, which="both", alpha=0.3)
    if peak:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0, -0.12), frameon=False)
    return fig


def roofline_chart(scope: Scope, df, out_dir: Path) -> Path | None:
    """None when the records carry no FLOP and byte counts."""
    if df["flops"].isna().any() or df["bytes"].isna().any():
        return None
    fig = roofline_figure(scope, df)
    path = chart_path(out_dir, scope, "roofline")
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot(task: str, out_dir: Path, gpu: str | None = None, timing: str = DEFAULT_TIMING,
         kind: str | None = "benchmarks") -> list[Path]:
    """The lineage chart and the roofline of one scope (lineage.scoped; kind None: this machine's where it has
    runs)."""
    scope, df = scoped(task, gpu, timing, kind)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [p for p in (lineage_chart(scope, df, out_dir), roofline_chart(scope, df, out_dir)) if p]
