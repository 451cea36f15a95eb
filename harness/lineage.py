"""The lineage view of results: each version's parent and idea (from its docstring) and its
stored benchmark runs, as pandas tables for `run.py list` and `run.py diff`."""
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .results import read, results_dir
from .stats import geomean
from .submission import SUBMISSIONS, docstring

PARENT = re.compile(r"Parent:\s*(v\d+\w*|none)", re.IGNORECASE)


@dataclass
class Version:
    name: str
    parent: str | None
    idea: str
    path: Path


def version_key(name: str):
    m = re.match(r"v(\d+)(.*)", name)
    return (int(m.group(1)), m.group(2)) if m else (1 << 30, name)


def versions(task: str) -> list[Version]:
    out = []
    for path in sorted((SUBMISSIONS / task).glob("v*.py"), key=lambda p: version_key(p.stem)):
        doc = docstring(path)
        first = doc.splitlines()[0] if doc else ""
        idea = first.split(" — ", 1)[1] if " — " in first else first
        m = PARENT.search(doc)
        parent = None if not m or m.group(1).lower() == "none" else m.group(1)
        out.append(Version(path.stem, parent, idea.strip(), path))
    return out


def benchmark_records(task: str, gpu: str | None = None, kind: str = "benchmarks") -> pd.DataFrame:
    """Passing benchmark-mode records of one case kind (contest benchmarks or smoke), one row per shape per run."""
    rows = [r for r in read(results_dir() / f"{task}.jsonl")
            if r.get("mode") == "benchmark" and r.get("kind") == kind and r.get("status") == "pass"
            and r.get("stats") and not r.get("unguarded")]
    df = pd.DataFrame([{
        "version": r["version"], "run_id": r["run_id"], "timestamp": r["timestamp"], "index": r["index"],
        "shape": r["shape"], "mean_ns": r["stats"]["mean"], "sol_ns": r.get("sol_ns"),
        "flops": r.get("flops"), "bytes": r.get("bytes"),
        "gpu": (r.get("gpu") or {}).get("name"),
    } for r in rows])
    if df.empty:
        return df
    gpu = gpu or default_gpu(df)
    return df[df["gpu"] == gpu]


def default_gpu(df: pd.DataFrame) -> str | None:
    """The GPU with the most records (CPU runs only when there is nothing else)."""
    counts = df["gpu"].value_counts()
    gpus = [g for g in counts.index if g != "cpu"]
    return gpus[0] if gpus else (counts.index[0] if len(counts) else None)


def latest_complete(df: pd.DataFrame, n_shapes: int) -> pd.DataFrame:
    """Per version, the shapes of its newest run that timed every benchmark shape."""
    if df.empty:
        return df
    sizes = df.groupby("run_id")["index"].nunique()
    complete = df[df["run_id"].isin(sizes[sizes == n_shapes].index)]
    newest = complete.sort_values("timestamp").groupby("version")["run_id"].last()
    return complete[complete["run_id"].isin(newest.values)]


def per_shape_table(task: str, names: list[str], n_shapes: int, gpu: str | None = None) -> pd.DataFrame:
    """Rows: benchmark shapes and a geomean row; columns per version: mean µs, ×parent, ×v0, ×SOL."""
    known = {v.name: v for v in versions(task)}
    latest = latest_complete(benchmark_records(task, gpu), n_shapes)
    if latest.empty:
        return pd.DataFrame()
    means = latest.pivot_table(index=["index", "shape"], columns="version", values="mean_ns")
    sols = latest.groupby(["index", "shape"])["sol_ns"].first()
    table = pd.DataFrame(index=means.index)
    for name in names:
        if name not in means:
            continue
        table[f"{name} µs"] = means[name] / 1e3
        parent = known[name].parent if name in known else None
        for label, other in (("×parent", parent), ("×v0", "v0")):
            if other and other in means and other != name:
                table[f"{name} {label}"] = means[other] / means[name]
        if sols.notna().all():
            table[f"{name} ×SOL"] = means[name] / sols
    geo = {col: geomean(list(table[col])) for col in table}
    table.loc[(len(table), "geomean"), :] = pd.Series(geo)
    return table


def lineage_table(task: str, n_shapes: int, gpu: str | None = None, kind: str = "benchmarks") -> pd.DataFrame:
    latest = latest_complete(benchmark_records(task, gpu, kind), n_shapes)
    geo = latest.groupby("version")["mean_ns"].apply(lambda s: geomean(list(s))) if not latest.empty else pd.Series()
    sol = latest.groupby("version")["sol_ns"].apply(lambda s: geomean(list(s))) if not latest.empty else pd.Series()
    rows = []
    for v in versions(task):
        mean = geo.get(v.name)
        parent_mean = geo.get(v.parent) if v.parent else None
        rows.append({"version": v.name, "parent": v.parent or "-", "idea": v.idea,
                     "geomean µs": mean / 1e3 if mean else None,
                     "×SOL": mean / sol[v.name] if mean and sol.get(v.name) else None,
                     "×parent": parent_mean / mean if mean and parent_mean else None})
    return pd.DataFrame(rows)
