"""Prints one line for a finished `run.py --json` benchmark run: the command's wall time and the
share of it the run-time defenses took (sum of the records' guard_ns)."""
import json
import sys


def main(task: str, version: str, wall_ms: int, json_path: str):
    records = json.load(open(json_path))[0]["records"]
    guard_ms = sum(r.get("guard_ns") or 0 for r in records) / 1e6
    means = [round(r["stats"]["mean"] / 1e3, 2) for r in records if r.get("stats")]
    print(f"{task} {version}: run wall {wall_ms / 1e3:.2f} s, defenses {guard_ms / 1e3:.3f} s "
          f"({100 * guard_ms / wall_ms:.2f}%), statuses {[r['status'] for r in records]}, means us {means}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
