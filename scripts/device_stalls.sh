#!/usr/bin/env bash
# One device call: do honest runs see stalls that the witness turns into verdicts, and does the evaluator's
# NVML telemetry (read right before and after every sample) bring them? Each given version's benchmark runs
# ROUNDS times (default 3) with telemetry and ROUNDS times without it, alternating; "without" puts a pynvml that
# fails to import first on PYTHONPATH, so Telemetry.open() finds no NVML. Files in $OUT: runs.jsonl (label, wall
# seconds, rc, run.py's JSON), stalls.md (per run and shape: status, samples, the witness's largest excess and its
# margin, hold timeouts), log.txt, build.log.
# Usage on the device (landlockpy's wheel carried in .whl/):
#   NVFP4_ARENA_COMMIT=<hash> [ROUNDS=3] bash scripts/device_stalls.sh gemv:v12 gemv:v2
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
mkdir -p "$OUT/results" /tmp/no_nvml
echo 'raise ImportError("NVML hidden by scripts/device_stalls.sh")' > /tmp/no_nvml/pynvml.py
. scripts/device_python.sh
. scripts/device_runs.sh
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.mem --format=csv
  echo "commit ${NVFP4_ARENA_COMMIT:-unknown}"; } >> "$OUT/env.txt" 2>&1
python3 -m harness.sweep.builds "$@" >> "$OUT/build.log" 2>&1
for round in $(seq "${ROUNDS:-3}"); do
  for spec in "$@"; do
    for nvml in on off; do
      path=$PYTHONPATH
      [ $nvml = off ] && path=/tmp/no_nvml:$PYTHONPATH
      started=$(date +%s.%N)
      PYTHONPATH=$path timeout 200 python3 run.py --task "${spec%%:*}" --submission "${spec#*:}" --mode benchmark \
        --json > /tmp/one.json 2>> "$OUT/log.txt"
      rc=$?
      run_line "$spec telemetry $nvml round $round" "$started" "$rc" /tmp/one.json >> "$OUT/runs.jsonl"
      echo "$(date +%T) $spec telemetry $nvml round $round rc=$rc" >> "$OUT/log.txt"
    done
  done
done
python3 - "$OUT/runs.jsonl" > "$OUT/stalls.md" <<'PY'
import json, sys
print("| run | shape | status | samples | largest excess µs | margin µs | hold timeouts | telemetry samples |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for line in open(sys.argv[1]):
    run = json.loads(line)
    for summary in run["out"] or []:
        for r in summary["records"]:
            w = r.get("witness") or {}
            excess = w.get("witness_excess_max_ns")
            margin = w.get("witness_margin_ns")
            print(f"| {run['label']} | {r['index']} | {r['status']} | {(r.get('stats') or {}).get('runs', '-')} | "
                  f"{'-' if excess is None else round(excess / 1e3)} | {'-' if margin is None else round(margin / 1e3)} | "
                  f"{r.get('hold_timeouts', '-')} | {(r.get('telemetry') or {}).get('samples', '-')} |"
                  + (f" {r['message'][:160]}" if r["status"] != "pass" else ""))
PY
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -r "$OUT/results"
