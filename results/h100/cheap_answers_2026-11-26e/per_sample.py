"""Per run of a runs.jsonl file (scripts/device_runs.sh): its wall seconds and, per shape, the samples its stopping
rule took and the draw and reference phases per sample (shape 0's include the warm-up and the correctness passes).
Usage: python per_sample.py FILE..."""
import json
import sys

for path in sys.argv[1:]:
    for line in open(path):
        run = json.loads(line)
        for out in run["out"] or []:
            parts = []
            for record in out["records"]:
                phases, n = record.get("phases_ns") or {}, len(record.get("samples_ns") or [])
                ms = (phases.get("draw", 0) + phases.get("reference", 0)) / 1e6
                parts.append(f"shape {record['index']}: {n} samples, {ms / max(n, 1):.1f} ms each")
            print(f"{path} {run['seconds']} s | " + " | ".join(parts))
