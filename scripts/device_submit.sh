#!/usr/bin/env bash
# One device call: `run.py submit --best --candidates $CANDIDATES --rounds $ROUNDS` (defaults 2 and 5) for each task,
# then the standings. Every task's nominated candidates are built first, all at once (harness.sweep.builds).
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> [CANDIDATES=3] [ROUNDS=2] [TASK_SECONDS=400] \
#   bash scripts/device_submit.sh gemv ...
# Stored records and the local leaderboard are copied in first; everything comes back in
# $OUT/submit.tgz (records, leaderboard.jsonl, submit/ files; device_evaluator.sh can run after it in the same
# call), the console log in $OUT/submit.log, with each task's wall time, and the builds' in $OUT/builds.log.
set -u
. scripts/device_results.sh
. scripts/device_python.sh
NOMINATED='import sys
from harness.evaluator.runner import pick_shapes
from harness.rules import DEFAULT_TIMING
from harness.views.remeasure import nominate
count, shapes = int(sys.argv[1]), pick_shapes("auto")
print(" ".join(f"{t}:{v}" for t in sys.argv[2:] for v in nominate(t, shapes, DEFAULT_TIMING, count).versions))'
started=$(date +%s)
{ python3 -m harness.sweep.builds $(python3 -c "$NOMINATED" "${CANDIDATES:-2}" "$@")
  echo "=== builds: rc $?, $(( $(date +%s) - started )) s"; } > "$OUT/builds.log" 2>&1
{
  for task in "$@"; do
    echo "=== submit $task --best --candidates ${CANDIDATES:-2} --rounds ${ROUNDS:-5}"
    started=$(date +%s)
    timeout "${TASK_SECONDS:-400}" python3 run.py submit --task "$task" --best --candidates "${CANDIDATES:-2}" \
      --rounds "${ROUNDS:-5}" 2>&1 | grep -v "^│ .*│ pass" | tail -n 45
    echo "=== $task: rc ${PIPESTATUS[0]}, $(( $(date +%s) - started )) s"
  done
  python3 run.py leaderboard 2>&1
} 2>&1 | tee "$OUT/submit.log"
pack_results submit results
