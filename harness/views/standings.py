"""The local leaderboard (results/leaderboard.jsonl; a CPU's entries in results/local/) and files
ready for the real contest."""
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import results
from ..protocol import ARENA_REFILL_SCHEMA, WORKER_ARENA_TIMING, timing_of
from ..rules import DEFAULT_TIMING
from . import tries
from .lineage import ViewError
from ..submission import POPCORN, Submission, code_sha256

CONTEST_GPU = "B200"
BOARD = "leaderboard.jsonl"


@dataclass
class Board:
    """Ranked entries of one timing method, and what they span: `rows` under fixed snake_case keys with times in
    ns (the --json, docs/json.md), `table` the same under the table's headers with times in µs. An entry's `schema`
    is its records' (docs/records.md): from schema 8 an arena entry is the evaluator's clock; older arena entries read
    as arena-worker (the worker's events), of which those of schema 7 were timed with the L2 refill, older ones
    without."""

    timing: str
    gpus: list[str]
    rows: list[dict]
    note: str = ""  # the entries it leaves out, or what an empty board means and where the other entries are

    @property
    def title(self) -> str:
        return (f"local leaderboard — {', '.join(self.gpus) or 'no GPU'}, {self.timing} timing, "
                f"{len(self.rows)} {'entry' if len(self.rows) == 1 else 'entries'}")

    @property
    def table(self) -> pd.DataFrame:
        """The rows under the table's headers: each entry's try as every view names it (`my_kernel@1a2b3c4`, `v12`)."""
        columns = ["task", "gpu", "shapes", "rank", "try", "geomean µs", "best so far µs", "schema", "when"]
        return pd.DataFrame([{**{k: r[k] for k in ("task", "gpu", "shapes", "rank", "try", "when", "schema")},
                              "geomean µs": r["geomean_ns"] / 1e3, "best so far µs": r["best_so_far_ns"] / 1e3}
                             for r in self.rows], columns=columns)

    def as_json(self) -> dict:
        return {"timing": self.timing, "gpus": self.gpus, "entries": len(self.rows), "rows": self.rows,
                "note": self.note}


def leaderboard_path(device_name: str | None = None) -> Path:
    return results.records_dir(device_name) / BOARD


def add_entry(sub: Submission, summary, shapes: str) -> dict:
    """The entry carries the content the run hashed and its worker imported (sub.text), never the file as it reads
    afterwards: a file that rewrites itself after its import would otherwise be submitted as other code."""
    entry = {
        "task": sub.task, "version": sub.version, "sha256": sub.sha256, "source": sub.text,
        "geomean_ns": summary.geomean_ns, "shapes": shapes,
        "means_ns": {r["shape"]: r["stats"]["mean"] for r in summary.records if r.get("stats")},
        "gpu": summary.device.get("name"), "run_id": summary.records[0]["run_id"], "when": results.now(),
        "git": results.git_state(), "timing": timing_of(summary.records[0]),
        "schema": summary.records[0].get("schema"),
    }
    results.append(leaderboard_path(entry["gpu"]), entry)
    return entry


def entry_json(entry: dict) -> dict:
    """An entry as submit --json prints it (docs/json.md): without its source, and its per-shape means as a list
    (a shape is a value, never a key)."""
    kept = {k: v for k, v in entry.items() if k not in ("source", "means_ns")}
    return {**kept, "means": [{"shape": shape, "mean_ns": ns} for shape, ns in entry["means_ns"].items()]}


def contest_file(sub: Submission, leaderboard: str, device_name: str | None = None) -> Path:
    """The submission with the contest's #!POPCORN headers, under results/submit/ (a CPU's under
    results/local/submit/): its own header lines among the comments it opens with give way to them, and the rest
    of it is the measured file byte for byte (a header-like line further down may lie inside a string)."""
    lines = sub.text.split("\n")
    top = 0
    while top < len(lines) and (not lines[top].strip() or lines[top].lstrip().startswith("#")):
        top += 1
    opening = [line for line in lines[:top] if not POPCORN.match(line)]
    text = "\n".join([f"#!POPCORN leaderboard {leaderboard}", f"#!POPCORN gpu {CONTEST_GPU}", *opening,
                      *lines[top:]])
    out = results.records_dir(device_name) / "submit" / f"{sub.task}_{sub.version}.py"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


def popcorn_command(path: Path, leaderboard: str) -> list[str]:
    return ["popcorn-cli", "submit", "--gpu", CONTEST_GPU, "--leaderboard", leaderboard, "--mode", "leaderboard",
            str(path)]


def run_remote(command: list[str]) -> int:
    if shutil.which(command[0]) is None:
        raise FileNotFoundError(f"{command[0]} is not on PATH")
    return subprocess.run(command).returncode


def standings(task: str | None = None, gpu: str | None = None, timing: str = DEFAULT_TIMING,
              all_schemas: bool = False) -> Board:
    """Entries of one timing method ranked by geomean per task, GPU and shape set, with the best
    geomean so far at each entry; a GPU may be named by a unique part of its name ('H200'). Entries the
    method's current form did not time are left out unless `all_schemas`, and the note counts them."""
    rows = [e for e in results.read_all(BOARD) if e.get("geomean_ns") and (task is None or e["task"] == task)]
    if not rows:
        return Board(timing, [], [], f"no entries{f' for {task}' if task else ''} yet: `run.py submit` adds them")
    df = pd.DataFrame([{**{k: e.get(k) for k in ("task", "gpu", "shapes", "version", "geomean_ns", "when", "sha256",
                                                 "schema")},
                        "try": try_label(e), "timing": timing_of(e)} for e in rows])
    df["schema"] = df["schema"].astype("Int64")  # whole numbers beside entries that have none
    if gpu is not None:
        known = sorted(set(df["gpu"].dropna()))
        matches = [g for g in known if g == gpu] or [g for g in known if gpu.lower() in g.lower()]
        if len(matches) != 1:
            raise ViewError(f"{'no' if not matches else 'more than one'} GPU named {gpu!r} on the local leaderboard; "
                            f"its GPUs: {counts(df, 'gpu')}")
        df = df[df["gpu"] == matches[0]]
    picked = df[df["timing"] == timing]
    if picked.empty:
        return Board(timing, [], [],
                     f"no {timing}-timed entries{f' for {task}' if task else ''} yet (`run.py submit` adds them); "
                     f"stored: {counts(df, 'timing')}: --timing {df['timing'].value_counts().index[0]} shows them")
    # worker-timed arena entries from before the L2 refill (older entries carry no schema) read 2-3% fast on gemv
    older = picked[picked["schema"].fillna(0) < ARENA_REFILL_SCHEMA] if timing == WORKER_ARENA_TIMING \
        else picked.iloc[:0]
    note = ""
    if not older.empty and not all_schemas:
        picked = picked.drop(older.index)
        note = (f"left out: {len(older)} {timing} {'entry' if len(older) == 1 else 'entries'} from before record schema "
                f"{ARENA_REFILL_SCHEMA}, timed without the L2 refill (gemv read 2-3% fast); --all-schemas ranks them too")
        if picked.empty:
            return Board(timing, [], [], note)
    df = picked.sort_values("when")
    group = ["task", "gpu", "shapes"]
    df["best_so_far_ns"] = df.groupby(group)["geomean_ns"].cummin()
    df["rank"] = df.groupby(group)["geomean_ns"].rank(method="min").astype(int)
    columns = ["task", "gpu", "shapes", "rank", "version", "try", "geomean_ns", "best_so_far_ns", "schema", "when",
               "sha256"]
    table = df.sort_values([*group, "rank"])[columns]
    ranked = table.astype(object).where(table.notna(), None).to_dict(orient="records")
    return Board(timing, sorted(set(table["gpu"])), ranked, note)


def try_label(entry: dict) -> str:
    """The entry's try as the views label it (harness.views.tries): its name, and the code hash of the source it
    submitted (the whole content's sha256 for an entry that kept no source)."""
    code = code_sha256(entry["source"]) if isinstance(entry.get("source"), str) else entry.get("sha256")
    return tries.label(entry["task"], entry["version"], code)


def counts(df: pd.DataFrame, column: str) -> str:
    """'legacy (12 entries)': entries per value of a column, most first."""
    return ", ".join(f"{value} ({n} {'entry' if n == 1 else 'entries'})" for value, n in df[column].value_counts().items())
