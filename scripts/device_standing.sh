#!/usr/bin/env bash
# One device call: runs through a standing evaluator (run.py serve) set against runs of their own, each result written
# under $OUT as it comes. STEPS picks what runs, in this order (default: wall tests):
#   wall     ROUNDS (default 4) rounds of the first given version's benchmark, each round one run of its own
#            (NVFP4_ARENA_SERVER=off) and one through the standing evaluator, in turn (runs.jsonl, share.md)
#   tests    tests/test_server.py (server_tests.log)
#   best     each given version's benchmark under arena and contest timing, back to back, through the standing
#            evaluator (fidelity)
#   redteam  the red-team and sandbox tests with the standing evaluator up, so that every run.py they start is
#            forked from it, four at a time; then alone the forged-report attacks (redteam.log)
# Usage on the device (with landlockpy's wheel carried in .whl/):
#   NVFP4_ARENA_COMMIT=<hash> [STEPS="wall tests"] bash scripts/device_standing.sh [task:version ...]
# Files in $OUT: env.txt, log.txt, server.log (the standing evaluator's own lines), runs.jsonl, share.md,
# server_tests.log, redteam.log, results.tgz (the records, for `run.py merge`).
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
mkdir -p "$OUT/results"
. scripts/device_python.sh
. scripts/device_runs.sh
BEST=("${@:-gemm:v27 group_gemm:v34 gemv:v12 dual_gemm:v23}")
read -r -a BEST <<< "${BEST[*]}"
STEPS=" ${STEPS:-wall tests} "

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  echo "commit ${NVFP4_ARENA_COMMIT:-unknown}"; } >> "$OUT/env.txt" 2>&1

python3 -m harness.sweep.builds "${BEST[@]}" >> "$OUT/log.txt" 2>&1
logged "build"
python3 run.py serve >> "$OUT/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 300); do grep -q serving "$OUT/server.log" && break; sleep 0.1; done
logged "standing evaluator up: $(head -c 200 "$OUT/server.log")"

if has wall; then
  spec=${BEST[0]}
  for round in $(seq "${ROUNDS:-4}"); do
    NVFP4_ARENA_SERVER=off one "${spec%%:*} ${spec#*:} benchmark own" 150 --task "${spec%%:*}" \
      --submission "${spec#*:}" --mode benchmark
    one "${spec%%:*} ${spec#*:} benchmark served" 150 --task "${spec%%:*}" --submission "${spec#*:}" --mode benchmark
  done
  python3 scripts/wall_share.py "$OUT/runs.jsonl" --markdown > "$OUT/share.md" 2>&1
fi
if has tests; then
  python3 -m pytest -q tests/test_server.py >> "$OUT/server_tests.log" 2>&1
  logged "server tests"
fi
if has best; then
  for spec in "${BEST[@]}"; do
    task=${spec%%:*} version=${spec#*:}
    one "$task $version benchmark arena served" 150 --task "$task" --submission "$version" --mode benchmark
    one "$task $version benchmark contest served" 150 --task "$task" --submission "$version" --mode benchmark \
      --timing contest
  done
  python3 scripts/wall_share.py "$OUT/runs.jsonl" --markdown > "$OUT/share.md" 2>&1
fi
if has redteam; then
  ALONE="forge_report or intermittent_forge"
  python3 -m pytest -q -n 4 tests/test_redteam.py tests/test_sandbox.py \
    -k "not ($ALONE) and not honest_v0" >> "$OUT/redteam.log" 2>&1
  logged "redteam served, in parallel"
  python3 -m pytest -q -m slow tests/test_redteam.py -k "$ALONE" >> "$OUT/redteam.log" 2>&1
  logged "redteam served, alone"
fi
kill -INT "$SERVER"
wait "$SERVER"
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -r "$OUT/results"
