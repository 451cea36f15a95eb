"""The lineage view of results: each version's parent and idea (from its docstring) and its stored
benchmark runs of one task on one GPU with one timing method, as tables for `list`, `diff`, `plot`,
`report` and `submit --best`. Runs are grouped by try, one content of a named file, under the try's
label (harness/views/tries.py).

A version's number is the geomean over shapes of the median over its complete runs (runs that
timed every shape), so one noisy run cannot move it far; per shape the statistic is the contest's
mean on a GPU and the median on a CPU, whose wall-clock samples carry outliers that dominate a mean.
"""
import ctypes
import re
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from reference.cases import cases, leaderboards

from ..protocol import GPU_SKIP, brief, needs_a_gpu, timing_of
from ..results import LOCAL, read_all, results_dir
from ..rules import DEFAULT_TIMING
from ..stats import geomean
from ..submission import SUBMISSIONS, SubmissionError, docstring, version_key
from . import tries
from .tables import shorten

PARENT = re.compile(r"Parent:\s*(v\d+\w*|none)", re.IGNORECASE)
CPU = "cpu"
COLUMNS = ["version", "name", "code", "run_id", "timestamp", "index", "shape", "mean_ns", "median_ns", "host_ns",
           "host_bound", "sol_ns", "flops", "bytes", "gpu", "timing"]


class ViewError(ValueError):
    """A view cannot answer what was asked; the message says what is stored instead."""


@dataclass
class Version:
    name: str
    parent: str | None
    idea: str
    path: Path


@dataclass(frozen=True)
class Scope:
    """The records one view compares: one task, GPU, timing method and shape set."""

    task: str
    gpu: str
    timing: str
    kind: str  # "benchmarks" (the contest's shapes) or "smoke"
    runs: int  # complete runs in scope

    @property
    def statistic(self) -> str:
        return "median" if self.gpu == CPU else "mean"

    @property
    def shape_set(self) -> str:
        return "contest" if self.kind == "benchmarks" else "smoke"

    def title(self, what: str) -> str:
        return (f"{self.task} {what} — {self.gpu}, {self.timing} timing, {self.shape_set} shapes; "
                f"numbers: per-shape {self.statistic}, median over runs")

    def as_dict(self) -> dict:
        return {**asdict(self), "statistic": self.statistic, "shape_set": self.shape_set}


@dataclass
class View:
    """What one view computed in its scope, twice: `body`, the --json's numbers under fixed snake_case keys with
    times in ns (docs/json.md), and `table`, the same numbers under the table's headers with times in µs;
    `runs` counts the complete runs per version."""

    scope: Scope
    body: dict
    table: pd.DataFrame
    runs: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return {**self.scope.as_dict(), **self.body}


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


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


def benchmark_records(task: str, kind: str = "benchmarks") -> pd.DataFrame:
    """Passing benchmark-mode records of one case kind (contest benchmarks or smoke), every GPU and
    timing method, one row per shape per run."""
    return benchmark_frame(task, read_all(f"{task}.jsonl"), kind)


def benchmark_frame(task: str, records: list[dict], kind: str) -> pd.DataFrame:
    """The passing benchmark-mode records among `records`, one row per shape per run; `version` is the
    try's label, `name` the name it was run under."""
    rows = [r for r in records
            if r.get("mode") == "benchmark" and r.get("kind") == kind and r.get("status") == "pass"
            and r.get("stats") and not r.get("unguarded")]
    df = pd.DataFrame([{
        "version": r["version"], "name": r["version"], "code": tries.record_code(r), "run_id": r["run_id"],
        "timestamp": r["timestamp"], "index": r["index"],
        "shape": r["shape"], "mean_ns": r["stats"]["mean"], "median_ns": r["stats"].get("median"),
        "host_ns": r["stats"].get("host_ns"), "host_bound": r.get("host_bound"), "sol_ns": r.get("sol_ns"),
        "flops": r.get("flops"), "bytes": r.get("bytes"), "gpu": (r.get("gpu") or {}).get("name"),
        "timing": timing_of(r),
    } for r in rows], columns=COLUMNS)
    df["version"] = tries.labels(task, df)
    return df


def run_counts(df: pd.DataFrame, column: str) -> str:
    """'legacy (61 runs), arena (2 runs)': distinct runs per value of a column, most first."""
    counts = df.groupby(column)["run_id"].nunique().sort_values(ascending=False, kind="stable")
    return ", ".join(f"{value} ({plural(int(n), 'run')})" for value, n in counts.items())


def pick_gpu(df: pd.DataFrame, gpu: str | None, timing: str) -> str:
    """The GPU named (exactly, or by a unique case-insensitive part such as 'H200'), or by default
    the one with the most runs of this timing method (a CPU only when there is nothing else)."""
    known = sorted(set(df["gpu"].dropna()))
    if gpu is None:
        pool = df[df["timing"] == timing] if (df["timing"] == timing).any() else df
        counts = pool.groupby("gpu")["run_id"].nunique().sort_values(ascending=False, kind="stable")
        gpus = [g for g in counts.index if g != CPU]
        return gpus[0] if gpus else counts.index[0]
    if gpu in known:
        return gpu
    matches = [g for g in known if gpu.lower() in g.lower()]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ViewError(f"no runs on a GPU named {gpu!r}; stored GPUs: {run_counts(df, 'gpu')}")
    raise ViewError(f"{gpu!r} names several GPUs ({', '.join(matches)}): give more of the name")


def smoke_hint(task: str, gpu: str | None, kind: str) -> str:
    """Where the asked-for runs are stored on the smoke shapes instead (a CPU's runs are): a hint to add --smoke."""
    if kind != "benchmarks":
        return ""
    smoke = benchmark_records(task, "smoke")
    if smoke.empty or (gpu is not None and not smoke["gpu"].str.lower().str.contains(gpu.lower(), regex=False).any()):
        return ""
    return f"; runs on the smoke shapes are stored ({run_counts(smoke, 'gpu')}): add --smoke to see them"


def this_machine() -> tuple[str, str]:
    """The GPU name and case kind this machine's runs are stored under: a CPU's smoke runs where no CUDA driver loads
    (told without importing torch), else the timing device's name (harness.device) and, on a GPU, the contest's
    benchmarks."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return CPU, "smoke"
    from .. import device
    gpu = device.name()
    return gpu, "smoke" if gpu == CPU else "benchmarks"


def default_scope(task: str, gpu: str | None) -> tuple[str | None, str]:
    """The GPU and case kind a view reads where only `gpu` (or nothing) was asked for: this machine's runs where it
    has any of the task, else the contest's benchmarks (on the GPU asked for, or the one with the most runs)."""
    here, kind = this_machine()
    if gpu is None:
        mine = benchmark_records(task, kind)
        return (here, kind) if (mine["gpu"] == here).any() else (None, "benchmarks")
    return gpu, kind if gpu.lower() in here.lower() else "benchmarks"


def complete_runs(df: pd.DataFrame, n_shapes: int) -> pd.DataFrame:
    """Only the runs that timed every shape of the set."""
    sizes = df.groupby("run_id")["index"].nunique()
    return df[df["run_id"].isin(sizes[sizes == n_shapes].index)]


def scoped(task: str, gpu: str | None = None, timing: str | None = DEFAULT_TIMING,
           kind: str | None = "benchmarks") -> tuple[Scope, pd.DataFrame]:
    """The complete runs of one task on one GPU with one timing method, or a ViewError that says
    which GPUs and methods are stored; kind None: default_scope's; timing None (none asked for): the default method,
    or where the scope has no runs of it, the method most of its runs have (committed records of an older method)."""
    if kind is None:
        gpu, kind = default_scope(task, gpu)
    shape_set = "contest" if kind == "benchmarks" else "smoke"
    df = benchmark_records(task, kind)
    if df.empty:
        raise ViewError(f"no benchmark runs of {task} on the {shape_set} shapes stored in {results_dir()} "
                        f"(CPU runs: in {results_dir() / LOCAL}): "
                        f"run benchmark mode on some versions first{smoke_hint(task, gpu, kind)}")
    try:
        gpu = pick_gpu(df, gpu, timing or DEFAULT_TIMING)
    except ViewError as exc:
        raise ViewError(f"{exc}{smoke_hint(task, gpu, kind)}") from None
    on_gpu = df[df["gpu"] == gpu]
    if timing is None:
        methods = on_gpu.groupby("timing")["run_id"].nunique().sort_values(ascending=False, kind="stable")
        timing = DEFAULT_TIMING if DEFAULT_TIMING in methods.index or methods.empty else methods.index[0]
    picked = on_gpu[on_gpu["timing"] == timing]
    if picked.empty:
        other = on_gpu["timing"].value_counts().index[0]
        raise ViewError(f"no {timing}-timed runs of {task} on {gpu}; stored: {run_counts(on_gpu, 'timing')} — "
                        f"re-measure, or pass --timing {other}")
    n_shapes = len(cases(task, kind))
    complete = complete_runs(picked, n_shapes)
    if complete.empty:
        raise ViewError(f"no {timing}-timed run of {task} on {gpu} timed all {n_shapes} {shape_set} shapes "
                        f"(a run with --case times only some): run benchmark mode without --case")
    return Scope(task, gpu, timing, kind, complete["run_id"].nunique()), complete


def per_shape(df: pd.DataFrame) -> pd.DataFrame:
    """Per version and shape, the median over runs of each number, and whether any run was host-bound."""
    grouped = df.groupby(["version", "index"])
    out = grouped[["mean_ns", "median_ns", "host_ns", "sol_ns", "flops", "bytes"]].median()
    out["shape"] = grouped["shape"].first()
    out["host_bound"] = grouped["host_bound"].apply(lambda s: None if s.isna().all() else bool(s.fillna(False).any()))
    return out


@dataclass(frozen=True)
class Score:
    """A version's ranking number and the spread of its runs' geomeans (ns)."""

    version: str
    runs: int
    geomean_ns: float
    low_ns: float
    high_ns: float
    sol_ns: float | None

    @property
    def spread(self) -> float | None:
        return (self.high_ns - self.low_ns) / self.geomean_ns if self.runs > 1 else None


def scores(scope: Scope, df: pd.DataFrame) -> dict[str, Score]:
    column = f"{scope.statistic}_ns"
    shapes = per_shape(df)
    out = {}
    for version, rows in df.groupby("version"):
        run_geo = [geomean(list(r[column])) for _, r in rows.groupby("run_id")]
        mine = shapes.loc[version]
        sol = geomean(list(mine["sol_ns"])) if mine["sol_ns"].notna().all() else None
        out[version] = Score(version, len(run_geo), geomean(list(mine[column])), min(run_geo), max(run_geo), sol)
    return out


def ranked(scope: Scope, df: pd.DataFrame) -> list[Score]:
    """Fastest first; equal numbers keep lineage order."""
    return sorted(scores(scope, df).values(), key=lambda s: (s.geomean_ns, version_key(s.version)))


def candidates(task: str, scope: Scope, df: pd.DataFrame):
    """The tries in scope that can be run again (tries.runnable: lineage versions as their files are now, and any
    other name's try whose code is kept), fastest first, as Scores: what `submit --best` nominates from and what
    `list` calls the fastest. A generator: the records are read for the first one asked for."""
    records = None
    for score in ranked(scope, df):
        records = read_all(f"{task}.jsonl") if records is None else records
        if tries.runnable(task, score.version, df, records):
            yield score


def us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e3


def last_failures(task: str, gpu: str, names: list[str]) -> dict:
    """Per lineage version named, as its file is now: its newest run on this GPU (any mode or timing method) when
    that run did not pass, as {status, mode, when, message}: why the version has no runs there."""
    current = {name: tries.current_code(task, name) for name in names}
    newest = {}
    for r in read_all(f"{task}.jsonl"):
        name = r.get("version")
        if name in current and (r.get("gpu") or {}).get("name") == gpu \
                and tries.record_code(r) == current[name] \
                and r.get("timestamp", "") >= newest.get(name, {}).get("timestamp", ""):
            newest[name] = r
    def outcome(r: dict) -> dict:  # a GPU-only file on a machine without one: skipped, as the sweep says
        if needs_a_gpu(r):
            return {"status": "skipped", "message": GPU_SKIP}
        return {"status": r["status"], "message": shorten(brief(r.get("message") or ""), 200)}
    return {name: {**outcome(r), "mode": r.get("mode"), "when": r.get("timestamp", "")[:10]}
            for name, r in newest.items() if r.get("status") not in ("pass", "skipped")}


def unmeasured(task: str, gpu: str, timing: str = DEFAULT_TIMING, kind: str = "benchmarks") -> list[str]:
    """Lineage versions, as their files are now, without a complete `timing`-timed run of `kind` on `gpu`: what a
    sweep has left to measure there (`run.py sweep --versions missing`)."""
    names = [v.name for v in versions(task)]
    try:
        scope, df = scoped(task, gpu, timing, kind)
    except ViewError:  # no run at all in that scope
        return names
    measured = scores(scope, df)
    return [name for name in names if name not in measured]


def other_timings(every: pd.DataFrame, scope: Scope, names: list[str]) -> dict:
    """Per version named: its runs on this GPU timed another way, as run_counts words ('legacy (3 runs)'), where
    it has any: why a version that still runs has no runs in scope."""
    here = every[(every["gpu"] == scope.gpu) & (every["timing"] != scope.timing) & every["version"].isin(names)]
    return {name: run_counts(runs, "timing") for name, runs in here.groupby("version")}


def lineage_table(task: str, gpu: str | None = None, timing: str | None = DEFAULT_TIMING,
                  kind: str | None = "benchmarks") -> View:
    """Every lineage version, then every other try with runs (a version's earlier contents after it, a
    name's tries newest first): parent, idea, runs, geomean, the spread of its runs, rank, ×SOL and
    ×parent (against the parent's current content, or its newest try with runs here, as named); for a version
    without runs whose last run on this GPU did not pass, that run (last_failures), and its runs there timed
    another way (other_timings); and the fastest of the tries that can be run again (candidates), or None."""
    scope, df = scoped(task, gpu, timing, kind)
    score = scores(scope, df)
    rank = {s.version: i + 1 for i, s in enumerate(ranked(scope, df))}
    every = benchmark_records(task, scope.kind)
    lineage = {v.name: v for v in versions(task)}
    unscored = [name for name in lineage if name not in score]
    failures, elsewhere = last_failures(task, scope.gpu, unscored), other_timings(every, scope, unscored)
    rows = []
    for name in tries.order([*lineage, *score], list(lineage), every):
        v = lineage.get(tries.name_of(name, every))
        idea = (v.idea if v and v.name == name else "edited since" if tries.edited_since(task, name, every)
                else "(not in the lineage)")
        parent = (tries.stand_in(v.parent, score, every) or v.parent) if v and v.parent else None
        s, p = score.get(name), score.get(parent)
        rows.append({"rank": rank.get(name), "version": name, "parent": parent, "idea": idea,
                     "runs": s.runs if s else 0, "geomean_ns": s.geomean_ns if s else None,
                     "spread_pct": 100 * s.spread if s and s.spread is not None else None,
                     "sol_multiple": s.geomean_ns / s.sol_ns if s and s.sol_ns else None,
                     "speedup_vs_parent": p.geomean_ns / s.geomean_ns if s and p else None,
                     "last_failure": failures.get(name), "other_timings": elsewhere.get(name)})
    table = pd.DataFrame([{"rank": r["rank"], "version": r["version"], "parent": r["parent"] or "-", "idea": r["idea"],
                           "runs": r["runs"], "geomean µs": us(r["geomean_ns"]), "spread %": r["spread_pct"],
                           "×SOL": r["sol_multiple"], "×parent": r["speedup_vs_parent"]} for r in rows])
    table = table.astype({"rank": "Int64", "runs": "Int64", "geomean µs": float, "spread %": float, "×SOL": float,
                          "×parent": float})
    fastest = next(candidates(task, scope, df), None)
    return View(scope, {"rows": rows, "fastest": fastest.version if fastest else None}, table,
                {name: s.runs for name, s in score.items()})


def flags(gpu: str, kind: str, timing: str, asked_timing: str) -> str:
    """The options that make a view read runs of this GPU, case kind and timing method."""
    words = [] if gpu == CPU and kind == "smoke" else ["--gpu", shlex.quote(gpu)]
    words += ["--smoke"] if kind == "smoke" else []
    words += ["--timing", timing] if timing != asked_timing else []
    return " ".join(words)


def stored_elsewhere(task: str, name: str, timing: str) -> list[str]:
    """Where a try (a label, or a bare name: any of its tries) has complete runs, one GPU and shape set at a time,
    most runs first, as 'GPU (shape set, N timing-timed runs): add OPTIONS' (the timing asked for where it has such
    runs there, else the method with the most)."""
    found = []
    for kind in ("benchmarks", "smoke"):
        df = benchmark_records(task, kind)
        mine = df[(df["version"] == name) | (df["name"] == name)]
        complete = complete_runs(mine, len(cases(task, kind))) if len(mine) else mine
        for gpu, runs in complete.groupby("gpu"):
            counts = runs.groupby("timing")["run_id"].nunique().sort_values(ascending=False, kind="stable")
            how = timing if timing in counts.index else counts.index[0]
            found.append((-int(counts.sum()), f"{gpu} ({'contest' if kind == 'benchmarks' else 'smoke'} shapes, "
                                              f"{plural(int(counts[how]), f'{how}-timed run')}): add "
                                              f"{flags(gpu, kind, how, timing)}"))
    return [text for _, text in sorted(found, key=lambda pair: pair[0])]


def check_names(task: str, names: list[str], scope: Scope, df: pd.DataFrame) -> None:
    """Names without a complete run in scope are errors that say where they have runs (and the options that show
    them there); a name that is neither in the lineage nor stored anywhere is unknown."""
    have = set(df["version"])
    missing = [n for n in names if n not in have]
    if not missing:
        return
    lineage = [v.name for v in versions(task)]
    elsewhere = {n: stored_elsewhere(task, n, scope.timing) for n in missing}
    unknown = [n for n in missing if n not in lineage and not elsewhere[n]]
    if unknown:
        stored = set(benchmark_records(task, "benchmarks")["name"]) | set(benchmark_records(task, "smoke")["name"])
        raise ViewError(f"unknown version{'s' if len(unknown) > 1 else ''} of {task}: {', '.join(unknown)}; "
                        f"known: {', '.join(lineage + sorted(stored - set(lineage), key=version_key))}")
    here = f"on {scope.gpu} ({scope.shape_set} shapes)"
    said = [f"{n} has runs on {'; on '.join(elsewhere[n])}" if elsewhere[n] else f"{n} has none anywhere"
            for n in missing]
    raise ViewError(f"no complete {scope.timing}-timed run of {', '.join(missing)} {here}: {'. '.join(said)}. "
                    f"Tries with runs {here}: {', '.join(sorted(have, key=version_key)) or 'none'}")


# diff's numbers per version and shape: the JSON's key, and the table's column after the version's name
# (×first reads ×<the first try named>: the tries' own ratio where a try has no parent or v0, as `diff --measure`'s)
DIFF_COLUMNS = {"mean_ns": "mean µs", "median_ns": "median µs", "speedup_vs_first": "×first",
                "speedup_vs_parent": "×parent", "speedup_vs_v0": "×v0", "sol_multiple": "×SOL",
                "host_ns": "host µs", "host_bound": "host-bound"}


def per_shape_table(task: str, names: list[str], gpu: str | None = None, timing: str | None = DEFAULT_TIMING,
                    kind: str | None = "benchmarks") -> View:
    """Per shape and try named (a version, a file, name@hash: tries.pick): mean and median (each the median
    over runs), ×first (the first try named, against every later one), ×parent, ×v0 (each against that version's
    current content, or its newest try with runs here) and ×SOL on the scope's statistic, and host time per call and
    a host-bound flag where the records carry them; then the geomean over shapes of each number. The body holds them
    per shape as a list of tries (docs/json.md), the table as a column per try and number, with a geomean row."""
    scope, df = scoped(task, gpu, timing, kind)
    every = benchmark_records(task, scope.kind)
    present = set(df["version"])
    try:
        names = list(dict.fromkeys(tries.pick(task, n, present, every, leaderboards()) for n in names))
    except (tries.TryError, SubmissionError) as exc:
        raise ViewError(str(exc)) from None
    check_names(task, names, scope, df)
    parents = {v.name: v.parent for v in versions(task)}
    shapes = per_shape(df)
    column = f"{scope.statistic}_ns"
    first = shapes.loc[names[0]]

    def numbers(values) -> list:
        return [None if pd.isna(v) else float(v) for v in values]
    per_version = {}
    for name in names:
        mine = shapes.loc[name]
        ratios = {"speedup_vs_first": numbers(first[column] / mine[column]) if name != names[0] else [None] * len(mine)}
        for key, version in (("speedup_vs_parent", parents.get(tries.name_of(name, every))), ("speedup_vs_v0", "v0")):
            other = tries.stand_in(version, present, every) if version else None
            ratios[key] = (numbers(shapes.loc[other][column] / mine[column]) if other and other != name
                           else [None] * len(mine))
        sol = numbers(mine[column] / mine["sol_ns"]) if mine["sol_ns"].notna().all() else [None] * len(mine)
        per_version[name] = {"mean_ns": numbers(mine["mean_ns"]), "median_ns": numbers(mine["median_ns"]), **ratios,
                             "sol_multiple": sol, "host_ns": numbers(mine["host_ns"]),
                             "host_bound": [None if pd.isna(b) else bool(b) for b in mine["host_bound"]]}
    rows = [{"index": int(index), "shape": label,
             "versions": [{"version": name, **{key: values[i] for key, values in per_version[name].items()}}
                          for name in names]}
            for i, (index, label) in enumerate(zip(first.index, first["shape"]))]
    def across(values: list) -> float | None:  # the geomean over the shapes that have the number
        known = [v for v in values if v is not None]
        return geomean(known) if known else None
    geo = [{"version": name, **{key: across(values) for key, values in per_version[name].items() if key != "host_bound"}}
           for name in names]
    runs = df.groupby("version")["run_id"].nunique()
    body = {"versions": [{"version": name, "runs": int(runs[name])} for name in names], "rows": rows, "geomean": geo}
    return View(scope, body, diff_frame(rows, geo, names), {name: int(runs[name]) for name in names})


def per_shape_table_found(task: str, names: list[str], timing: str | None = DEFAULT_TIMING,
                          kind: str | None = None) -> View:
    """per_shape_table where no GPU was named: in the default scope (default_scope's where kind is None), or else on
    the first GPU and case kind whose runs hold every named try, this machine's kind first, so that a file run only
    on this machine's CPU is found among its smoke runs. The error is the default scope's when no scope holds them
    all: it says where each missing try has runs."""
    try:
        return per_shape_table(task, names, None, timing, kind)
    except ViewError as first:
        for other_kind in dict.fromkeys((kind or this_machine()[1], "smoke", "benchmarks")):
            stored = benchmark_records(task, other_kind)
            for gpu in stored["gpu"].value_counts().index if not stored.empty else []:
                try:
                    return per_shape_table(task, names, gpu, timing, other_kind)
                except ViewError:
                    continue
        raise first


def diff_frame(rows: list[dict], geo: list[dict], names: list[str]) -> pd.DataFrame:
    """diff's table: a column per version and number that any shape has, µs for ns, and the geomean row."""
    def shown(key, value):
        if key == "host_bound":
            return None if value is None else "yes" if value else "no"
        return us(value) if key.endswith("_ns") else value
    table = pd.DataFrame({"#": [str(r["index"]) for r in rows], "shape": [r["shape"] for r in rows]})
    last = {"#": "", "shape": "geomean"}
    for k, name in enumerate(names):
        for key, header in DIFF_COLUMNS.items():
            values = [r["versions"][k][key] for r in rows]
            if any(v is not None for v in values):
                header = f"×{names[0]}" if key == "speedup_vs_first" else header
                table[f"{name} {header}"] = [shown(key, v) for v in values]
                last[f"{name} {header}"] = shown(key, geo[k].get(key))
    return pd.concat([table, pd.DataFrame([last])], ignore_index=True)
