#!/usr/bin/env bash
# One device call: the evaluator's clock end to end. While the best versions build: the clock's attacks on the smoke
# shapes (a shaded report, "done" before the calls, no wait for "go", a side-stream tail, the older side-stream and
# forged-report attacks), each one run.py benchmark run; then each best version's benchmark under arena timing (the
# evaluator's clock) and contest timing, back to back, and gemm v27 shaded by half. Usage on the device, with
# landlockpy's wheel carried in .whl/:   NVFP4_ARENA_COMMIT=<hash> bash scripts/device_clock.sh
# Files in $OUT: env.txt, log.txt, runs.jsonl (label, wall seconds, exit code, run.py's JSON), build.log, results.tgz.
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
mkdir -p "$OUT/results"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
. scripts/device_runs.sh
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  echo "commit ${NVFP4_ARENA_COMMIT:-unknown}"; } >> "$OUT/env.txt" 2>&1
BEST=(gemm:v27 gemv:v12 group_gemm:v34 dual_gemm:v23)
python3 -m harness.sweep.builds "${BEST[@]}" >> "$OUT/build.log" 2>&1 &
BUILD=$!
for attack in shade_report early_done skip_go side_stream_tail side_stream forge_report; do
  one "redteam $attack" 90 --task gemm --submission "tests/redteam/$attack.py" --mode benchmark --shapes smoke --case 0
done
wait "$BUILD"; logged "build"
for spec in "${BEST[@]}"; do
  task=${spec%%:*} version=${spec#*:}
  one "$task $version benchmark arena" 150 --task "$task" --submission "$version" --mode benchmark
  one "$task $version benchmark contest" 150 --task "$task" --submission "$version" --mode benchmark --timing contest
done
NVFP4_ARENA_SHADE=0.5 NVFP4_ARENA_SHADE_KERNEL=submissions/gemm/v27.py \
  one "gemm v27 shaded 0.5 arena" 150 --task gemm --submission tests/redteam/shade_report.py --mode benchmark
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -r "$OUT/results"
