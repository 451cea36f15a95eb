#!/usr/bin/env bash
# One device call: `run.py submit --best --candidates $CANDIDATES` (default 2) for each task, then the standings.
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> [CANDIDATES=3] [TASK_SECONDS=400] bash scripts/device_submit.sh gemv ...
# Stored records and the local leaderboard are copied in first; everything comes back in
# $OUT/results.tgz (records, leaderboard.jsonl, submit/ files), the console log in $OUT/submit.log, with each
# task's wall time. --best builds its candidates first (harness.sweep.builds): a CUDA file takes about a minute.
set -u
. scripts/device_results.sh
. scripts/device_bytecode.sh
{
  for task in "$@"; do
    echo "=== submit $task --best --candidates ${CANDIDATES:-2}"
    started=$(date +%s)
    timeout "${TASK_SECONDS:-400}" python3 run.py submit --task "$task" --best --candidates "${CANDIDATES:-2}" 2>&1 \
      | grep -v "^│ .*│ pass" | tail -n 25
    echo "=== $task: rc ${PIPESTATUS[0]}, $(( $(date +%s) - started )) s"
  done
  python3 run.py leaderboard 2>&1
} 2>&1 | tee "$OUT/submit.log"
pack_results results
