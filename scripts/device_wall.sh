#!/usr/bin/env bash
# Wall time of one benchmark run, this tree against an older one, alternating on one warm machine so that neither
# drift nor going first favours either: ROUNDS rounds (default 2) of "this tree, then the older one" per version,
# the order reversed every other round. Builds are cached by file contents, so both trees share them.
# Usage on the device: bash scripts/device_wall.sh OLDER_TREE task:version ...
# Appends to $OUT/wall.jsonl one line per run, in runs.jsonl's format (label "<task> <version> <tree>"), for
# scripts/wall_share.py; records go to /tmp, never to results/.
set -u
. scripts/device_runs.sh
older=$1; shift
run_in() {  # run_in TREE LABEL TASK VERSION
  local started rc
  started=$(date +%s.%N)
  (cd "$1" && NVFP4_ARENA_RESULTS=/tmp/wall_records timeout 200 python3 run.py --task "$3" --submission "$4" \
    --mode benchmark --json > /tmp/wall.json 2>> "$OUT/log.txt")
  rc=$?
  run_line "$3 $4 $2" "$started" "$rc" /tmp/wall.json >> "$OUT/wall.jsonl"
  echo "$(date +%T) wall $3 $4 $2 rc=$rc" >> "$OUT/log.txt"
}
for round in $(seq "${ROUNDS:-2}"); do
  for spec in "$@"; do
    if (( round % 2 )); then
      run_in . this "${spec%%:*}" "${spec#*:}"; run_in "$older" older "${spec%%:*}" "${spec#*:}"
    else
      run_in "$older" older "${spec%%:*}" "${spec#*:}"; run_in . this "${spec%%:*}" "${spec#*:}"
    fi
  done
done
