#!/usr/bin/env bash
# One device call: `run.py submit --best` for each task, then the standings.
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_submit.sh gemv gemm ...
# Stored records and the local leaderboard are copied in first; everything comes back in
# $OUT/results.tgz (records, leaderboard.jsonl, submit/ files), the console log in $OUT/submit.log.
set -u
. scripts/device_results.sh
{
  for task in "$@"; do
    echo "=== submit $task --best"
    timeout 400 python3 run.py submit --task "$task" --best 2>&1 | grep -v "^│ .*│ pass" | tail -n 25
  done
  python3 run.py leaderboard 2>&1
} 2>&1 | tee "$OUT/submit.log"
pack_results results
