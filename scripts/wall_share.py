"""Where each run's wall time went, from the runs.jsonl that scripts/device_evaluator.sh writes (one line per
`run.py --json` run: label, wall seconds, its JSON). Per run: the evaluator's phases summed over its records
(`phases_ns`, harness.evaluator.evaluation.Phases), what no phase covers (the evaluator's interpreter and
imports, builds, warm-ups, writing records), and the defences' share of the wall time: fresh inputs and their
references for every timed call, the checks after every call and sample, and the witness's calibration.
Usage: python scripts/wall_share.py runs.jsonl [--markdown]"""
import json
import sys

PHASES = ("start", "ready", "calibrate", "load", "draw", "reference", "calls", "sample", "check")
DEFENCES = ("calibrate", "draw", "reference", "check")


def rows(path: str) -> list[dict]:
    out = []
    for line in open(path):
        run = json.loads(line)
        summaries = run["out"] if isinstance(run["out"], list) else []
        records = [r for s in summaries for r in s.get("records", [])]
        phases = {p: sum((r.get("phases_ns") or {}).get(p, 0) for r in records) / 1e9 for p in PHASES}
        if not any(phases.values()):
            continue
        wall = run["seconds"]
        row = {"run": run["label"], "wall s": wall, **{f"{p} s": round(v, 2) for p, v in phases.items()}}
        row["other s"] = round(wall - sum(phases.values()), 2)
        row["defences %"] = round(100 * sum(phases[p] for p in DEFENCES) / wall, 1)
        out.append(row)
    return out


def main(path: str, markdown: bool):
    table = rows(path)
    if not table:
        sys.exit(f"no run in {path} has records with phases_ns (schema 4)")
    keys = list(table[0])
    if markdown:
        print("| " + " | ".join(keys) + " |\n|" + " --- |" * len(keys))
        for row in table:
            print("| " + " | ".join(str(row[k]) for k in keys) + " |")
    else:
        for row in table:
            print("  ".join(f"{k}={row[k]}" for k in keys))


if __name__ == "__main__":
    main(sys.argv[1], "--markdown" in sys.argv[2:])
