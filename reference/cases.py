"""Reads leaderboard_shapes.yaml: the test, benchmark and smoke cases of each task."""
import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SHAPES_FILE = Path(__file__).resolve().parent.parent / "leaderboard_shapes.yaml"
KINDS = ("tests", "benchmarks", "smoke")


@dataclass(frozen=True)
class Case:
    """One shape: `args` are generate_input's keyword arguments (seed included)."""

    task: str
    kind: str
    index: int
    args: dict = field(hash=False)
    sol_b200_us: float | None = None

    @property
    def spec(self) -> str:
        """The contest's one-line spelling, e.g. 'm: 128; k: 256; l: 1; seed: 1111'."""
        def show(v):
            return "[" + ", ".join(map(str, v)) + "]" if isinstance(v, (list, tuple)) else str(v)
        return "; ".join(f"{key}: {show(v)}" for key, v in self.args.items())

    @property
    def label(self) -> str:
        """A short shape label without the seed, for tables: per-group lists collapse when uniform."""
        def show(v):
            if not isinstance(v, (list, tuple)):
                return str(v)
            return str(v[0]) if len(set(v)) == 1 else "[" + ",".join(map(str, v)) + "]"
        return " ".join(f"{key}={show(v)}" for key, v in self.args.items() if key != "seed")

    def with_seed(self, seed: int) -> "Case":
        return Case(self.task, self.kind, self.index, {**self.args, "seed": seed}, self.sol_b200_us)


@functools.cache
def load(path: Path = SHAPES_FILE) -> dict:
    with open(path) as f:
        return yaml.safe_load(f)


def task_names() -> list[str]:
    return list(load()["tasks"])


def task_config(task: str) -> dict:
    tasks = load()["tasks"]
    if task not in tasks:
        raise KeyError(f"unknown task {task!r}; known tasks: {', '.join(tasks)}")
    return tasks[task]


def leaderboards() -> dict:
    """{task: the contest's leaderboard name}."""
    return {task: cfg["leaderboard"] for task, cfg in load()["tasks"].items()}


def timed_kind(shapes: str) -> str:
    """The case kind a shape set times: the contest's benchmarks for "contest", the smoke cases for "smoke"."""
    return "benchmarks" if shapes == "contest" else "smoke"


def cases(task: str, kind: str) -> list[Case]:
    if kind not in KINDS:
        raise KeyError(f"unknown case kind {kind!r}; one of {', '.join(KINDS)}")
    out = []
    for i, entry in enumerate(task_config(task)[kind]):
        entry = dict(entry)
        sol = entry.pop("sol_b200_us", None)
        args = {key: tuple(v) if isinstance(v, list) else v for key, v in entry.items()}
        out.append(Case(task, kind, i, args, sol))
    return out


def tolerance() -> dict:
    return dict(load()["tolerance"])
