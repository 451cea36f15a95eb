#!/usr/bin/env bash
# One device call: the side-stream verdict, the defenses' share of full benchmark runs, honest
# leaderboard runs. Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_guard_cost.sh
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT"
echo "== side stream"
timeout 300 python3 run.py --task gemm --submission tests/redteam/side_stream.py --mode benchmark --shapes smoke --case 0 --no-record 2>&1 | tail -6
echo "== full benchmark runs: wall time of the whole command, and the defenses' share of it"
for tv in "gemv v0" "gemv v1" "gemm v0" "dual_gemm v0" "group_gemm v0"; do
  set -- $tv
  s=$(date +%s%N)
  python3 run.py --task "$1" --submission "$2" --mode benchmark --json 2>/dev/null > "$OUT/run.json"
  e=$(date +%s%N)
  python3 - "$1" "$2" $(( (e - s) / 1000000 )) <<'PY'
import json, sys
task, version, wall_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
recs = json.load(open(__import__("os").environ["OUT"] + "/run.json"))[0]["records"]
guard = sum(r.get("guard_ns") or 0 for r in recs) / 1e6
print(f"{task} {version}: run wall {wall_ms / 1e3:.2f} s, defenses {guard / 1e3:.3f} s ({100 * guard / wall_ms:.2f}%), "
      f"statuses {[r['status'] for r in recs]}, means us {[round(r['stats']['mean'] / 1e3, 2) for r in recs if r.get('stats')]}")
PY
done | tee "$OUT/defense_cost.log"
rm -f "$OUT/run.json"
echo "== honest leaderboard runs"
for tv in "gemv v1" "gemm v0"; do
  set -- $tv
  python3 run.py --task "$1" --submission "$2" --mode leaderboard 2>&1 | grep -E "pass|fail|error|geomean" | tail -5
done
