#!/usr/bin/env bash
# One device call: the evaluator's clock end to end, each result written under $OUT as it comes. STEPS picks what
# runs, in this order (default: attacks bests shade handover):
#   attacks      the clock's attacks on gemm's first smoke shape while the best versions build: a shaded report,
#                "done" before the calls, no wait for "go", a side-stream tail, a super-batch, the older side-stream and
#                forged-report attacks, products made inside the evaluator's writes (write_gaps: log.txt says per
#                sample how long its products ran; write_gaps_twin: the same products after "go"; both again on
#                gemm's first benchmark shape, whose writes come nearest a time slice), a quieter end of the sample
#                (quiet_end) (one benchmark run each)
#   bests        each best version's benchmark under arena timing (the evaluator's clock), then contest timing
#   shade        each best version wrapped by tests/redteam/shade_report.py at 0.7, 0.5 and 0.3 (benchmark)
#   leaderboard  each best version in leaderboard mode
#   handover     gemv v12 wrapped by tests/redteam/quiet_end.py (a spin that touches no memory after the call): set it
#                against "gemv v12 benchmark arena" and its worker_stats
#   v0           every v0's benchmark and leaderboard modes
#   namespaces   gemm v27's benchmark with each worker in namespaces of its own (NVFP4_ARENA_NAMESPACES=on: does the
#                slots' CUDA IPC reach a child PID namespace?), then tests/test_walls.py the same way (walls.log)
# Usage on the device, with landlockpy's wheel carried in .whl/ (ATTACKS and BESTS narrow those steps to the files
# and task:version pairs they name):
#   NVFP4_ARENA_COMMIT=<hash> [STEPS="bests shade"] [ATTACKS="write_gaps"] [BESTS="gemv:v12"] bash scripts/device_clock.sh
# Files in $OUT: env.txt, log.txt, runs.jsonl (label, wall seconds, exit code, run.py's JSON; read it with
# scripts/clock_runs.py), build.log, results.tgz (the records, for `run.py merge`).
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
mkdir -p "$OUT/results"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
. scripts/device_runs.sh
STEPS=" ${STEPS:-attacks bests shade handover} "
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  echo "commit ${NVFP4_ARENA_COMMIT:-unknown}"; } >> "$OUT/env.txt" 2>&1
read -ra BEST <<< "${BESTS:-gemm:v27 gemv:v12 group_gemm:v34 dual_gemm:v23}"
python3 -m harness.sweep.builds "${BEST[@]}" >> "$OUT/build.log" 2>&1 &
BUILDS=($!)
if has shade; then  # the shaded wrapper's own build cache holds each wrapped version's extension: built once, here
  for spec in "${BEST[@]}"; do
    NVFP4_ARENA_SHADE_KERNEL="submissions/${spec%%:*}/${spec#*:}.py" python3 run.py --task "${spec%%:*}" \
      --submission tests/redteam/shade_report.py --mode test --case 0 --no-record --json >> "$OUT/build.log" 2>&1 &
    BUILDS+=($!)
  done
fi
if has handover; then  # quiet_end's own build cache holds gemv v12's extension: built once, here
  NVFP4_ARENA_QUIET_KERNEL=submissions/gemv/v12.py python3 run.py --task gemv --submission tests/redteam/quiet_end.py \
    --mode test --case 0 --no-record --json >> "$OUT/build.log" 2>&1 &
  BUILDS+=($!)
fi
if has attacks; then
  for attack in ${ATTACKS:-shade_report early_done skip_go side_stream_tail superbatch_slots side_stream forge_report \
      write_gaps quiet_end}; do
    one "redteam $attack" 90 --task gemm --submission "tests/redteam/$attack.py" --mode benchmark --shapes smoke --case 0
  done
  NVFP4_ARENA_WRITE_GAPS=honest one "redteam write_gaps_twin" 90 --task gemm --submission tests/redteam/write_gaps.py \
    --mode benchmark --shapes smoke --case 0
  for twin in attack honest; do  # gemm's largest writes (about 1.9 ms a sample): the nearest to a time slice
    NVFP4_ARENA_WRITE_GAPS=$twin one "redteam write_gaps $twin, benchmark 0" 150 --task gemm \
      --submission tests/redteam/write_gaps.py --mode benchmark --case 0
  done
fi
wait "${BUILDS[@]}"; logged "build"
for spec in "${BEST[@]}"; do
  task=${spec%%:*} version=${spec#*:}
  if has bests; then
    one "$task $version benchmark arena" 150 --task "$task" --submission "$version" --mode benchmark
    one "$task $version benchmark contest" 150 --task "$task" --submission "$version" --mode benchmark --timing contest
  fi
  if has shade; then
    for shade in 0.7 0.5 0.3; do
      NVFP4_ARENA_SHADE=$shade NVFP4_ARENA_SHADE_KERNEL="submissions/$task/$version.py" \
        one "$task $version shaded $shade arena" 150 --task "$task" --submission tests/redteam/shade_report.py \
        --mode benchmark
    done
  fi
  has leaderboard && one "$task $version leaderboard" 300 --task "$task" --submission "$version" --mode leaderboard
done
if has handover; then
  NVFP4_ARENA_QUIET_KERNEL=submissions/gemv/v12.py \
    one "gemv v12 quiet_end arena" 150 --task gemv --submission tests/redteam/quiet_end.py --mode benchmark
fi
if has v0; then
  for task in gemv gemm dual_gemm group_gemm; do
    one "$task v0 benchmark" 300 --task "$task" --submission v0 --mode benchmark
    one "$task v0 leaderboard" 300 --task "$task" --submission v0 --mode leaderboard
  done
fi
if has namespaces; then
  NVFP4_ARENA_NAMESPACES=on one "gemm v27 benchmark arena, namespaces on" 150 --task gemm --submission v27 \
    --mode benchmark
  NVFP4_ARENA_NAMESPACES=on timeout 400 python3 -m pytest -q tests/test_walls.py >> "$OUT/walls.log" 2>&1
  logged "walls tests, namespaces on"
fi
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -r "$OUT/results"
