#!/usr/bin/env bash
# One device call over several submissions: test mode for all of them at once (each build and check
# in its own process, so the ~60 s extension builds overlap), then benchmark mode one at a time.
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_lineage.sh gemm:v1 gemv:v2 ...
# Stored records are copied in first (so list/diff/submit --best see the whole lineage); every record,
# log and submit artefact comes back in $OUT/results.tgz, the console log in $OUT/lineage.log.
# BENCH=0 skips the benchmark pass.
set -u
. scripts/device_results.sh
mkdir -p "$OUT/tests"
test_one() {
  timeout 400 python3 run.py --task "${1%%:*}" --submission "${1#*:}" --mode test >"$OUT/tests/${1/:/_}.log" 2>&1
}
export -f test_one
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  printf '%s\n' "$@" | xargs -P 8 -I{} bash -c 'test_one {}'
  for spec in "$@"; do
    echo "=== $spec test"
    grep -v "^  " "$OUT/tests/${spec/:/_}.log" | tail -n 6
  done
  if [ "${BENCH:-1}" != 0 ]; then
    for spec in "$@"; do
      echo "=== $spec benchmark"
      timeout 300 python3 run.py --task "${spec%%:*}" --submission "${spec#*:}" --mode benchmark 2>&1 | tail -n 9
    done
  fi
} 2>&1 | tee "$OUT/lineage.log"
pack_results results results tests
