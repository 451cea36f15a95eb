"""PNG charts of a lineage from stored benchmark runs: time per version for every shape (log
scale, SOL line, each version's idea), and a roofline placing the best version's shapes."""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import sol  # noqa: E402
from .lineage import benchmark_records, default_gpu, latest_complete, versions  # noqa: E402
from .stats import geomean  # noqa: E402


IDEA_LABELS_UP_TO = 10  # versions per chart that still get their idea written under the name


def tick_labels(order) -> tuple[list[str], dict]:
    """Tick labels and their style: a short lineage gets each version's idea under its name, slanted;
    a long one only the names, upright."""
    if len(order) <= IDEA_LABELS_UP_TO:
        return [f"{v.name}\n{v.idea[:22]}" for v in order], {"fontsize": 7, "rotation": 30, "ha": "right"}
    return [v.name for v in order], {"fontsize": 6, "rotation": 90}


def lineage_chart(task: str, n_shapes: int, out_dir: Path, gpu: str | None = None, kind: str = "benchmarks") -> Path:
    records = benchmark_records(task, gpu, kind)
    latest = latest_complete(records, n_shapes)
    if latest.empty:
        raise ValueError(f"no complete stored runs of {task}")
    gpu = latest["gpu"].iloc[0]
    order = [v for v in versions(task) if v.name in set(latest["version"])]
    shapes = latest.drop_duplicates("index").sort_values("index")
    labels, label_style = tick_labels(order)
    fig, axes = plt.subplots(1, len(shapes), figsize=(max(4.2, 0.22 * len(order)) * len(shapes), 4.8), squeeze=False, sharey=False)
    for ax, (_, shape) in zip(axes[0], shapes.iterrows()):
        rows = latest[latest["index"] == shape["index"]].set_index("version")
        ys = [rows.loc[v.name, "mean_ns"] / 1e3 for v in order]
        ax.plot(range(len(order)), ys, marker="o")
        if shape["sol_ns"]:
            ax.axhline(shape["sol_ns"] / 1e3, color="red", linestyle="--", label=f"SOL {shape['sol_ns'] / 1e3:.1f} µs")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(labels, **label_style)
        ax.set_title(shape["shape"], fontsize=9)
        ax.set_ylabel("mean µs (log)")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"{task} lineage on {gpu}")
    fig.tight_layout()
    path = out_dir / f"{task}_lineage.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def roofline_chart(task: str, n_shapes: int, out_dir: Path, gpu: str | None = None, kind: str = "benchmarks") -> Path:
    latest = latest_complete(benchmark_records(task, gpu, kind), n_shapes)
    if latest.empty:
        raise ValueError(f"no complete stored runs of {task}")
    gpu = latest["gpu"].iloc[0]
    best = min(set(latest["version"]), key=lambda v: geomean(list(latest[latest["version"] == v]["mean_ns"])))
    rows = latest[latest["version"] == best]
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    intensity = rows["flops"] / rows["bytes"]
    achieved = rows["flops"] / rows["mean_ns"] / 1e3  # TFLOP/s
    peak = sol.peak_for(gpu)
    if peak:
        rate = peak.simt_tflops if task in sol.SIMT_TASKS else peak.tensor_tflops
        xs = [min(intensity.min() / 4, 0.1), max(intensity.max() * 4, 2 * rate / peak.dram_tbps)]
        ridge = rate / peak.dram_tbps  # FLOP/byte where memory and math take equally long
        ax.plot([xs[0], ridge, xs[1]], [xs[0] * peak.dram_tbps, rate, rate], color="red",
                label=f"{peak.name} datasheet roof ({peak.dram_tbps} TB/s, {rate:g} TFLOP/s)")
    ax.scatter(intensity, achieved, zorder=3)
    for (_, r), x, y in zip(rows.iterrows(), intensity, achieved):
        ax.annotate(r["shape"], (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOP per byte (counted once)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"{task} {best} on {gpu}")
    ax.grid(True, which="both", alpha=0.3)
    if peak:
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = out_dir / f"{task}_roofline.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(task: str, n_shapes: int, out_dir: Path, gpu: str | None = None, kind: str = "benchmarks") -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    gpu = gpu or default_gpu(benchmark_records(task, None, kind))
    return [lineage_chart(task, n_shapes, out_dir, gpu, kind), roofline_chart(task, n_shapes, out_dir, gpu, kind)]
