#!/usr/bin/env bash
# One device call: each named version in benchmark mode with the default timing (arena) and, for the
# versions also listed in PARITY, with --timing contest right after; then the per-shape table of
# scripts/timing_parity.py for the PARITY versions. GPU=1 first runs the GPU-only red-team cases;
# TIMINGS="contest" replaces the first method (for a second call that completes an earlier one).
# Usage on the device:
#   NVFP4_ARENA_COMMIT=<hash> PARITY="gemv:v7 gemm:v10" bash scripts/device_timing_parity.sh gemv:v7 gemm:v10 gemv:v5
# Records come back in $OUT/results.tgz (`python run.py merge`), the console log in $OUT/parity.log.
set -u
. scripts/device_results.sh
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 -m harness.sweep.builds "$@" 2>&1 | grep -v -i warn
  if [ "${GPU:-0}" = 1 ]; then python3 -m pytest -q tests/test_redteam.py -k gpu 2>&1 | tail -3; fi
  for spec in "$@"; do
    for timing in ${TIMINGS:-arena} $(case " ${PARITY:-} " in *" $spec "*) echo contest;; esac); do
      echo "=== $spec $timing"
      timeout 280 python3 run.py --task "${spec%%:*}" --submission "${spec#*:}" --mode benchmark --timing "$timing" \
        2>&1 | grep -v "^  " | tail -n 12
    done
  done
  python3 scripts/timing_parity.py --results "$NVFP4_ARENA_RESULTS" --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/NVIDIA //')" ${PARITY:-}
} 2>&1 | tee "$OUT/parity.log"
pack_results results results
