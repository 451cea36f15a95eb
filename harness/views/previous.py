"""A benchmark run against its name's previous try: the newest stored try of the same name with other
code, on the same GPU, with the same timing method and shape set. Per shape both tries' numbers (the
median over each try's runs of the scope's statistic, this run included, as `diff` takes them), the runs
each rests on, and ×previous (its time over this try's: above 1, this try is faster). The two tries were
not measured side by side, so there is no paired interval; `diff --measure` gives one. Every run ends here: where
the name has no other try on this GPU with this timing, that is found from the records alone, without pandas (about
0.3 s to import)."""
import shlex
from dataclasses import dataclass

from ..protocol import timing_of
from ..results import read_all
from ..stats import geomean
from . import tries


@dataclass
class Comparison:
    scope: object  # harness.views.lineage.Scope
    now: str  # this try's label
    previous: str
    previous_code: str  # its code hash (harness.views.tries)
    rows: list[dict]  # per shape: index, shape, previous_ns, previous_runs, now_ns, now_runs, speedup_vs_previous
    measurable: bool  # the previous try's content can still be run (tries.locate)

    @property
    def geomean(self) -> dict | None:
        if len(self.rows) < 2:
            return None
        previous, now = geomean([r["previous_ns"] for r in self.rows]), geomean([r["now_ns"] for r in self.rows])
        return {"previous_ns": previous, "now_ns": now, "speedup_vs_previous": previous / now}

    def title(self) -> str:
        return self.scope.title(f"now {self.now} against its previous try {self.previous}")

    def table(self):
        """A pandas DataFrame, a row per shape and the geomean's."""
        import pandas as pd
        rows = [{"#": str(r["index"]), "shape": r["shape"], "previous µs": r["previous_ns"] / 1e3,
                 "previous runs": r["previous_runs"], "now µs": r["now_ns"] / 1e3, "now runs": r["now_runs"],
                 "×previous": r["speedup_vs_previous"]} for r in self.rows]
        if self.geomean:
            g = self.geomean
            rows.append({"#": "", "shape": "geomean", "previous µs": g["previous_ns"] / 1e3,
                         "now µs": g["now_ns"] / 1e3, "×previous": g["speedup_vs_previous"]})
        return pd.DataFrame(rows).astype({"previous runs": "Int64", "now runs": "Int64"})

    def note(self) -> str:
        text = ("×previous: the previous try's time over this one's (above 1: faster now), from stored runs "
                "measured apart, so no interval")
        if self.measurable:
            text += "; to measure both side by side: " + shlex.join(
                ["python", "run.py", "diff", "--task", self.scope.task, "--measure", self.previous, self.now])
        return text

    def as_json(self) -> dict:
        return {"label": self.previous, "code_sha256": self.previous_code, "this_try": self.now,
                **self.scope.as_dict(), "shapes": self.rows, "geomean": self.geomean}


def previous_try(summaries: list) -> Comparison | None:
    """The comparison for a run's passing benchmark summary; None without one, or without a previous try."""
    bench = next((s for s in summaries if s.mode == "benchmark" and s.passed), None)
    timed = [r for r in bench.records if r.get("stats")] if bench else []
    if not timed:
        return None
    sub, kind, gpu, timing = bench.submission, timed[0]["kind"], bench.device.get("name"), bench.timing
    mine = [r for r in read_all(f"{sub.task}.jsonl") if r.get("version") == sub.version
            and r.get("run_id") != timed[0]["run_id"] and (r.get("gpu") or {}).get("name") == gpu
            and timing_of(r) == timing]
    if all(tries.record_code(r) == tries.record_code(timed[0]) for r in mine):
        return None
    import pandas as pd

    from .lineage import Scope, benchmark_frame, per_shape
    stored = benchmark_frame(sub.task, mine, kind)
    this = benchmark_frame(sub.task, bench.records, kind)  # this run, whether or not its records were stored
    df = pd.concat([stored, this], ignore_index=True)
    df["version"] = tries.labels(sub.task, df)  # labelled together: as many hex digits as tell them apart
    now = df[df["run_id"] == this["run_id"].iloc[0]]["version"].iloc[0]
    df = df[df["index"].isin(set(this["index"]))]
    earlier = df[df["version"] != now]
    if earlier.empty:
        return None
    previous = tries.newest_first(earlier, sub.version)[0]
    df = df[df["version"].isin([previous, now])]
    scope = Scope(sub.task, gpu, timing, kind, df["run_id"].nunique())
    column = f"{scope.statistic}_ns"
    shapes = per_shape(df)
    runs = df.groupby(["version", "index"])["run_id"].nunique()
    rows = [{"index": int(i), "shape": shapes.loc[(now, i), "shape"],
             "previous_ns": float(shapes.loc[(previous, i), column]), "previous_runs": int(runs[(previous, i)]),
             "now_ns": float(shapes.loc[(now, i), column]), "now_runs": int(runs[(now, i)]),
             "speedup_vs_previous": float(shapes.loc[(previous, i), column] / shapes.loc[(now, i), column])}
            for i in sorted(set(earlier[earlier["version"] == previous]["index"]))]
    code = earlier[earlier["version"] == previous]["code"].iloc[0]
    measurable = tries.locate(tries.stored(sub.version, sub.task), code) is not None
    return Comparison(scope, now, previous, code, rows, measurable)
