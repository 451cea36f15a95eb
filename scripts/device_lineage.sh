#!/usr/bin/env bash
# One device call over several submissions: test mode, then benchmark mode, for each TASK:VERSION.
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_lineage.sh gemm:v1 gemv:v2 ...
# Stored records are copied in first (so list/diff/submit --best see the whole lineage); every record,
# log and submit artefact comes back in $OUT/results.tgz, the console log in $OUT/lineage.log.
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
mkdir -p "$NVFP4_ARENA_RESULTS" && cp results/*.jsonl "$NVFP4_ARENA_RESULTS/"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  for spec in "$@"; do
    task=${spec%%:*}; version=${spec#*:}
    echo "=== $task $version"
    timeout 300 python3 run.py --task "$task" --submission "$version" --mode test 2>&1 | grep -v "^  " | tail -n 6
    timeout 300 python3 run.py --task "$task" --submission "$version" --mode benchmark 2>&1 | tail -n 9
  done
} 2>&1 | tee "$OUT/lineage.log"
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -rf "$NVFP4_ARENA_RESULTS"
