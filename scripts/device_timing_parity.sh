#!/usr/bin/env bash
# One device call: each named version in benchmark mode with the default timing (arena) and with
# --timing contest, one after the other, then the per-shape table of scripts/timing_parity.py.
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_timing_parity.sh gemv:v7 gemm:v10 ...
# Records come back in $OUT/results.tgz (`python run.py merge`), the console log in $OUT/parity.log.
set -u
. scripts/device_results.sh
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 scripts/prebuild.py "$@" 2>&1 | grep -v -i warn
  for spec in "$@"; do
    for timing in arena contest; do
      echo "=== $spec $timing"
      timeout 280 python3 run.py --task "${spec%%:*}" --submission "${spec#*:}" --mode benchmark --timing "$timing" \
        2>&1 | grep -v "^  " | tail -n 12
    done
  done
  python3 scripts/timing_parity.py --results "$NVFP4_ARENA_RESULTS" --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | sed 's/NVIDIA //')" "$@"
} 2>&1 | tee "$OUT/parity.log"
pack_results results
