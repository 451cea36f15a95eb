#!/usr/bin/env bash
# One device call: the GPU-only red-team cases under pytest, and the defenses' share of full
# benchmark runs. Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_guard_final.sh
set -u
export PYTHONUNBUFFERED=1
python3 -m pytest -q tests/test_redteam.py -k "gpu" 2>&1 | tail -4
export NVFP4_ARENA_RESULTS="$OUT"
for tv in "gemv v1" "gemm v0" "dual_gemm v0" "group_gemm v0"; do
  set -- $tv
  s=$(date +%s%N)
  python3 run.py --task "$1" --submission "$2" --mode benchmark --json 2>/dev/null > "$OUT/run.json"
  e=$(date +%s%N)
  python3 scripts/defense_share.py "$1" "$2" $(( (e - s) / 1000000 )) "$OUT/run.json"
done | tee "$OUT/defense_cost.log"
rm -f "$OUT/run.json"
