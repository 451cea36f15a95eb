#!/usr/bin/env bash
# One device call for the defenses: gemv v1, GPU red-team verdicts, and the defenses' wall-time cost.
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_guard.sh   (writes into $OUT)
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT"
python3 run.py --task gemv --submission v1 2>&1 | tail -12
echo "== red team on the GPU (smoke shapes)"
for f in tests/redteam/[a-z]*.py tests/submissions/illegal_address.py; do
  n=$(basename "$f" .py)
  timeout 300 python3 run.py --task gemm --submission "$f" --mode benchmark --shapes smoke --case 0 --no-record --json 2>/dev/null \
    | python3 -c "import json,sys; r=json.load(sys.stdin)[0]['records'][0]; print('$n'.ljust(20), r['status'].ljust(10), r['message'].splitlines()[0][:140])"
done
echo "== defenses' cost: full benchmark runs, guarded (G) and unguarded (U), alternating"
for t in "gemv v1" "gemm v0"; do
  set -- $t
  for mode in G U G U; do
    flag=""; [ "$mode" = U ] && flag="--unguarded"
    s=$(date +%s.%N)
    python3 run.py --task "$1" --submission "$2" --mode benchmark $flag --no-record > /dev/null 2>&1
    e=$(date +%s.%N)
    echo "$1 $2 $mode wall $(python3 -c "print(f'{$e-$s:.2f}')") s"
  done
done | tee "$OUT/defense_cost.log"
python3 -c "
import ctypes, torch
from harness.device import GpuDevice
c = GpuDevice(1 << 30); print('persisting-L2 limit before reset', c.persisting_l2_limit()); c.reset_persisting_l2(); print('after reset', c.persisting_l2_limit())"
