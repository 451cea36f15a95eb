#!/usr/bin/env bash
# One device call: the evaluator's GPU path end to end. In order of what matters most, each result written
# under $OUT as it comes: the honest red-team control and every red-team file (gemm, smoke case 0) while the
# best versions build; the FP4 _scaled_mm template's one line; then each best version's benchmark under
# arena and contest timing, back to back on one machine (fidelity), and every v0's tests.
# Usage on the device (with landlockpy's wheel carried in .whl/):
#   NVFP4_ARENA_COMMIT=<hash> [REDTEAM="side_stream ..."] [V0=1] bash scripts/device_evaluator.sh [task:version ...]
# Files in $OUT: env.txt, log.txt, runs.jsonl (one line per run: label, seconds, exit code, run.py's JSON),
# build.log, results/<task>.jsonl (the records).
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
mkdir -p "$OUT/results"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
BEST=("${@:-gemm:v27 group_gemm:v34 gemv:v12 dual_gemm:v23}")
read -r -a BEST <<< "${BEST[*]}"

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  echo "commit ${NVFP4_ARENA_COMMIT:-unknown}"; } > "$OUT/env.txt" 2>&1

one() {  # one() LABEL SECONDS run.py-arguments...: appends {label, seconds, rc, out} to runs.jsonl
  local label=$1 limit=$2; shift 2
  local started rc
  started=$(date +%s.%N)
  timeout "$limit" python3 run.py "$@" --json > /tmp/one.json 2>> "$OUT/log.txt"
  rc=$?
  python3 - "$label" "$started" "$rc" <<'EOF' >> "$OUT/runs.jsonl"
import json, sys, time
label, started, rc = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
try:
    out = json.load(open("/tmp/one.json"))
except ValueError:
    out = None
print(json.dumps({"label": label, "seconds": round(time.time() - started, 1), "rc": rc, "out": out}))
EOF
  echo "$(date +%T) $label rc=$rc" >> "$OUT/log.txt"
}

python3 scripts/prebuild.py "${BEST[@]}" > "$OUT/build.log" 2>&1 &
BUILD=$!

[ -n "${TEMPLATE-1}" ] && one "template_scaled_mm test" 90 tests/submissions/template_scaled_mm.py --mode test --case 0 --no-record
REDTEAM=${REDTEAM-_honest side_stream persisting_l2 timer_patch worker_thread superbatch lazy_subclass return_input \
  reference_call wrong_shape wrong_dtype evaluator_patch fake_result mutate_inputs cache_by_id}
for name in $REDTEAM; do
  file=tests/redteam/$name.py
  [ "$name" = _honest ] && { cp tests/redteam/_honest.py /tmp/honest_gemm.py
    printf '\n\ncustom_kernel = honest\n' >> /tmp/honest_gemm.py; file=/tmp/honest_gemm.py; }
  one "redteam $name" 90 --task gemm --submission "$file" --mode benchmark --shapes smoke --case 0
done
wait $BUILD
echo "$(date +%T) build rc=$?" >> "$OUT/log.txt"

for spec in "${BEST[@]}"; do
  task=${spec%%:*} version=${spec#*:}
  one "$task $version benchmark arena" 150 --task "$task" --submission "$version" --mode benchmark
  one "$task $version benchmark contest" 150 --task "$task" --submission "$version" --mode benchmark --timing contest
done
[ "${V0:-1}" = 1 ] && for task in gemv gemm dual_gemm group_gemm; do
  one "$task v0 test" 120 --task "$task" --submission v0 --mode test
done
