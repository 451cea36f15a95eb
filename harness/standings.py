"""The local leaderboard (results/leaderboard.jsonl) and files ready for the real contest."""
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from . import results
from .submission import POPCORN, Submission

CONTEST_GPU = "B200"


def leaderboard_path() -> Path:
    return results.results_dir() / "leaderboard.jsonl"


def add_entry(sub: Submission, summary, shapes: str) -> dict:
    entry = {
        "task": sub.task, "version": sub.version, "sha256": sub.sha256, "source": sub.path.read_text(),
        "geomean_ns": summary.geomean_ns, "shapes": shapes,
        "means_ns": {r["shape"]: r["stats"]["mean"] for r in summary.records if r.get("stats")},
        "gpu": summary.device.get("name"), "run_id": summary.records[0]["run_id"], "when": results.now(),
        "git": results.git_state(),
    }
    results.append(leaderboard_path(), entry)
    return entry


def contest_file(sub: Submission, leaderboard: str) -> Path:
    """The submission with the contest's #!POPCORN headers, under results/submit/."""
    body = [line for line in sub.path.read_text().splitlines() if not POPCORN.match(line)]
    text = "\n".join([f"#!POPCORN leaderboard {leaderboard}", f"#!POPCORN gpu {CONTEST_GPU}", *body]) + "\n"
    out = results.results_dir() / "submit" / f"{sub.task}_{sub.version}.py"
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


def standings(task: str | None = None) -> pd.DataFrame:
    """Entries ranked by geomean per task and GPU, with the best geomean so far at each entry."""
    rows = [e for e in results.read(leaderboard_path()) if e.get("geomean_ns") and (task is None or e["task"] == task)]
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame([{k: e.get(k) for k in ("task", "gpu", "shapes", "version", "geomean_ns", "when", "sha256")}
                       for e in rows]).sort_values("when")
    df["best so far µs"] = df.groupby(["task", "gpu", "shapes"])["geomean_ns"].cummin() / 1e3
    df["geomean µs"] = df["geomean_ns"] / 1e3
    df["rank"] = df.groupby(["task", "gpu", "shapes"])["geomean_ns"].rank(method="min").astype(int)
    df["sha256"] = df["sha256"].str[:12]
    return df.sort_values(["task", "gpu", "shapes", "rank"])[
        ["task", "gpu", "shapes", "rank", "version", "geomean µs", "best so far µs", "when", "sha256"]]
