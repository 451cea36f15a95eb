#!/usr/bin/env bash
# One device call: the evaluator's GPU path end to end, each result written under $OUT as it comes. STEPS picks
# what runs, in this order (default: redteam template best v0 default):
#   redteam  every red-team and sandbox test (the cgroup and seccomp attacks are not marked slow), four at a time
#            while the best versions build, then alone (their verdicts rest on the witness) the forged-report attacks
#            and the honest control; with REDTEAM_K set, only the red-team tests it selects (pytest -k)
#   template the FP4 _scaled_mm template's one line
#   best     each best version's benchmark under arena and contest timing, back to back (fidelity)
#   v0       every v0's tests
#   default  the first best version in the default modes (test, then benchmark: both workers start at once), to set
#            against its benchmark-only run's wall time
#   arena    each given version's benchmark under the default timing alone (a wall-time row per version)
#   profile  the benchmark of each version in PROFILE (default: the first given) with the evaluator under cProfile
#            (profile.txt: the calls that took the most time) and the evaluator's imports (-X importtime, slowest)
#   gap      scripts/gemv_gap_probe.py: gemv v12 arena, arena with the contest's clear, contest (gemv_gap.md)
#   sweep    the SWEEP_VERSIONS (default all; missing: those without a complete run on this GPU, against a copy of
#            the stored records; SWEEP_VERSIONS_<task> for one task's own) of each task in SWEEP_TASKS (default: all
#            four) in benchmark mode, builds first
#            (run.py sweep), each task's summary in results.tgz (sweep_<task>.json), within SWEEP_SECONDS each (default 600)
# Usage on the device (with landlockpy's wheel carried in .whl/):
#   NVFP4_ARENA_COMMIT=<hash> [STEPS="redteam best v0"] bash scripts/device_evaluator.sh [task:version ...]
# device_python.sh installs landlockpy and compiles the bytecode caches first, as pip does on an install.
# Files in $OUT: env.txt, log.txt, runs.jsonl (one line per run: label, wall seconds, exit code, run.py's JSON),
# redteam.log (pytest), build.log, share.md (scripts/wall_share.py over runs.jsonl), results.tgz (the records,
# results/<task>.jsonl, for `run.py merge`; runs.jsonl holds them too, as they come).
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
mkdir -p "$OUT/results"
. scripts/device_python.sh
. scripts/device_runs.sh
BEST=("${@:-gemm:v27 group_gemm:v34 gemv:v12 dual_gemm:v23}")
read -r -a BEST <<< "${BEST[*]}"
STEPS=" ${STEPS:-redteam template best v0 default} "

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  python3 -c "from harness.evaluator.cgroup import WorkerCgroup as C; c = C.create(); print('worker cgroup:', c and c.folder); c and c.remove()"
  echo "commit ${NVFP4_ARENA_COMMIT:-unknown}"; } >> "$OUT/env.txt" 2>&1

built() {  # the builds waited for and stamped, once, whichever step needs them first
  [ -n "$BUILD" ] || return 0
  wait "$BUILD"
  logged "build"
  BUILD=
}

python3 -m harness.sweep.builds "${BEST[@]}" >> "$OUT/build.log" 2>&1 &
BUILD=$!

if [ -n "${REDTEAM_K:-}" ]; then
  python3 -m pytest -q -m slow tests/test_redteam.py -k "$REDTEAM_K" >> "$OUT/redteam.log" 2>&1
  logged "redteam -k $REDTEAM_K"
elif has redteam; then
  ALONE="forge_report or intermittent_forge"
  python3 -m pytest -q -n 4 tests/test_redteam.py tests/test_sandbox.py -k "not ($ALONE) and not honest_v0" \
    >> "$OUT/redteam.log" 2>&1
  logged "redteam in parallel"
  built
  python3 -m pytest -q -m slow tests/test_redteam.py -k "$ALONE" >> "$OUT/redteam.log" 2>&1
  logged "redteam alone"
  cp tests/redteam/_honest.py /tmp/honest_gemm.py && printf '\n\ncustom_kernel = honest\n' >> /tmp/honest_gemm.py
  one "redteam _honest" 150 --task gemm --submission /tmp/honest_gemm.py --mode benchmark --shapes smoke --case 0
fi
built
has template && one "template_scaled_mm test" 90 tests/submissions/template_scaled_mm.py --mode test --case 0 --no-record
if has best; then
  for spec in "${BEST[@]}"; do
    task=${spec%%:*} version=${spec#*:}
    one "$task $version benchmark arena" 150 --task "$task" --submission "$version" --mode benchmark
    one "$task $version benchmark contest" 150 --task "$task" --submission "$version" --mode benchmark --timing contest
  done
fi
if has arena; then
  for spec in "${BEST[@]}"; do
    one "${spec%%:*} ${spec#*:} benchmark arena" 150 --task "${spec%%:*}" --submission "${spec#*:}" --mode benchmark
  done
fi
if has profile; then
  python3 -X importtime -c "import run" 2> /tmp/importtime.txt
  { echo "## the evaluator's imports, slowest 15 (us, cumulative)"; sort -t'|' -k2 -n /tmp/importtime.txt | tail -15; } \
    >> "$OUT/profile.txt"
  for spec in ${PROFILE:-${BEST[0]}}; do
  # run.py's main() leaves through os._exit, before `python -m cProfile` would write its file: profile the CLI itself
  { NVFP4_ARENA_RESULTS=/tmp/profiled timeout 300 python3 -c "import cProfile, sys; sys.argv[0] = 'run.py'; import run
cProfile.run('run.cli()', '/tmp/evaluator.prof')" --task "${spec%%:*}" --submission "${spec#*:}" \
      --mode benchmark --json > /dev/null 2>> "$OUT/log.txt"
    echo "## ${spec%%:*} ${spec#*:} benchmark under cProfile (rc $?), cumulative"
    python3 -c "import pstats; pstats.Stats('/tmp/evaluator.prof').sort_stats('cumulative').print_stats(60)"
    echo "## the same, own time"
    python3 -c "import pstats; pstats.Stats('/tmp/evaluator.prof').sort_stats('tottime').print_stats(30)"
  } >> "$OUT/profile.txt" 2>&1
  echo "$(date +%T) profile $spec done" >> "$OUT/log.txt"
  done
fi
if has v0; then
  for task in gemv gemm dual_gemm group_gemm; do
    one "$task v0 test" 120 --task "$task" --submission v0 --mode test
  done
fi
if has default; then
  spec=${BEST[0]}
  one "${spec%%:*} ${spec#*:} default modes" 300 --task "${spec%%:*}" --submission "${spec#*:}"
fi
if has gap; then
  timeout 300 python3 scripts/gemv_gap_probe.py --rounds 2 > "$OUT/gemv_gap.md" 2>> "$OUT/log.txt"
  logged "gemv gap probe"
fi
if has sweep; then
  if [[ "${SWEEP_VERSIONS:-all}" == *missing* ]]; then  # `run.py merge` takes the copies back as known records
    for f in results/*.jsonl; do cat "$f" >> "$NVFP4_ARENA_RESULTS/${f##*/}"; done
  fi
  for task in ${SWEEP_TASKS:-gemv gemm dual_gemm group_gemm}; do
    own=SWEEP_VERSIONS_$task
    timeout "${SWEEP_SECONDS:-600}" python3 run.py sweep --task "$task" --versions "${!own:-${SWEEP_VERSIONS:-all}}" \
      --mode benchmark --json > "$OUT/results/sweep_$task.json" 2>> "$OUT/log.txt"
    logged "sweep $task"
  done
fi
[ -s "$OUT/runs.jsonl" ] && python3 scripts/wall_share.py "$OUT/runs.jsonl" --markdown > "$OUT/share.md" 2>&1
tar czf "$OUT/results.tgz" -C "$OUT" results && rm -r "$OUT/results"
